// NaN/Inf scans by bit pattern, on host bytes or on device memory copied over in chunks. Bit
// patterns rather than std::isfinite on converted values: FP16 and BF16 need no conversion
// library, and a signalling NaN is found as reliably as a quiet one.
#include "translate.hpp"

#include <gpu/dnn/numerics.hpp>
#include <gpu/error.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

namespace gpu::dnn {

namespace {

// Exponent and mantissa masks: all exponent bits set means Inf (mantissa 0) or NaN.
struct bit_layout {
    std::uint32_t exponent;
    std::uint32_t mantissa;
};

constexpr bit_layout layout_of(data_type type) noexcept
{
    switch (type) {
    case data_type::fp16: return {0x7C00U, 0x03FFU};
    case data_type::bf16: return {0x7F80U, 0x007FU};
    case data_type::fp32: break;
    }
    return {0x7F800000U, 0x007FFFFFU};
}

void scan(const std::byte* bytes, std::size_t count, data_type type, std::size_t offset,
          gpu::non_finite_report& report)
{
    const bit_layout bits = layout_of(type);
    const std::size_t size = element_size(type);
    for (std::size_t i = 0; i < count; ++i) {
        std::uint32_t value = 0;
        if (size == 4) {
            std::memcpy(&value, bytes + i * 4, 4);
        } else {
            std::uint16_t half = 0;
            std::memcpy(&half, bytes + i * 2, 2);
            value = half;
        }
        if ((value & bits.exponent) != bits.exponent) {
            continue;
        }
        if ((value & bits.mantissa) != 0) {
            ++report.nan_count;
        } else {
            ++report.inf_count;
        }
        if (!report.first_index) {
            report.first_index = offset + i;
        }
    }
    report.elements += count;
}

// count * element size for a message, exact even when it does not fit size_t.
std::string byte_count(std::size_t count, data_type type)
{
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(count, element_size(type), &bytes)) {
        return std::to_string(count) + " x " + std::to_string(element_size(type));
    }
    return std::to_string(bytes);
}

} // namespace

gpu::non_finite_report find_non_finite_on_host(std::span<const std::byte> host, std::size_t count,
                                               data_type type)
{
    detail::require_named("gpu::dnn::find_non_finite_on_host", "data_type", type);
    // Compared by division: count * size could wrap around and pass a short span.
    if (count > host.size() / element_size(type)) {
        throw std::invalid_argument("gpu::dnn::find_non_finite_on_host: " + std::to_string(count) +
                                    " " + std::string(to_string(type)) + " elements need " +
                                    byte_count(count, type) + " bytes, the span has " +
                                    std::to_string(host.size()));
    }
    gpu::non_finite_report report;
    scan(host.data(), count, type, 0, report);
    return report;
}

gpu::non_finite_report find_non_finite(const void* device_data, std::size_t count, data_type type,
                                       stream_ref stream)
{
    if (device_data == nullptr && count != 0) {
        throw std::invalid_argument("gpu::dnn::find_non_finite: null device pointer for " +
                                    std::to_string(count) + " elements");
    }
    detail::require_named("gpu::dnn::find_non_finite", "data_type", type);
    if (count > std::numeric_limits<std::size_t>::max() / element_size(type)) {
        throw std::invalid_argument("gpu::dnn::find_non_finite: " + std::to_string(count) + " " +
                                    std::string(to_string(type)) + " elements need " +
                                    byte_count(count, type) +
                                    " bytes, more than the address space holds");
    }
    // 4 MiB chunks: enough to keep the copies efficient, small enough not to double the memory
    // of a program that checks a large activation.
    constexpr std::size_t chunk_bytes = std::size_t{4} << 20;
    const std::size_t size = element_size(type);
    const std::size_t chunk_elements = chunk_bytes / size;
    std::vector<std::byte> host(std::min(count, chunk_elements) * size);
    gpu::non_finite_report report;
    const auto* source = static_cast<const std::byte*>(device_data);
    for (std::size_t done = 0; done < count;) {
        const std::size_t n = std::min(chunk_elements, count - done);
        GPU_CUDA_CHECK(cudaMemcpyAsync(host.data(), source + done * size, n * size,
                                       cudaMemcpyDeviceToHost, stream.get()));
        stream.synchronize();
        scan(host.data(), n, type, done, report);
        done += n;
    }
    return report;
}

} // namespace gpu::dnn
