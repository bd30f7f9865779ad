/// @file version.hpp
/// @brief The cuBLAS version cudagap was compiled against and the one loaded at run time.
#pragma once

#include <gpu/version.hpp>

namespace gpu::blas {

/// @brief cuBLAS versions: compiled against (headers) and loaded (shared library).
struct version_info {
    semantic_version compiled{}; ///< from `CUBLAS_VER_MAJOR` and friends
    semantic_version loaded{};   ///< from `cublasGetProperty`, 0.0.0 when it cannot be read

    /// @brief Whether the loaded library can serve code compiled against these headers:
    /// the same major version, and a minor version no older than the headers'.
    [[nodiscard]] bool compatible() const noexcept
    {
        return loaded.major == compiled.major && loaded.minor >= compiled.minor;
    }
};

/// @brief Reads the cuBLAS versions. Works without a GPU or driver; never throws.
[[nodiscard]] version_info version() noexcept;

} // namespace gpu::blas
