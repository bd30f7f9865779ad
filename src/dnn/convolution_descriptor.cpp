// The convolution descriptor and the shape rules of a convolution: every bad shape is refused
// here, on the host and with its values, before cuDNN or the GPU sees it.
#include "translate.hpp"

#include <gpu/dnn/convolution_descriptor.hpp>

#include <array>
#include <climits>
#include <stdexcept>
#include <string>

namespace gpu::dnn {

namespace {

constexpr int max_spatial_rank = CUDNN_DIM_MAX - 2;

[[noreturn]] void reject(const std::string& text)
{
    throw std::invalid_argument("gpu::dnn convolution: " + text);
}

} // namespace

std::string convolution_geometry::to_string() const
{
    return "padding " + dnn::to_string(padding) + ", stride " + dnn::to_string(stride) +
           ", dilation " + dnn::to_string(dilation) + ", groups " + std::to_string(groups) + ", " +
           std::string(dnn::to_string(mode));
}

void validate(const convolution_geometry& g)
{
    const std::size_t rank = g.padding.size();
    if (rank == 0 || rank > static_cast<std::size_t>(max_spatial_rank) || g.stride.size() != rank ||
        g.dilation.size() != rank) {
        reject("padding " + to_string(g.padding) + ", stride " + to_string(g.stride) +
               " and dilation " + to_string(g.dilation) +
               " must have one entry per spatial dimension (the same count, 1 to " +
               std::to_string(max_spatial_rank) + ")");
    }
    for (std::size_t i = 0; i < rank; ++i) {
        if (g.padding[i] < 0) {
            reject("padding " + to_string(g.padding) + " is negative in spatial dimension " +
                   std::to_string(i));
        }
        if (g.stride[i] <= 0) {
            reject("stride " + to_string(g.stride) + " has " + std::to_string(g.stride[i]) +
                   " in spatial dimension " + std::to_string(i) + "; strides must be at least 1");
        }
        if (g.dilation[i] <= 0) {
            reject("dilation " + to_string(g.dilation) + " has " + std::to_string(g.dilation[i]) +
                   " in spatial dimension " + std::to_string(i) +
                   "; dilations must be at least 1 (1 is a dense filter)");
        }
    }
    if (g.groups <= 0) {
        reject("groups is " + std::to_string(g.groups) + "; it must be at least 1");
    }
    detail::require_named("gpu::dnn convolution", "convolution_mode", g.mode);
}

namespace {

// One spatial dimension of a convolution, in 64 bits: cuDNN computes these in int.
struct spatial_window {
    long long padded; // input + 2 x padding
    long long span;   // dilation x (filter - 1) + 1
};

spatial_window window_of(const std::vector<int>& input, const std::vector<int>& filter,
                         const convolution_geometry& g, std::size_t i)
{
    return {static_cast<long long>(input[i + 2]) + 2LL * g.padding[i],
            static_cast<long long>(g.dilation[i]) * (filter[i + 2] - 1LL) + 1};
}

void check_channels(const std::vector<int>& input, const std::vector<int>& filter,
                    const convolution_geometry& g)
{
    const int channels = input[1];
    const int outputs = filter[0];
    if (channels % g.groups != 0) {
        reject("groups " + std::to_string(g.groups) + " does not divide the input's " +
               std::to_string(channels) + " channels (input " + to_string(input) + ")");
    }
    if (outputs % g.groups != 0) {
        reject("groups " + std::to_string(g.groups) + " does not divide the filter's " +
               std::to_string(outputs) + " output channels (filter " + to_string(filter) + ")");
    }
    const long long taken = static_cast<long long>(filter[1]) * g.groups;
    if (taken != channels) {
        reject("the input has " + std::to_string(channels) + " channels but the filter " +
               to_string(filter) + " takes " + std::to_string(filter[1]) + " per group x " +
               std::to_string(g.groups) + (g.groups == 1 ? " group" : " groups") + " = " +
               std::to_string(taken));
    }
}

void check_window(const std::vector<int>& input, const std::vector<int>& filter,
                  const convolution_geometry& g, std::size_t i)
{
    const spatial_window w = window_of(input, filter, g, i);
    const std::string padded = std::to_string(w.padded) + " (size " + std::to_string(input[i + 2]) +
                               " + 2 x padding " + std::to_string(g.padding[i]) + ")";
    if (w.padded > INT_MAX) {
        reject("in spatial dimension " + std::to_string(i) + " the padded input is " + padded +
               ", more than INT_MAX (2^31 - 1); cuDNN computes the output size in 32-bit int");
    }
    if (w.span > w.padded) {
        reject("in spatial dimension " + std::to_string(i) + " the filter spans " +
               std::to_string(w.span) + " (size " + std::to_string(filter[i + 2]) + ", dilation " +
               std::to_string(g.dilation[i]) + ") but the padded input is only " + padded);
    }
}

// N, K, then the textbook formula per spatial dimension; after the checks above every term
// fits in int (the output is at most the padded input).
std::vector<int> output_of(const std::vector<int>& input, const std::vector<int>& filter,
                           const convolution_geometry& g)
{
    std::vector<int> output{input[0], filter[0]};
    for (std::size_t i = 0; i < static_cast<std::size_t>(g.spatial_rank()); ++i) {
        const spatial_window w = window_of(input, filter, g, i);
        output.push_back(static_cast<int>((w.padded - w.span) / g.stride[i] + 1));
    }
    return output;
}

} // namespace

void validate_convolution(const std::vector<int>& input, const std::vector<int>& filter,
                          const convolution_geometry& g)
{
    validate(g);
    const std::size_t rank = static_cast<std::size_t>(g.spatial_rank()) + 2;
    if (input.size() != rank || filter.size() != rank) {
        reject("the input " + to_string(input) + " has " + std::to_string(input.size()) +
               " dimensions and the filter " + to_string(filter) + " " +
               std::to_string(filter.size()) + ", but a convolution with " +
               std::to_string(g.spatial_rank()) + " spatial dimensions needs " +
               std::to_string(rank) + " each (N, C, spatial... and K, C / groups, spatial...)");
    }
    detail::validate_dims("gpu::dnn convolution input", input, 3, CUDNN_DIM_MAX);
    detail::validate_dims("gpu::dnn convolution filter", filter, 3, CUDNN_DIM_MAX);
    check_channels(input, filter, g);
    for (std::size_t i = 0; i < static_cast<std::size_t>(g.spatial_rank()); ++i) {
        check_window(input, filter, g, i);
    }
    // The output tensor must be one cuDNN can describe and index, like the input.
    detail::validate_dims("gpu::dnn convolution output", output_of(input, filter, g), 3,
                          CUDNN_DIM_MAX);
}

std::vector<int> convolution_output_dims(const std::vector<int>& input,
                                         const std::vector<int>& filter,
                                         const convolution_geometry& g)
{
    validate_convolution(input, filter, g);
    return output_of(input, filter, g);
}

// ---- convolution_descriptor -----------------------------------------------------------------

namespace {

struct convolution_readback {
    convolution_geometry geometry;
    data_type compute;
};

convolution_readback read_convolution(cudnnConvolutionDescriptor_t raw)
{
    if (raw == nullptr) {
        detail::throw_empty("gpu::dnn::convolution_descriptor");
    }
    int rank = 0;
    std::array<int, max_spatial_rank> padding{};
    std::array<int, max_spatial_rank> stride{};
    std::array<int, max_spatial_rank> dilation{};
    cudnnConvolutionMode_t mode{};
    cudnnDataType_t compute{};
    GPU_CUDNN_CHECK(cudnnGetConvolutionNdDescriptor(raw, max_spatial_rank, &rank, padding.data(),
                                                    stride.data(), dilation.data(), &mode,
                                                    &compute));
    int groups = 0;
    GPU_CUDNN_CHECK(cudnnGetConvolutionGroupCount(raw, &groups));
    convolution_readback result{{}, detail::from_cudnn(compute)};
    result.geometry.padding.assign(padding.begin(), padding.begin() + rank);
    result.geometry.stride.assign(stride.begin(), stride.begin() + rank);
    result.geometry.dilation.assign(dilation.begin(), dilation.begin() + rank);
    result.geometry.groups = groups;
    result.geometry.mode = detail::from_cudnn(mode);
    return result;
}

} // namespace

convolution_descriptor::convolution_descriptor(const convolution_geometry& geometry,
                                               data_type compute, math_type math)
{
    validate(geometry);
    detail::require_named("gpu::dnn::convolution_descriptor", "data_type", compute);
    detail::require_named("gpu::dnn::convolution_descriptor", "math_type", math);
    if (compute == data_type::bf16) {
        throw std::invalid_argument("gpu::dnn::convolution_descriptor: compute type bf16 does not "
                                    "exist in cuDNN; BF16 data accumulates in fp32");
    }
    cudnnConvolutionDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&raw));
    reset(raw);
    const std::string context =
        "convolution " + geometry.to_string() + ", compute " + std::string(dnn::to_string(compute));
    detail::check_set(
        cudnnSetConvolutionNdDescriptor(raw, geometry.spatial_rank(), geometry.padding.data(),
                                        geometry.stride.data(), geometry.dilation.data(),
                                        detail::to_cudnn(geometry.mode), detail::to_cudnn(compute)),
        "cudnnSetConvolutionNdDescriptor", context);
    detail::check_set(cudnnSetConvolutionGroupCount(raw, geometry.groups),
                      "cudnnSetConvolutionGroupCount", context);
    detail::check_set(cudnnSetConvolutionMathType(raw, detail::to_cudnn(math)),
                      "cudnnSetConvolutionMathType", context);
}

