// Private to the cuDNN wrapper: cudagap's enums to cuDNN's and back, and the checks of dimension
// lists that every descriptor shares.
#pragma once

#include <gpu/detail/enum_names.hpp>
#include <gpu/dnn/convolution_planning.hpp>
#include <gpu/dnn/pooling_descriptor.hpp>
#include <gpu/dnn/softmax.hpp>
#include <gpu/dnn/types.hpp>

#include <cudnn.h>

#include <source_location>
#include <string>
#include <vector>

namespace gpu::dnn::detail {

cudnnDataType_t to_cudnn(data_type type) noexcept;
cudnnTensorFormat_t to_cudnn(tensor_layout layout) noexcept;
cudnnMathType_t to_cudnn(math_type math) noexcept;
cudnnConvolutionMode_t to_cudnn(convolution_mode mode) noexcept;
cudnnActivationMode_t to_cudnn(activation_mode mode) noexcept;

// These throw std::domain_error for a cuDNN value cudagap does not name (adopted descriptors).
data_type from_cudnn(cudnnDataType_t type);
tensor_layout from_cudnn(cudnnTensorFormat_t format);
math_type from_cudnn(cudnnMathType_t math);
convolution_mode from_cudnn(cudnnConvolutionMode_t mode);
activation_mode from_cudnn(cudnnActivationMode_t mode);

// Throws std::invalid_argument naming `what` and the dims when the rank is outside
// [min_rank, max_rank], a dimension is not positive, or the element count exceeds INT_MAX
// (cuDNN's legacy API indexes with 32-bit integers).
void validate_dims(const char* what, const std::vector<int>& dims, int min_rank, int max_rank);

// The product of the dimensions. Bounded after validate_dims; on dimensions read back from an
// adopted descriptor (cuDNN accepts filters of 8 x INT_MAX) it throws std::domain_error for a
// dimension that is not positive or a product beyond size_t, instead of wrapping around.
std::size_t product(const std::vector<int>& dims);

using gpu::detail::throw_unnamed_enumerator;

// The names of the dnn wrapper's enums: one table each, which serves to_string and require_named.
// Each enum's table is a specialisation with its own array type; data_type's is the public
// mapping onto the core's element types (gpu/dnn/types.hpp).
template <class Enum>
inline constexpr auto names = nullptr;
template <>
inline constexpr const auto& names<data_type> = data_types;
template <>
inline constexpr gpu::detail::enum_name<tensor_layout> names<tensor_layout>[] = {
    {tensor_layout::nchw, "nchw"}, {tensor_layout::nhwc, "nhwc"}};
template <>
inline constexpr gpu::detail::enum_name<math_type> names<math_type>[] = {
    {math_type::default_math, "default"},
    {math_type::tensor_op, "tensor_op"},
    {math_type::tensor_op_allow_conversion, "tensor_op_allow_conversion"},
    {math_type::fma, "fma"}};
template <>
inline constexpr gpu::detail::enum_name<convolution_mode> names<convolution_mode>[] = {
    {convolution_mode::cross_correlation, "cross_correlation"},
    {convolution_mode::convolution, "convolution"}};
template <>
inline constexpr gpu::detail::enum_name<activation_mode> names<activation_mode>[] = {
    {activation_mode::identity, "identity"},
    {activation_mode::relu, "relu"},
    {activation_mode::clipped_relu, "clipped_relu"},
    {activation_mode::sigmoid, "sigmoid"},
    {activation_mode::tanh, "tanh"},
    {activation_mode::elu, "elu"}};
template <>
inline constexpr gpu::detail::enum_name<pooling_mode> names<pooling_mode>[] = {
    {pooling_mode::max, "max"},
    {pooling_mode::max_deterministic, "max_deterministic"},
    {pooling_mode::average_include_padding, "average_include_padding"},
    {pooling_mode::average_exclude_padding, "average_exclude_padding"}};
template <>
inline constexpr gpu::detail::enum_name<softmax_algorithm> names<softmax_algorithm>[] = {
    {softmax_algorithm::fast, "fast"},
    {softmax_algorithm::accurate, "accurate"},
    {softmax_algorithm::log, "log"}};
template <>
inline constexpr gpu::detail::enum_name<softmax_mode> names<softmax_mode>[] = {
    {softmax_mode::channel, "channel"}, {softmax_mode::instance, "instance"}};
template <>
inline constexpr gpu::detail::enum_name<convolution_epilogue> names<convolution_epilogue>[] = {
    {convolution_epilogue::none, "none"},
    {convolution_epilogue::bias, "bias"},
    {convolution_epilogue::bias_relu, "bias_relu"}};
template <>
inline constexpr gpu::detail::enum_name<gradient_update> names<gradient_update>[] = {
    {gradient_update::overwrite, "overwrite"}, {gradient_update::accumulate, "accumulate"}};

// Throws std::invalid_argument when `value` is none of the enumerators cudagap names (an
// integer cast to the enum): to_cudnn would otherwise map it silently to a default.
template <class Enum>
void require_named(const char* what, const char* type, Enum value)
{
    if (!gpu::detail::is_named(names<Enum>, value)) {
        throw_unnamed_enumerator(what, type, static_cast<int>(value));
    }
}

// Checks a cuDNN setter; on failure throws the dnn_error with `context` (what was being
// described) in its hint: gpu::detail::check, with the caller's location taken by default.
void check_set(cudnnStatus_t status, const char* api, const std::string& context,
               std::source_location where = std::source_location::current());

// Throws std::logic_error: `what` was called on an owner that holds nothing.
[[noreturn]] void throw_empty(const char* what);

} // namespace gpu::dnn::detail
