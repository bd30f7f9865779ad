/// @file version.hpp
/// @brief The cuDNN version cudagap was compiled against, the one loaded at run time, and the
/// CUDA runtime that the loaded cuDNN was built for.
#pragma once

#include <gpu/version.hpp>

namespace gpu::dnn {

/// @brief cuDNN versions: compiled against (headers) and loaded (shared library).
struct version_info {
    semantic_version compiled{};    ///< from `CUDNN_MAJOR` and friends
    semantic_version loaded{};      ///< from `cudnnGetVersion()`
    cuda_version loaded_for_cuda{}; ///< the CUDA runtime the loaded cuDNN was built with

    /// @brief Whether the loaded cuDNN can serve code compiled against these headers:
    /// the same major version, and a minor version no older than the headers'.
    [[nodiscard]] bool compatible() const noexcept
    {
        return loaded.major == compiled.major && loaded.minor >= compiled.minor;
    }
};

/// @brief Reads the cuDNN versions. Works without a GPU or driver; never throws.
[[nodiscard]] version_info version() noexcept;

} // namespace gpu::dnn
