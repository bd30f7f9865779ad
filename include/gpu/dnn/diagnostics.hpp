/// @file diagnostics.hpp
/// @brief The cuDNN wing's checks for `gpu::diagnose` (cudagap-doctor): versions compiled
/// against and loaded, handle creation with the real error and hint, and duplicate copies of
/// cuDNN on the library path.
///
/// @code
/// const gpu::diagnosis report = gpu::diagnose({.sources = {gpu::dnn::diagnostics}});
/// @endcode
#pragma once

#include <gpu/diagnose.hpp>

#include <vector>

namespace gpu::dnn {

/// @brief The cuDNN checks, in this order:
///
/// - `cuDNN`: the version compiled against and the one loaded (and from where), and the CUDA
///   version the loaded cuDNN was built for against the runtime; an error with the exact fix
///   (`CUDNN_ROOT`, `LD_LIBRARY_PATH`) when they cannot work together;
/// - `cuDNN handle`: creates a `gpu::dnn::handle` on the current device and reports the
///   `gpu::dnn::dnn_error` (`CUDNN_STATUS_NOT_INITIALIZED` and its hint) when that fails; without a
///   usable GPU the failure follows from the core's `GPUs` check;
/// - `cuDNN copies on the library path`: more than one `libcudnn.so.<major>` visible is the
///   usual cause of version mismatches.
///
/// Never throws: a failure is a check's result. Pass it to `gpu::diagnose` as a source.
[[nodiscard]] std::vector<diagnostic> diagnostics();

} // namespace gpu::dnn
