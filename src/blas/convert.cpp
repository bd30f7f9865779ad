// Element-type conversion on the device: argument checks, then the kernel in convert.cu.
#include <gpu/blas/convert.hpp>

#include "kernels.hpp"

#include <stdexcept>
#include <string>

namespace gpu::blas::detail {

void convert(element_type from_type, const void* from, element_type to_type, void* to,
             std::size_t count, double scale, double shift, stream_ref stream)
{
    if (count == 0) {
        return;
    }
    if (from == nullptr || to == nullptr) {
        throw std::invalid_argument("gpu::blas::convert: " + std::string(to_string(from_type)) +
                                    " to " + std::string(to_string(to_type)) + " of " +
                                    std::to_string(count) + " elements with a null " +
                                    (from == nullptr ? "source" : "target"));
    }
    GPU_CUDA_CHECK(kernels::convert(static_cast<int>(from_type), from, static_cast<int>(to_type),
                                    to, static_cast<long long>(count), scale, shift, stream.get()));
}

} // namespace gpu::blas::detail
