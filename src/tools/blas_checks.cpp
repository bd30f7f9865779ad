// The diagnosis's cuBLAS checks, compiled when the blas wrapper is built: versions (cuBLAS and the
// cuBLASLt it needs), handle creation with the real error, duplicate copies on the library path.
#include "checks.hpp"

#include <gpu/blas/handle.hpp>
#include <gpu/blas/version.hpp>
#include <gpu/device.hpp>
#include <gpu/tools/library_copies.hpp>

#include <cublasLt.h>

#include <string>

namespace gpu::tools::detail {

namespace {

diagnostic check_blas_versions()
{
    const blas::version_info info = blas::version();
    auto [check, folder] =
        begin_version_check("cuBLAS", "libcublas", info.loaded.to_string(), "the toolkit's lib64");
    // cuBLASLt encodes its version as major * 10000 + minor * 100 + patch.
    const auto lt = static_cast<int>(cublasLtGetVersion());
    const semantic_version lt_version{lt / 10000, (lt % 10000) / 100, lt % 100};
    check.detail += " with cuBLASLt " + lt_version.to_string() + ", cudagap compiled against " +
                    info.compiled.to_string();
    if (!info.compatible()) {
        refuse_incompatible(check, "cuBLAS", info.compiled.to_string(),
                            "load the cuBLAS of CUDA " + std::to_string(info.compiled.major) +
                                " (put the toolkit's lib64 first on LD_LIBRARY_PATH), or rebuild "
                                "cudagap with -DCUDAToolkit_ROOT set to the toolkit that holds " +
                                folder);
        return check;
    }
    if (lt_version.major != info.loaded.major || lt_version.minor != info.loaded.minor) {
        check.status = diagnostic_status::error;
        check.detail += ": cuBLAS and cuBLASLt come from different releases";
        check.fix = "load libcublas and libcublasLt from the same folder (" + folder +
                    "): remove the other copy of libcublasLt from LD_LIBRARY_PATH";
        return check;
    }
    check.status = diagnostic_status::ok;
    return check;
}

// The handle's math mode and workspace, as a freshly created handle reports them.
std::string describe_new_handle()
{
    const blas::handle created(legacy_default_stream); // creates and frees; nothing else runs
    return ", math mode " + std::string(to_string(created.math())) + ", workspace " +
           format_bytes(created.workspace_size().value_or(0));
}

} // namespace

std::vector<diagnostic> blas_checks()
{
    return {check_blas_versions(),
            check_handle("cuBLAS handle", "cublasCreate", describe_new_handle),
            check_library_copies("cuBLAS copies on the library path", {"libcublas", "libcublasLt"},
                                 "CUDAToolkit_ROOT")};
}

} // namespace gpu::tools::detail