convolution_geometry convolution_descriptor::geometry() const
{
    return read_convolution(get()).geometry;
}

data_type convolution_descriptor::compute_type() const
{
    return read_convolution(get()).compute;
}

math_type convolution_descriptor::math() const
{
    if (get() == nullptr) {
        detail::throw_empty("gpu::dnn::convolution_descriptor");
    }
    cudnnMathType_t math{};
    GPU_CUDNN_CHECK(cudnnGetConvolutionMathType(get(), &math));
    return detail::from_cudnn(math);
}

void convolution_descriptor::set_math(math_type math)
{
    if (get() == nullptr) {
        detail::throw_empty("gpu::dnn::convolution_descriptor");
    }
    detail::require_named("gpu::dnn::convolution_descriptor::set_math", "math_type", math);
    GPU_CUDNN_CHECK(cudnnSetConvolutionMathType(get(), detail::to_cudnn(math)));
}

std::vector<int> convolution_descriptor::output_dims(const tensor_descriptor& input,
                                                     const filter_descriptor& filter) const
{
    const convolution_readback conv = read_convolution(get());
    const std::vector<int> x = input.dims();
    const std::vector<int> w = filter.dims();
    validate_convolution(x, w, conv.geometry);
    if (input.type() != filter.type()) {
        throw std::invalid_argument(
            "gpu::dnn convolution: the input is " + std::string(dnn::to_string(input.type())) +
            " but the filter is " + std::string(dnn::to_string(filter.type())) +
            "; both must have the same element type");
    }
    std::vector<int> output(x.size());
    detail::check_set(
        cudnnGetConvolutionNdForwardOutputDim(get(), input.get(), filter.get(),
                                              static_cast<int>(output.size()), output.data()),
        "cudnnGetConvolutionNdForwardOutputDim",
        "input " + input.to_string() + ", filter " + filter.to_string() + ", " + to_string());
    return output;
}

std::string convolution_descriptor::to_string() const
{
    const convolution_readback conv = read_convolution(get());
    return conv.geometry.to_string() + ", compute " + std::string(dnn::to_string(conv.compute)) +
           ", math " + std::string(dnn::to_string(math()));
}

} // namespace gpu::dnn
