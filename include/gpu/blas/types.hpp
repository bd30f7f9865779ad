/// @file types.hpp
/// @brief The element types of the BLAS wing (`float`, `double`, `__half`, `__nv_bfloat16`)
/// and the scalar type that scales each of them in a GEMM.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <string_view>
#include <type_traits>

namespace gpu::blas {

/// @brief One of the element types that `gemm`, `check_finite`, the random fills and the
/// conversions take: `float`, `double`, `__half` (FP16) or `__nv_bfloat16` (BF16).
template <class T>
concept blas_element = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                       std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// @brief The type of `alpha` and `beta` for inputs of type @p T: `double` for `double`,
/// `float` for the others (FP16 and BF16 GEMMs accumulate in FP32).
template <class T>
using scalar_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

namespace detail {

/// @brief The element types, as a value (for the compiled part of the library).
enum class element_type {
    fp32, ///< `float`
    fp64, ///< `double`
    fp16, ///< `__half`
    bf16, ///< `__nv_bfloat16`
};

/// @brief The `element_type` of a C++ element type.
template <blas_element T>
inline constexpr element_type element_type_of = std::is_same_v<T, double>   ? element_type::fp64
                                               : std::is_same_v<T, __half> ? element_type::fp16
                                               : std::is_same_v<T, __nv_bfloat16> ? element_type::bf16
                                                                                  : element_type::fp32;

/// @brief `FP32`, `FP64`, `FP16` or `BF16`.
[[nodiscard]] constexpr std::string_view to_string(element_type type) noexcept
{
    switch (type) {
    case element_type::fp64:
        return "FP64";
    case element_type::fp16:
        return "FP16";
    case element_type::bf16:
        return "BF16";
    case element_type::fp32:
        break;
    }
    return "FP32";
}

} // namespace detail
} // namespace gpu::blas
