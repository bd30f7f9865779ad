/// @file diagnose.hpp
/// @brief The environment diagnosis behind `cudagap-doctor`: a structured report of checks
/// (driver, runtime, GPUs, kernel images, toolkit, library copies, other platforms), each with
/// what was found and the exact fix.
///
/// The core checks what the CUDA runtime and the system can tell; the wings add their own
/// checks (`gpu::blas::diagnostics`, `gpu::dnn::diagnostics`) without the core knowing them:
///
/// @code
/// const gpu::diagnosis report =
///     gpu::diagnose({.sources = {gpu::blas::diagnostics, gpu::dnn::diagnostics}});
/// for (const std::string& line : report.describe()) {
///     std::puts(line.c_str());
/// }
/// return report.exit_code();
/// @endcode
#pragma once

#include <gpu/error.hpp>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu {

/// @brief The outcome of one check, from best to worst; `skipped` and `info` are neither.
enum class diagnostic_status {
    ok,      ///< works as it should
    info,    ///< a fact worth knowing, not a problem (e.g. ROCm is also installed)
    skipped, ///< could not be checked (the reason says why, e.g. no GPU to look at)
    warning, ///< works, but something is likely to bite (duplicate libraries, JIT start-up)
    error,   ///< broken: programs will fail until the fix is applied
};

/// @brief `ok`, `info`, `skipped`, `warning` or `error`.
[[nodiscard]] std::string_view to_string(diagnostic_status status) noexcept;

/// @brief One check of a diagnosis.
struct diagnostic {
    std::string name{}; ///< what was checked, e.g. `NVIDIA driver`, `cuDNN handle`
    diagnostic_status status = diagnostic_status::skipped; ///< the outcome
    std::string detail{}; ///< what was found, with the numbers and paths involved
    std::string fix{};    ///< the exact action that resolves it; empty when nothing is to be done
    /// The name of the check whose failure explains this one (e.g. a handle that cannot be
    /// created because no driver is loaded), so that the report leads with the root cause.
    std::string caused_by{};

    /// @brief Checks compare equal field by field.
    friend bool operator==(const diagnostic&, const diagnostic&) = default;
};

/// @brief Marks @p check as failed by @p failure, a library call that threw: the detail is the
/// error's `<api>: <status name> (<code>): <message>`, the fix its hint, and when no GPU is
/// usable the root cause is the core's `GPUs` check. What the wings' handle checks share.
void record_failure(diagnostic& check, const error& failure);

/// @brief The report of `gpu::diagnose()`: the checks in the order they ran.
struct diagnosis {
    std::vector<diagnostic> checks{}; ///< every check, core ones first, then the wings', then platforms

    /// @brief The first check called @p name, or null.
    [[nodiscard]] const diagnostic* find(std::string_view name) const noexcept;

    /// @brief How many checks ended with @p status.
    [[nodiscard]] std::size_t count(diagnostic_status status) const noexcept;

    /// @brief The worst status of any check (`ok` for an empty report).
    [[nodiscard]] diagnostic_status worst() const noexcept;

    /// @brief No check ended in `error` (and, when @p strict, none in `warning`).
    [[nodiscard]] bool healthy(bool strict = false) const noexcept;

    /// @brief The process exit code for the report: 0 when `healthy(strict)`, 1 otherwise.
    [[nodiscard]] int exit_code(bool strict = false) const noexcept { return healthy(strict) ? 0 : 1; }

    /// @brief The fixes to apply, most severe first, root causes only (a check whose
    /// `caused_by` names another failed check is left out), each fix once.
    [[nodiscard]] std::vector<std::string> recommendations() const;

    /// @brief The report as text lines: one `[ OK ]`, `[INFO]`, `[SKIP]`, `[WARN]` or `[FAIL]`
    /// line per check with its detail (and fix, indented), then the numbered recommendations.
    /// A status outside the enumeration (cast from a number) reads `[ ?? ]`.
    [[nodiscard]] std::vector<std::string> describe() const;
};

