// How a NaN or an Inf looks in each element format, for the host scan (numerics.cpp) and the
// kernel (numerics.cu) alike, so that both count by exactly the same rule. Plain C++ with no
// cudagap header, so that nvcc compiles it in its default dialect.
//
// By bit pattern rather than isnan/isinf on a converted value: FP16 and BF16 need no
// conversion, and a signalling NaN is found as reliably as a quiet one.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define GPU_HOST_DEVICE __host__ __device__
#else
#define GPU_HOST_DEVICE
#endif

namespace gpu::detail::finite_bits {

// Element format codes, in the order of gpu::element_type.
enum format : int { fp32 = 0, fp64 = 1, fp16 = 2, bf16 = 3 };

// What one element is.
enum kind : int { finite = 0, nan = 1, inf = 2 };

// An element whose exponent bits are all set is Inf (mantissa 0) or NaN (anything else).
template <class Bits>
GPU_HOST_DEVICE constexpr kind classify(Bits value, Bits exponent, Bits mantissa) noexcept
{
    if ((value & exponent) != exponent) {
        return finite;
    }
    return (value & mantissa) != 0 ? nan : inf;
}

GPU_HOST_DEVICE constexpr kind classify_fp32(std::uint32_t bits) noexcept
{
    return classify<std::uint32_t>(bits, 0x7F800000U, 0x007FFFFFU);
}

GPU_HOST_DEVICE constexpr kind classify_fp64(std::uint64_t bits) noexcept
{
    return classify<std::uint64_t>(bits, 0x7FF0000000000000ULL, 0x000FFFFFFFFFFFFFULL);
}

GPU_HOST_DEVICE constexpr kind classify_fp16(std::uint16_t bits) noexcept
{
    return classify<std::uint16_t>(bits, 0x7C00U, 0x03FFU);
}

GPU_HOST_DEVICE constexpr kind classify_bf16(std::uint16_t bits) noexcept
{
    return classify<std::uint16_t>(bits, 0x7F80U, 0x007FU);
}

} // namespace gpu::detail::finite_bits
