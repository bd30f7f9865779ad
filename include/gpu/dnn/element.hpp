/// @file element.hpp
/// @brief The C++ element types of the cuDNN wrapper's buffers (`float`, `__half`,
/// `__nv_bfloat16`), their `data_type`, and what the typed operations (pooling, activation,
/// softmax, dropout) check of their buffers before any cuDNN call.
///
/// @code
/// static_assert(gpu::dnn::data_type_of<__half> == gpu::dnn::data_type::fp16);
/// @endcode
#pragma once

#include <gpu/dnn/types.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <type_traits>

namespace gpu::dnn {

/// @brief An element type that the wrapper's typed operations take: `float` (fp32), `__half`
/// (fp16) or `__nv_bfloat16` (bf16).
template <class T>
concept dnn_element =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// @brief The `data_type` of the C++ element type @p T.
template <dnn_element T>
inline constexpr data_type data_type_of = std::is_same_v<T, __half>          ? data_type::fp16
                                          : std::is_same_v<T, __nv_bfloat16> ? data_type::bf16
                                                                             : data_type::fp32;

namespace detail {

/// @brief One buffer given to a typed operation: its role, the elements it holds and the
/// elements the operation was planned for. The operations check a list of them before any
/// cuDNN call, so that a mismatch is an `std::invalid_argument` naming both counts.
struct buffer_check {
    const char* name = ""; ///< its role, e.g. `dy`
    std::size_t have = 0;  ///< the elements the buffer holds
    std::size_t need = 0;  ///< the elements the plan needs
};

} // namespace detail
} // namespace gpu::dnn
