// The diagnosis's NCCL checks, compiled when the nccl wrapper is built: NCCL's versions (the one
// loaded, from where, and the one cudagap was compiled against), its copies on the library path,
// and the GPUs' peer access, which NCCL's fastest transport between GPUs of one host needs.
#include "checks.hpp"

#include <gpu/device.hpp>
#include <gpu/nccl/version.hpp>
#include <gpu/tools/library_copies.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace gpu::tools::detail {

namespace {

diagnostic check_nccl_versions()
{
    const nccl::version_info info = nccl::version();
    auto [check, folder] =
        begin_version_check("NCCL", "libnccl", info.loaded.to_string(), "<its folder>");
    check.detail += ", cudagap compiled against " + info.compiled.to_string() +
                    " (NCCL_VERSION_CODE " + std::to_string(NCCL_VERSION_CODE) + ")";
    if (!info.compatible()) {
        refuse_incompatible(check, "NCCL", info.compiled.to_string(),
                            "load NCCL " + std::to_string(info.compiled.major) + "." +
                                std::to_string(info.compiled.minor) +
                                " or newer (put its lib folder first on LD_LIBRARY_PATH), or "
                                "rebuild cudagap against the loaded one with -DNCCL_ROOT=" +
                                folder + "/..");
        return check;
    }
    check.status = diagnostic_status::ok;
    check.detail += "; every rank of a job must load the same release";
    return check;
}

// Whether @p from reaches @p to directly; a query that fails counts as no (the doctor reports,
// it does not throw).
bool reaches(device from, device to) noexcept
{
    try {
        return from.can_access_peer(to);
    } catch (const gpu::error&) {
        return false;
    }
}

// Row i: whether GPU i can read and write GPU j's memory directly (device::can_access_peer,
// the function programs call before device::enable_peer_access).
std::string peer_matrix(int count, int& missing)
{
    std::string text = "peer access (row reaches column):";
    missing = 0;
    for (int i = 0; i < count; ++i) {
        text += ' ';
        text += std::to_string(i);
        text += ':';
        for (int j = 0; j < count; ++j) {
            const bool can = i != j && reaches(gpu::detail::device_from_cuda(i),
                                               gpu::detail::device_from_cuda(j));
            missing += (i != j && !can) ? 1 : 0;
            text += i == j ? "-" : (can ? "Y" : "N");
        }
    }
    return text;
}

diagnostic check_peer_access()
{
    diagnostic check;
    check.name = "GPU peer access";
    const int count = gpu::device_count();
    if (count == 0) {
        check.status = diagnostic_status::skipped;
        check.detail = "no usable GPU";
        check.caused_by = gpus_check;
        return check;
    }
    if (count == 1) {
        check.status = diagnostic_status::info;
        check.detail = "one GPU: no peer to reach (a one-rank NCCL communicator still works; more "
                       "GPUs connect through NVLink or PCIe peer access)";
        return check;
    }
    int missing = 0;
    check.detail = peer_matrix(count, missing);
    // Information either way: many PCIe machines have no peer access by design, and NCCL then
    // goes through host memory, slower but correct.
    check.status = diagnostic_status::info;
    check.detail += "; ";
    if (missing == 0) {
        check.detail += "every pair of the " + std::to_string(count) + " GPUs has peer access";
    } else {
        check.detail +=
            std::to_string(missing) +
            " ordered pairs have none: NCCL moves their data through host memory, with "
            "less bandwidth (`nvidia-smi topo -m` shows the links; in a VM or container, "
            "peer access may be disabled)";
    }
    return check;
}

} // namespace

std::vector<diagnostic> nccl_checks()
{
    return {check_nccl_versions(),
            check_library_copies("NCCL copies on the library path", {"libnccl"}, "NCCL_ROOT"),
            check_peer_access()};
}

} // namespace gpu::tools::detail
