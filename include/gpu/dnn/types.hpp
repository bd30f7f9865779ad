/// @file types.hpp
/// @brief The vocabulary of the cuDNN wrapper: element types, memory layouts, math types,
/// convolution modes, activation modes and algorithm searches, as `enum class`es with names.
///
/// cudagap names these after the job, not the vendor: `data_type::fp16` rather than
/// `CUDNN_DATA_HALF`. The descriptors translate them to cuDNN's values and back.
#pragma once

#include <gpu/element_type.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::dnn {

/// @brief The element type of a tensor or filter: the core's element types that cuDNN takes, as
/// `detail::data_types` maps them.
enum class data_type {
    fp32, ///< IEEE single precision (`float`, `CUDNN_DATA_FLOAT`)
    fp16, ///< IEEE half precision (`__half`, `CUDNN_DATA_HALF`)
    bf16, ///< bfloat16 (`__nv_bfloat16`, `CUDNN_DATA_BFLOAT16`): FP32's range in 16 bits
};

namespace detail {
/// @brief The one table of the data types: the core's element type of each, which gives it its
/// name and its size.
inline constexpr gpu::detail::element_type_mapping<data_type> data_types[] = {
    {data_type::fp32, gpu::element_type::fp32},
    {data_type::fp16, gpu::element_type::fp16},
    {data_type::bf16, gpu::element_type::bf16}};
} // namespace detail

/// @brief `fp32`, `fp16` or `bf16` (the enumerator name of its element type); `unknown` for a
/// value outside the enumeration.
[[nodiscard]] constexpr std::string_view to_string(data_type type) noexcept
{
    return gpu::detail::name_of(detail::data_types, type);
}

/// @brief Bytes per element: 4 for fp32, 2 for fp16 and bf16; 0 for a value outside the
/// enumeration.
[[nodiscard]] constexpr std::size_t element_size(data_type type) noexcept
{
    const std::optional<gpu::element_type> element =
        gpu::detail::mapped_element_type(detail::data_types, type);
    return element ? gpu::element_size(*element) : 0;
}

/// @brief The core's `gpu::element_type` of @p type, for the core's functions on untyped memory
/// (`gpu::check_finite`).
/// @throws std::invalid_argument when @p type is not a named enumerator (its value named)
[[nodiscard]] inline gpu::element_type to_element_type(data_type type)
{
    return gpu::detail::to_element_type(detail::data_types, type, "gpu::dnn::to_element_type",
                                        "data_type");
}

/// @brief The `data_type` of the core's element type @p type, for a tensor described by one.
/// @throws std::invalid_argument for FP64 (cuDNN's convolutions, pooling and activations take
/// no FP64 in cudagap) or a value outside the enumeration, naming the types that are taken
[[nodiscard]] inline data_type to_data_type(gpu::element_type type)
{
    return gpu::detail::from_element_type(detail::data_types, type, "gpu::dnn::to_data_type",
                                          "data_type");
}

/// @brief How the elements of a 4-d (or n-d) tensor lie in memory. Dimensions are always
/// given in the logical order N, C, spatial... whatever the layout.
enum class tensor_layout {
    /// Channels first (`NCHW`, `NCDHW`): PyTorch's default (`torch.contiguous_format`).
    nchw,
    /// Channels last (`NHWC`, `NDHWC`): what tensor cores read fastest; PyTorch's
    /// `torch.channels_last`.
    nhwc,
};

/// @brief `nchw` or `nhwc`.
[[nodiscard]] std::string_view to_string(tensor_layout layout) noexcept;

/// @brief How a convolution plan chooses its algorithm. `convolution_options::from` maps a
/// profile's switches onto it: `benchmark` gives `exhaustive`, else `deterministic` gives
/// `deterministic`, else `heuristic`.
enum class algorithm_search {
    heuristic,     ///< cuDNN's ranked heuristic list, no timing (fast planning)
    exhaustive,    ///< time every algorithm on the real buffers (PyTorch's `cudnn.benchmark`)
    deterministic, ///< only algorithms that give bitwise-identical results run to run
};

/// @brief The name of a search policy: `heuristic`, `exhaustive` or `deterministic`.
[[nodiscard]] std::string_view to_string(algorithm_search search) noexcept;

/// @brief Which arithmetic a convolution may use (`cudnnMathType_t`).
enum class math_type {
    /// `CUDNN_DEFAULT_MATH`: cuDNN decides; on Ampere and newer this lets FP32 convolutions
    /// use TF32 tensor cores (10-bit mantissa), like PyTorch's `allow_tf32 = True`.
    default_math,
    /// `CUDNN_TENSOR_OP_MATH`: tensor cores for FP16/BF16 data, no down-conversion of FP32.
    tensor_op,
    /// `CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION`: tensor cores, converting FP32 data down.
    tensor_op_allow_conversion,
    /// `CUDNN_FMA_MATH`: plain FMA instructions only: exact FP32, no tensor cores.
    fma,
};

/// @brief `default`, `tensor_op`, `tensor_op_allow_conversion` or `fma`.
[[nodiscard]] std::string_view to_string(math_type math) noexcept;

/// @brief Whether the filter is flipped (`cudnnConvolutionMode_t`).
enum class convolution_mode {
    /// No flip: what deep-learning frameworks call convolution (PyTorch's `conv2d`).
    cross_correlation,
    /// The filter is flipped: convolution in the signal-processing sense.
    convolution,
};

/// @brief `cross_correlation` or `convolution`.
[[nodiscard]] std::string_view to_string(convolution_mode mode) noexcept;

/// @brief The function an activation descriptor applies (`cudnnActivationMode_t`).
enum class activation_mode {
    identity,     ///< y = x; only for fused bias epilogues (cuDNN refuses it elsewhere)
    relu,         ///< y = max(x, 0)
    clipped_relu, ///< y = min(max(x, 0), coefficient)
    sigmoid,      ///< y = 1 / (1 + e^-x)
    tanh,         ///< y = tanh(x)
    elu,          ///< y = x for x > 0, coefficient * (e^x - 1) otherwise
};

/// @brief `identity`, `relu`, `clipped_relu`, `sigmoid`, `tanh` or `elu`.
[[nodiscard]] std::string_view to_string(activation_mode mode) noexcept;

/// @brief `[32, 3, 224, 224]`: dimensions (or strides, paddings...) for messages.
[[nodiscard]] std::string to_string(const std::vector<int>& values);

} // namespace gpu::dnn

namespace gpu {

/// @brief The spelling of cudagap 0.1, when the search policy was part of the core's profile.
using algorithm_search [[deprecated("use gpu::dnn::algorithm_search (the profile's switch is now "
                                    "gpu::profile::benchmark)")]] = dnn::algorithm_search;

} // namespace gpu
