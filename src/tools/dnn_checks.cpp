// The diagnosis's cuDNN checks, compiled when the dnn wrapper is built: a handle that cannot be
// made (CUDNN_STATUS_NOT_INITIALIZED), and whether the CUDA and cuDNN versions match, with this
// machine's facts.
#include "checks.hpp"

#include <gpu/device.hpp>
#include <gpu/tools/library_copies.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/version.hpp>

#include <string>

namespace gpu::tools::detail {

namespace {

diagnostic check_dnn_versions()
{
    const dnn::version_info info = dnn::version();
    const cuda_version runtime = runtime_version();
    auto [check, folder] =
        begin_version_check("cuDNN", "libcudnn", info.loaded.to_string(), "<its folder>");
    check.detail += " (built for CUDA " + info.loaded_for_cuda.to_string() +
                    "), cudagap compiled against " + info.compiled.to_string() + ", CUDA runtime " +
                    runtime.to_string();
    if (!info.compatible()) {
        refuse_incompatible(check, "cuDNN", info.compiled.to_string(),
                            "load cuDNN " + std::to_string(info.compiled.major) + "." +
                                std::to_string(info.compiled.minor) +
                                " or newer of the same major version (put its lib folder first "
                                "on LD_LIBRARY_PATH), or rebuild cudagap against the loaded one "
                                "with -DCUDNN_ROOT=" +
                                folder + "/..");
        return check;
    }
    if (runtime.known() && info.loaded_for_cuda.known() &&
        info.loaded_for_cuda.major != runtime.major) {
        check.status = diagnostic_status::error;
        check.detail += ": this cuDNN was built for another CUDA major version";
        check.fix = "install the cuDNN build for CUDA " + std::to_string(runtime.major) +
                    " (pip install nvidia-cudnn-cu" + std::to_string(runtime.major) +
                    ", or NVIDIA's cudnn9-cuda-" + std::to_string(runtime.major) +
                    " package) and set CUDNN_ROOT to it";
        return check;
    }
    check.status = diagnostic_status::ok;
    return check;
}

// cudnnCreate, and nothing more to say of the handle.
std::string create_dnn_handle()
{
    const dnn::handle created(legacy_default_stream); // creates and frees; nothing else runs
    return {};
}

} // namespace

std::vector<diagnostic> dnn_checks()
{
    return {check_dnn_versions(), check_handle("cuDNN handle", "cudnnCreate", create_dnn_handle),
            check_library_copies("cuDNN copies on the library path", {"libcudnn"}, "CUDNN_ROOT")};
}

} // namespace gpu::tools::detail
