/// @file diagnostics.hpp
/// @brief The cuBLAS wing's checks for `gpu::diagnose` (cudagap-doctor): versions compiled
/// against and loaded (cuBLAS and cuBLASLt), handle creation with the real error and hint, and
/// duplicate copies of cuBLAS on the library path.
///
/// @code
/// const gpu::diagnosis report = gpu::diagnose({.sources = {gpu::blas::diagnostics}});
/// @endcode
#pragma once

#include <gpu/diagnose.hpp>

#include <vector>

namespace gpu::blas {

/// @brief The cuBLAS checks, in this order:
///
/// - `cuBLAS`: the version compiled against and the one loaded (and from where), and the
///   loaded cuBLASLt, which must be the same release; an error with the fix when not;
/// - `cuBLAS handle`: creates a `gpu::blas::handle` on the current device and reports the
///   `gpu::blas::blas_error` (status and hint) when that fails; without a usable GPU the failure
///   follows from the core's `GPUs` check;
/// - `cuBLAS copies on the library path`: more than one `libcublas.so.<major>` or
///   `libcublasLt.so.<major>` visible, the usual cause of version mismatches.
///
/// Never throws: a failure is a check's result. Pass it to `gpu::diagnose` as a source.
[[nodiscard]] std::vector<diagnostic> diagnostics();

} // namespace gpu::blas
