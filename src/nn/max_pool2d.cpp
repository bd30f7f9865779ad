// The max_pool2d layer: the dnn wrapper's pooling, planned for the input's shape, type and layout.
#include <gpu/detail/expects.hpp>
#include <gpu/nn/max_pool2d.hpp>

#include "layer_support.hpp"

#include <climits>
#include <stdexcept>

namespace gpu::nn {

max_pool2d::max_pool2d(int kernel_size) : max_pool2d(kernel_size, kernel_size, 0) {}

max_pool2d::max_pool2d(int kernel_size, int stride, int padding)
    : max_pool2d({kernel_size, kernel_size}, {stride, stride}, {padding, padding})
{}

max_pool2d::max_pool2d(std::array<int, 2> kernel, std::array<int, 2> stride,
                       std::array<int, 2> padding)
    : kernel_(kernel), stride_(stride), padding_(padding)
{
    GPU_EXPECTS(kernel[0] > 0 && kernel[1] > 0, std::invalid_argument,
                "gpu::nn::max_pool2d: the kernel ", detail::pair_text(kernel), " must be positive");
    GPU_EXPECTS(stride[0] > 0 && stride[1] > 0, std::invalid_argument,
                "gpu::nn::max_pool2d: the stride ", detail::pair_text(stride), " must be positive");
    for (std::size_t d = 0; d < 2; ++d) {
        GPU_EXPECTS(padding[d] >= 0 && padding[d] <= kernel[d] / 2, std::invalid_argument,
                    "gpu::nn::max_pool2d: the padding ", detail::pair_text(padding),
                    " must be in [0, half the kernel ", detail::pair_text(kernel),
                    "] (PyTorch's rule)");
    }
}

std::string max_pool2d::describe() const
{
    return "max_pool2d(kernel " + detail::pair_text(kernel_) + ", stride " +
           detail::pair_text(stride_) + ", padding " + detail::pair_text(padding_) + ")";
}

std::vector<std::int64_t> max_pool2d::output_shape(const std::vector<std::int64_t>& input) const
{
    GPU_EXPECTS(input.size() == 4, std::invalid_argument, describe(), ": the input has ",
                input.size(), " dimensions; it needs [N, C, H, W]");
    for (std::size_t i = 0; i < input.size(); ++i) {
        GPU_EXPECTS(input[i] > 0 && input[i] <= INT_MAX, std::invalid_argument, describe(),
                    ": dimension ", i, " of the input is ", input[i],
                    "; every dimension must be in [1, 2^31 - 1]");
    }
    std::vector<std::int64_t> output{input[0], input[1], 0, 0};
    for (std::size_t d = 0; d < 2; ++d) {
        const std::int64_t padded = input[2 + d] + 2 * std::int64_t{padding_[d]};
        GPU_EXPECTS(padded >= kernel_[d], std::invalid_argument, describe(), ": the input's ",
                    d == 0 ? "height " : "width ", input[2 + d], " padded to ", padded,
                    " is smaller than the kernel's ", kernel_[d]);
        output[2 + d] = (padded - kernel_[d]) / stride_[d] + 1;
    }
    return output;
}

tensor_spec max_pool2d::do_plan(context& ctx, const tensor_spec& input)
{
    std::vector<std::int64_t> shape = output_shape(input.shape);
    const dnn::pooling_geometry geometry{
        .window = {kernel_[0], kernel_[1]},
        .padding = {padding_[0], padding_[1]},
        .stride = {stride_[0], stride_[1]},
        .mode = ctx.convolution_options().deterministic_only()
                    ? dnn::pooling_mode::max_deterministic
                    : dnn::pooling_mode::max,
    };
    pooling_.emplace(detail::dnn_dims(describe(), input), geometry,
                     detail::dnn_type_of(describe(), input), input.layout);
    return tensor_spec{std::move(shape), input.type, input.layout};
}

void max_pool2d::do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output)
{
    detail::run_forward(ctx, *pooling_, input.data, output.data);
    saved_input_ = input.data;
    saved_output_ = output.data;
}

void max_pool2d::do_backward(context& ctx, const tensor_ref& output_gradient,
                             const tensor_ref& input_gradient)
{
    detail::run_backward(ctx, *pooling_, saved_output_, output_gradient.data, saved_input_,
                         input_gradient.data);
}

} // namespace gpu::nn
