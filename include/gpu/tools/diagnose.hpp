/// @file diagnose.hpp
/// @brief The environment diagnosis behind `cudagap-doctor`: a structured report of checks
/// (driver, runtime, GPUs, kernel images, toolkit, cuBLAS, cuDNN, library copies, other
/// platforms), each with what was found and the exact fix. Part of the tools component
/// (`cudagap::tools`, namespace `gpu::tools`), which sits above the library wrappers and runs the
/// checks of every wrapper this cudagap was built with:
///
/// @code
/// const gpu::tools::diagnosis report = gpu::tools::diagnose();
/// for (const std::string& line : report.describe()) {
///     std::puts(line.c_str());
/// }
/// return report.exit_code();
/// @endcode
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::tools {

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

/// @brief The report of `gpu::tools::diagnose()`: the checks in the order they ran.
struct diagnosis {
    std::vector<diagnostic>
        checks{}; ///< every check: CUDA's first, then the wrappers', then other platforms

    /// @brief The first check called @p name, or null.
    [[nodiscard]] const diagnostic* find(std::string_view name) const noexcept;

    /// @brief How many checks ended with @p status.
    [[nodiscard]] std::size_t count(diagnostic_status status) const noexcept;

    /// @brief The worst status of any check (`ok` for an empty report).
    [[nodiscard]] diagnostic_status worst() const noexcept;

    /// @brief No check ended in `error` (and, when @p strict, none in `warning`).
    [[nodiscard]] bool healthy(bool strict = false) const noexcept;

    /// @brief The process exit code for the report: 0 when `healthy(strict)`, 1 otherwise.
    [[nodiscard]] int exit_code(bool strict = false) const noexcept
    {
        return healthy(strict) ? 0 : 1;
    }

    /// @brief The fixes to apply, most severe first, root causes only (a check whose
    /// `caused_by` names another failed check is left out), each fix once.
    [[nodiscard]] std::vector<std::string> recommendations() const;

    /// @brief The report as text lines: one `[ OK ]`, `[INFO]`, `[SKIP]`, `[WARN]` or `[FAIL]`
    /// line per check with its detail (and fix, indented), then the numbered recommendations.
    /// A status outside the enumeration (cast from a number) reads `[ ?? ]`.
    [[nodiscard]] std::vector<std::string> describe() const;
};

/// @brief What `diagnose` looks at.
struct diagnose_options {
    /// Where to look for `nvidia-smi`, `nvcc`, `rocm-smi` and `sycl-ls`, as a PATH-style list;
    /// empty means the `PATH` of this process.
    std::optional<std::string> search_path{};
    /// How long a tool may run before it is killed and reported as hanging (a wedged driver
    /// can make `nvidia-smi` block).
    std::chrono::milliseconds tool_timeout{15000};
};

/// @brief Diagnoses this machine's CUDA environment, with a status, detail and fix per check
/// (docs/doctor.md):
///
/// - `nvidia-smi`: on the search path, and what its GPU, driver and memory query returns;
/// - `NVIDIA driver`: the CUDA version it supports against the runtime's, the kernel module;
/// - `CUDA runtime`: the loaded version against the compiled one, and where it was loaded from;
/// - `GPUs`: what CUDA sees (and `CUDA_VISIBLE_DEVICES`), compared with nvidia-smi's list;
/// - `kernel images`: each GPU's compute capability against the architectures this library was
///   built for, which predicts "no kernel image is available" before any launch;
/// - `nvcc`: on the search path (or only in a toolkit folder), its release against the runtime;
/// - `cuBLAS`, `cuBLAS handle`, `cuBLAS copies on the library path`: the versions compiled
///   against and loaded (cuBLAS with the cuBLASLt of the same release), a handle created on
///   the current device (its error and hint when that fails, following from `GPUs` without a
///   usable GPU), and more than one copy of a major version on the library path;
/// - `cuDNN`, `cuDNN handle`, `cuDNN copies on the library path`: the same for cuDNN, with the
///   CUDA version the loaded cuDNN was built for against the runtime;
/// - for a wrapper this cudagap was built without, one `skipped` check (`cuBLAS` or `cuDNN`)
///   that says how to get it;
/// - `ROCm` and `Intel oneAPI`: present or not, as information.
///
/// Never throws for a broken environment (that is what it reports); needs no GPU.
[[nodiscard]] diagnosis diagnose(const diagnose_options& options = {});

} // namespace gpu::tools

// The names of the diagnosis before it moved into gpu::tools, kept for one release, deprecated so
// that a build says which name to write instead. They are to be removed in the release after.
namespace gpu {

/// @deprecated use `gpu::tools::diagnostic_status`
using diagnostic_status [[deprecated("use gpu::tools::diagnostic_status")]] =
    tools::diagnostic_status;

/// @deprecated use `gpu::tools::diagnostic`
using diagnostic [[deprecated("use gpu::tools::diagnostic")]] = tools::diagnostic;

/// @deprecated use `gpu::tools::diagnosis`
using diagnosis [[deprecated("use gpu::tools::diagnosis")]] = tools::diagnosis;

/// @deprecated use `gpu::tools::diagnose_options`
using diagnose_options [[deprecated("use gpu::tools::diagnose_options")]] = tools::diagnose_options;

// Using-declarations, not deprecated wrappers: both take gpu::tools types, so a wrapper here and
// the function that argument-dependent lookup finds in gpu::tools would make every unqualified
// call from gpu (or under `using namespace gpu`) ambiguous.
using tools::diagnose;
using tools::to_string;

} // namespace gpu
