// cuBLAS versions, readable without a GPU.
#include <gpu/blas/version.hpp>

#include <cublas_v2.h>

namespace gpu::blas {

version_info version() noexcept
{
    version_info info;
    info.compiled = {CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH};
    int major = 0;
    int minor = 0;
    int patch = 0;
    if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
        cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS) {
        info.loaded = {major, minor, patch};
    }
    return info;
}

} // namespace gpu::blas
