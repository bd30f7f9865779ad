// Private to cudagap_tools: the groups of checks gpu::tools::diagnose runs, in the order it runs
// them, and what they share. Not installed; the tools' tests include it.
#pragma once

#include <gpu/error.hpp>
#include <gpu/tools/diagnose.hpp>

#include <chrono>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::tools::detail {

/// The name of the check that every "no usable GPU" failure follows from.
inline constexpr const char* gpus_check = "GPUs";

/// The value of the environment variable @p name, or empty when it is not set.
[[nodiscard]] std::string environment(const char* name);

/// `nvidia-smi`, `NVIDIA driver`, `CUDA runtime`, `GPUs`, `kernel images` and `nvcc`
/// (cuda_checks.cpp), looking for the tools in @p search_path and killing one after @p timeout.
[[nodiscard]] std::vector<diagnostic> cuda_checks(const std::string& search_path,
                                                  std::chrono::milliseconds timeout);

/// `ROCm` and `Intel oneAPI`, as information (cuda_checks.cpp).
[[nodiscard]] std::vector<diagnostic> platform_checks(const std::string& search_path);

/// `cuBLAS`, `cuBLAS handle`, `cuBLAS copies on the library path` (blas_checks.cpp, compiled
/// only when the blas wrapper is built).
[[nodiscard]] std::vector<diagnostic> blas_checks();

/// `cuDNN`, `cuDNN handle`, `cuDNN copies on the library path` (dnn_checks.cpp, compiled only
/// when the dnn wrapper is built).
[[nodiscard]] std::vector<diagnostic> dnn_checks();

/// `NCCL`, `NCCL copies on the library path`, `GPU peer access` (nccl_checks.cpp, compiled
/// only when the nccl wrapper is built).
[[nodiscard]] std::vector<diagnostic> nccl_checks();

/// A library's version check as the three wrappers' checks begin it: the check @p name, its
/// detail "<name> <loaded> loaded[ from <path>]" where @p library (a file name's start, e.g.
/// `libcublas`) is mapped into this process, and the folder of that copy for the fixes, or
/// @p unknown_folder when it is not mapped.
struct version_check {
    diagnostic check;   ///< named, with the detail begun; the status is the caller's
    std::string folder; ///< the loaded copy's folder, or the caller's words for it
};

/// Begins a `version_check` (see there).
[[nodiscard]] version_check begin_version_check(std::string name, std::string_view library,
                                                const std::string& loaded,
                                                std::string_view unknown_folder);

/// Marks @p check as failed because the loaded @p name cannot serve code compiled against
/// @p compiled, with @p fix as what to do: the words all three version checks use.
void refuse_incompatible(diagnostic& check, std::string_view name, const std::string& compiled,
                         std::string fix);

/// Marks @p check as failed by @p failure, a library call that threw: the detail is the error's
/// `<api>: <status name> (<code>): <message>`, the fix its hint, and when no GPU is usable the
/// root cause is the `GPUs` check. What the wrappers' handle checks share.
void record_failure(diagnostic& check, const error& failure);

/// The check @p name of a library's handle: runs @p create, which makes a handle on the current
/// device and returns what to say of it; `ok` with "<api> works on GPU <id> (<name>)<what it
/// said>", or the library's error through `record_failure`. What the wrappers' handle checks share.
[[nodiscard]] diagnostic check_handle(std::string name, const std::string& api,
                                      const std::function<std::string()>& create);

/// The checks of @p group; when it throws, one failed check called @p name that quotes the
/// exception, so that a diagnosis never ends without its report.
[[nodiscard]] std::vector<diagnostic>
run_checks(const std::string& name, const std::function<std::vector<diagnostic>()>& group);

} // namespace gpu::tools::detail
