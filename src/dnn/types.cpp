// Names of the cuDNN wrapper's enums, and their translation to cuDNN's values and back.
#include "translate.hpp"

#include <gpu/dnn/error.hpp>
#include <gpu/dnn/types.hpp>
#include <gpu/detail/unique_handle.hpp>

#include <climits>
#include <stdexcept>
#include <string>

namespace gpu::dnn {

std::string_view to_string(tensor_layout layout) noexcept
{
    return gpu::detail::name_of(detail::names<tensor_layout>, layout);
}

constexpr gpu::detail::enum_name<algorithm_search> algorithm_search_names[] = {
    {algorithm_search::heuristic, "heuristic"},
    {algorithm_search::exhaustive, "exhaustive"},
    {algorithm_search::deterministic, "deterministic"}};
std::string_view to_string(algorithm_search search) noexcept
{
    return gpu::detail::name_of(algorithm_search_names, search);
}

std::string_view to_string(math_type math) noexcept
{
    return gpu::detail::name_of(detail::names<math_type>, math);
}

std::string_view to_string(convolution_mode mode) noexcept
{
    return gpu::detail::name_of(detail::names<convolution_mode>, mode);
}

std::string_view to_string(activation_mode mode) noexcept
{
    return gpu::detail::name_of(detail::names<activation_mode>, mode);
}

std::string to_string(const std::vector<int>& values)
{
    std::string text = "[";
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i != 0) {
            text += ", ";
        }
        text += std::to_string(values[i]);
    }
    text += ']';
    return text;
}

namespace detail {

namespace {
[[noreturn]] void throw_unnamed(const char* what, int value)
{
    throw std::domain_error(std::string("gpu::dnn: the descriptor holds ") + what + " " +
                            std::to_string(value) + ", which cudagap has no name for");
}
} // namespace

cudnnDataType_t to_cudnn(data_type type) noexcept
{
    switch (type) {
    case data_type::fp16: return CUDNN_DATA_HALF;
    case data_type::bf16: return CUDNN_DATA_BFLOAT16;
    case data_type::fp32: break;
    }
    return CUDNN_DATA_FLOAT;
}

cudnnTensorFormat_t to_cudnn(tensor_layout layout) noexcept
{
    return layout == tensor_layout::nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
}

cudnnMathType_t to_cudnn(math_type math) noexcept
{
    switch (math) {
    case math_type::tensor_op: return CUDNN_TENSOR_OP_MATH;
    case math_type::tensor_op_allow_conversion: return CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    case math_type::fma: return CUDNN_FMA_MATH;
    case math_type::default_math: break;
    }
    return CUDNN_DEFAULT_MATH;
}

cudnnConvolutionMode_t to_cudnn(convolution_mode mode) noexcept
{
    return mode == convolution_mode::convolution ? CUDNN_CONVOLUTION : CUDNN_CROSS_CORRELATION;
}

cudnnActivationMode_t to_cudnn(activation_mode mode) noexcept
{
    switch (mode) {
    case activation_mode::identity: return CUDNN_ACTIVATION_IDENTITY;
    case activation_mode::clipped_relu: return CUDNN_ACTIVATION_CLIPPED_RELU;
    case activation_mode::sigmoid: return CUDNN_ACTIVATION_SIGMOID;
    case activation_mode::tanh: return CUDNN_ACTIVATION_TANH;
    case activation_mode::elu: return CUDNN_ACTIVATION_ELU;
    case activation_mode::relu: break;
    }
    return CUDNN_ACTIVATION_RELU;
}

data_type from_cudnn(cudnnDataType_t type)
{
    switch (type) {
    case CUDNN_DATA_FLOAT: return data_type::fp32;
    case CUDNN_DATA_HALF: return data_type::fp16;
    case CUDNN_DATA_BFLOAT16: return data_type::bf16;
    default: throw_unnamed("cudnnDataType_t", static_cast<int>(type));
    }
}

tensor_layout from_cudnn(cudnnTensorFormat_t format)
{
    switch (format) {
    case CUDNN_TENSOR_NCHW: return tensor_layout::nchw;
    case CUDNN_TENSOR_NHWC: return tensor_layout::nhwc;
    default: throw_unnamed("cudnnTensorFormat_t", static_cast<int>(format));
    }
}

math_type from_cudnn(cudnnMathType_t math)
{
    switch (math) {
    case CUDNN_DEFAULT_MATH: return math_type::default_math;
    case CUDNN_TENSOR_OP_MATH: return math_type::tensor_op;
    case CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION: return math_type::tensor_op_allow_conversion;
    case CUDNN_FMA_MATH: return math_type::fma;
    }
    throw_unnamed("cudnnMathType_t", static_cast<int>(math));
}

convolution_mode from_cudnn(cudnnConvolutionMode_t mode)
{
    switch (mode) {
    case CUDNN_CROSS_CORRELATION: return convolution_mode::cross_correlation;
    case CUDNN_CONVOLUTION: return convolution_mode::convolution;
    }
    throw_unnamed("cudnnConvolutionMode_t", static_cast<int>(mode));
}

activation_mode from_cudnn(cudnnActivationMode_t mode)
{
    switch (mode) {
    case CUDNN_ACTIVATION_IDENTITY: return activation_mode::identity;
    case CUDNN_ACTIVATION_RELU: return activation_mode::relu;
    case CUDNN_ACTIVATION_CLIPPED_RELU: return activation_mode::clipped_relu;
    case CUDNN_ACTIVATION_SIGMOID: return activation_mode::sigmoid;
    case CUDNN_ACTIVATION_TANH: return activation_mode::tanh;
    case CUDNN_ACTIVATION_ELU: return activation_mode::elu;
    default: throw_unnamed("cudnnActivationMode_t", static_cast<int>(mode));
    }
}

void validate_dims(const char* what, const std::vector<int>& dims, int min_rank, int max_rank)
{
    const auto describe = [&] { return dnn::to_string(dims); };
    const int rank = static_cast<int>(dims.size());
    if (rank < min_rank || rank > max_rank) {
        throw std::invalid_argument(std::string(what) + ": " + std::to_string(rank) +
                                    " dimensions " + describe() + ", but cuDNN takes " +
                                    std::to_string(min_rank) + " to " + std::to_string(max_rank));
    }
    long long count = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (dims[i] <= 0) {
            throw std::invalid_argument(std::string(what) + ": dimension " + std::to_string(i) +
                                        " of " + describe() + " is " + std::to_string(dims[i]) +
                                        "; every dimension must be positive");
        }
        count *= dims[i];
        if (count > INT_MAX) {
            throw std::invalid_argument(std::string(what) + ": " + describe() +
                                        " has more than INT_MAX (2^31 - 1) elements, which "
                                        "cuDNN's convolution API cannot index; split the batch");
        }
    }
}

std::size_t product(const std::vector<int>& dims)
{
    std::size_t count = 1;
    for (const int d : dims) {
        if (d <= 0 || __builtin_mul_overflow(count, static_cast<std::size_t>(d), &count)) {
            throw std::domain_error("gpu::dnn: the descriptor holds dimensions " +
                                    dnn::to_string(dims) +
                                    (d <= 0 ? " with one that is not positive"
                                            : " whose product does not fit in size_t"));
        }
    }
    return count;
}

void check_set(cudnnStatus_t status, const char* api, const std::string& context,
               std::source_location where)
{
    gpu::detail::check(status, api, where, context);
}

void throw_empty(const char* what)
{
    gpu::detail::throw_empty_owner(what, what, "cuDNN descriptor");
}

} // namespace detail
} // namespace gpu::dnn
