// cuDNN versions, readable without a GPU.
#include <gpu/dnn/version.hpp>

#include <cudnn.h>

namespace gpu::dnn {

version_info version() noexcept
{
    version_info info;
    info.compiled = {CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL};
    // cuDNN 9 encodes its version as major * 10000 + minor * 100 + patch.
    const auto loaded = static_cast<int>(cudnnGetVersion());
    info.loaded = {loaded / 10000, (loaded % 10000) / 100, loaded % 100};
    info.loaded_for_cuda = cuda_version::from_int(static_cast<int>(cudnnGetCudartVersion()));
    return info;
}

} // namespace gpu::dnn
