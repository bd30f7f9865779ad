/// @file types.hpp
/// @brief The element types of the BLAS wrapper (`float`, `double`, `__half`, `__nv_bfloat16`)
/// and the scalar type that scales each of them in a GEMM.
#pragma once

#include <gpu/element_type.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

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

/// @brief The element types, as a value (for the compiled part of the library): the core's
/// `gpu::element_type`, whose four formats are exactly the wrapper's.
using element_type = gpu::element_type;

/// @brief The `element_type` of a C++ element type.
template <blas_element T>
inline constexpr element_type element_type_of =
    std::is_same_v<T, double>          ? element_type::fp64
    : std::is_same_v<T, __half>        ? element_type::fp16
    : std::is_same_v<T, __nv_bfloat16> ? element_type::bf16
                                       : element_type::fp32;

} // namespace detail
} // namespace gpu::blas