/// @brief Something that contributes checks to a diagnosis, such as `gpu::blas::diagnostics`.
using diagnostic_source = std::function<std::vector<diagnostic>()>;

/// @brief What `diagnose` looks at.
struct diagnose_options {
    /// Checks added after the core's CUDA checks and before the other platforms; the cuBLAS
    /// and cuDNN wings each offer one (the core cannot include them).
    std::vector<diagnostic_source> sources{};
    /// Where to look for `nvidia-smi`, `nvcc`, `rocm-smi` and `sycl-ls`, as a PATH-style list;
    /// empty means the `PATH` of this process.
    std::optional<std::string> search_path{};
    /// How long a tool may run before it is killed and reported as hanging (a wedged driver
    /// can make `nvidia-smi` block).
    std::chrono::milliseconds tool_timeout{15000};
};

/// @brief Diagnoses this machine's CUDA environment, as the article's
/// `cuda_gap_diagnosis.py` does, but with a status, detail and fix per check:
///
/// - `nvidia-smi`: on the search path, and what its GPU, driver and memory query returns;
/// - `NVIDIA driver`: the CUDA version it supports against the runtime's, the kernel module;
/// - `CUDA runtime`: the loaded version against the compiled one, and where it was loaded from;
/// - `GPUs`: what CUDA sees (and `CUDA_VISIBLE_DEVICES`), compared with nvidia-smi's list;
/// - `kernel images`: each GPU's compute capability against the architectures this library was
///   built for, which predicts "no kernel image is available" before any launch;
/// - `nvcc`: on the search path (or only in a toolkit folder), its release against the runtime;
/// - the checks of @p options `.sources` (cuBLAS, cuDNN);
/// - `ROCm` and `Intel oneAPI`: present or not, as information.
///
/// Never throws for a broken environment (that is what it reports); needs no GPU.
[[nodiscard]] diagnosis diagnose(const diagnose_options& options = {});

/// @brief One file of a shared library found on the loader's search path.
struct library_copy {
    std::string path{};        ///< where it was found, e.g. `/usr/local/cuda/lib64/libcudnn.so.9`
    std::string resolved_path{}; ///< the file it is after following links
    std::string soname_version{};///< the version in the file name after `.so.`, e.g. `9` or `9.1.0`
    bool loaded = false;       ///< this process has this file loaded

    /// @brief Copies compare equal field by field.
    friend bool operator==(const library_copy&, const library_copy&) = default;
};

/// @brief The distinct files of the shared library @p library (e.g. `libcudnn`, matching
/// `libcudnn.so` and `libcudnn.so.<version>`, not `libcudnn_ops.so`) on the dynamic loader's
/// search path: `LD_LIBRARY_PATH`, the folders of `/etc/ld.so.conf`, the system library
/// folders, the folders named by `CUDA_HOME`, `CUDA_PATH` and `CUDNN_ROOT`, and the folder of
/// the copy this process has loaded. Links to the same file count once.
[[nodiscard]] std::vector<library_copy> find_library_copies(std::string_view library);

/// @brief The file this process has loaded for @p library (e.g. `libcublas`), if any.
[[nodiscard]] std::optional<std::string> loaded_library_path(std::string_view library);

/// @brief A ready-made check that @p libraries (e.g. `{"libcudnn"}`) have one copy each per
/// major version on the search path: `warning` listing the copies and the one loaded when there
/// are more, with a fix that names @p root_variable (e.g. `CUDNN_ROOT`); `ok` otherwise.
/// What the wings use for "more than one cuDNN or cuBLAS visible".
/// @param name the check's name, e.g. `cuDNN copies on the library path`
/// @param libraries the library base names to look for
/// @param root_variable the variable that selects the copy to build against; may be empty
[[nodiscard]] diagnostic check_library_copies(std::string name,
                                              const std::vector<std::string>& libraries,
                                              std::string_view root_variable);

} // namespace gpu
