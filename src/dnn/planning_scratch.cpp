// The seeded scratch that planning's searches and trials run on when the caller gives no
// buffers.
#include "convolution_selection.hpp"
#include "translate.hpp"

#include <gpu/detail/expects.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace gpu::dnn {

namespace detail {

namespace {

// The planning scratch's values repeat with this period (in elements): enough that no cache
// line or tile sees a constant, small enough to generate on the host in microseconds.
constexpr std::size_t scratch_pattern_elements = std::size_t{1} << 16;

} // namespace

std::vector<std::byte> seeded_scratch_values(data_type type, std::size_t elements,
                                             std::uint32_t seed)
{
    const std::size_t size = element_size(type);
    if (elements > std::numeric_limits<std::size_t>::max() / size) {
        throw std::invalid_argument("gpu::dnn::detail::seeded_scratch_values: " +
                                    std::to_string(elements) + " elements overflow a byte count");
    }
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> magnitude(0.25F, 1.0F);
    std::bernoulli_distribution negative(0.5);
    std::vector<std::byte> bytes(elements * size);
    for (std::size_t i = 0; i < elements; ++i) {
        const float value = negative(engine) ? -magnitude(engine) : magnitude(engine);
        std::byte* out = bytes.data() + i * size;
        if (type == data_type::fp16) {
            const __half half = __float2half(value);
            std::memcpy(out, &half, size);
        } else if (type == data_type::bf16) {
            const __nv_bfloat16 bf16 = __float2bfloat16(value);
            std::memcpy(out, &bf16, size);
        } else {
            std::memcpy(out, &value, size);
        }
    }
    return bytes;
}

// One block from the host, then device-to-device copies that double the filled prefix: a tensor
// of gigabytes takes about 15 copies, not gigabytes of host values.
void fill_seeded_scratch(void* data, std::size_t elements, data_type type, std::uint32_t seed,
                         stream_ref stream)
{
    if (elements == 0) {
        return;
    }
    if (data == nullptr ||
        elements > std::numeric_limits<std::size_t>::max() / element_size(type)) {
        throw std::invalid_argument(
            "gpu::dnn::detail::fill_seeded_scratch: " + std::to_string(elements) + " elements at " +
            (data == nullptr ? "a null address" : "an address") +
            (data == nullptr ? "" : " (the byte count overflows)"));
    }
    const std::vector<std::byte> block =
        seeded_scratch_values(type, std::min(elements, scratch_pattern_elements), seed);
    auto* bytes = static_cast<std::byte*>(data);
    GPU_CUDA_CHECK(
        cudaMemcpyAsync(bytes, block.data(), block.size(), cudaMemcpyHostToDevice, stream.get()));
    const std::size_t total = elements * element_size(type);
    for (std::size_t filled = block.size(); filled < total;) {
        const std::size_t count = std::min(filled, total - filled);
        GPU_CUDA_CHECK(
            cudaMemcpyAsync(bytes + filled, bytes, count, cudaMemcpyDeviceToDevice, stream.get()));
        filled += count;
    }
    // A copy from pageable memory returns once the bytes are staged, so freeing `block` is safe
    // already; the wait is for the callers, which run cuDNN on this scratch right after and
    // report a failed fill here rather than as a failed trial.
    stream.synchronize();
}

} // namespace detail

} // namespace gpu::dnn
