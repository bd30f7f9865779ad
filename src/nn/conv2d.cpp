// The conv2d layer: registration, planning (three dnn plans and the gradient scratch), and its
// forward and backward on cuDNN.
#include "memory_tags.hpp"
#include <gpu/detail/expects.hpp>
#include <gpu/nn/accumulate.hpp>
#include <gpu/nn/conv2d.hpp>

#include "layer_support.hpp"

#include <climits>
#include <initializer_list>
#include <stdexcept>
#include <utility>

namespace gpu::nn {

namespace {

// Checks what a conv2d is made of, before anything is registered; returns the fan-in.
std::int64_t checked_fan_in(const std::string& name, std::int64_t in, std::int64_t out,
                            const std::array<int, 2>& kernel, const conv2d_options& options)
{
    const std::string who = "gpu::nn::conv2d " + name;
    GPU_EXPECTS(in > 0 && in <= INT_MAX && out > 0 && out <= INT_MAX, std::invalid_argument, who,
                ": in_channels ", in, " and out_channels ", out, " must be in [1, 2^31 - 1]");
    GPU_EXPECTS(kernel[0] > 0 && kernel[1] > 0, std::invalid_argument, who, ": the kernel ",
                detail::pair_text(kernel), " must be positive");
    GPU_EXPECTS(options.stride[0] > 0 && options.stride[1] > 0, std::invalid_argument, who,
                ": the stride ", detail::pair_text(options.stride), " must be positive");
    GPU_EXPECTS(options.padding[0] >= 0 && options.padding[1] >= 0, std::invalid_argument, who,
                ": the padding ", detail::pair_text(options.padding), " must not be negative");
    // cuDNN indexes the filter with an int: out · in · kh · kw must fit, and then so does the
    // fan-in.
    std::int64_t elements = out;
    for (const std::int64_t factor : {in, std::int64_t{kernel[0]}, std::int64_t{kernel[1]}}) {
        GPU_EXPECTS(elements <= INT_MAX / factor, std::invalid_argument, who, ": the weight [", out,
                    ", ", in, ", ", kernel[0], ", ", kernel[1],
                    "] has more than 2^31 - 1 elements");
        elements *= factor;
    }
    return elements / out;
}

} // namespace

conv2d::conv2d(parameters& store, std::string name, std::int64_t in_channels,
               std::int64_t out_channels, std::array<int, 2> kernel, const conv2d_options& options)
    : layer(store), name_(std::move(name)), in_(in_channels), out_(out_channels), kernel_(kernel),
      options_(options)
{
    const std::int64_t fan_in = checked_fan_in(name_, in_channels, out_channels, kernel, options);
    // Both names are checked before either is added, so a refusal registers nothing.
    GPU_EXPECTS(!options.bias || !store.find(name_ + ".bias"), std::invalid_argument,
                "gpu::nn::conv2d ", name_, ": the store already has a parameter named ", name_,
                ".bias");
    weight_ = store.add(name_ + ".weight", {out_channels, in_channels, kernel[0], kernel[1]},
                        initialization::kaiming_uniform(fan_in));
    if (options.bias) {
        bias_ = store.add(name_ + ".bias", {out_channels}, initialization::fan_in_uniform(fan_in));
    }
}

conv2d::conv2d(parameters& store, std::string name, std::int64_t in_channels,
               std::int64_t out_channels, int kernel_size, const conv2d_options& options)
    : conv2d(store, std::move(name), in_channels, out_channels,
             std::array<int, 2>{kernel_size, kernel_size}, options)
{}

conv2d::conv2d(const conv2d& other, sharing)
    : layer(*other.registered_store()), name_(other.name_), in_(other.in_), out_(other.out_),
      kernel_(other.kernel_), options_(other.options_), weight_(other.weight_), bias_(other.bias_)
{}

conv2d conv2d::share() const
{
    return conv2d(*this, sharing{});
}

std::string conv2d::describe() const
{
    return "conv2d " + name_ + "(" + std::to_string(in_) + " -> " + std::to_string(out_) +
           ", kernel " + detail::pair_text(kernel_) + ", stride " +
           detail::pair_text(options_.stride) + ", padding " + detail::pair_text(options_.padding) +
           (options_.bias ? ", bias)" : ", no bias)");
}

std::vector<std::int64_t> conv2d::output_shape(const std::vector<std::int64_t>& input) const
{
    GPU_EXPECTS(input.size() == 4, std::invalid_argument, describe(), ": the input has ",
                input.size(), " dimensions; it needs [N, ", in_, ", H, W]");
    for (std::size_t i = 0; i < input.size(); ++i) {
        GPU_EXPECTS(input[i] > 0 && input[i] <= INT_MAX, std::invalid_argument, describe(),
                    ": dimension ", i, " of the input is ", input[i],
                    "; every dimension must be in [1, 2^31 - 1]");
    }
    GPU_EXPECTS(input[1] == in_, std::invalid_argument, describe(), ": the input has ", input[1],
                " channels, not in_channels ", in_);
    std::vector<std::int64_t> output{input[0], out_, 0, 0};
    for (std::size_t d = 0; d < 2; ++d) {
        const std::int64_t padded = input[2 + d] + 2 * std::int64_t{options_.padding[d]};
        GPU_EXPECTS(padded >= kernel_[d], std::invalid_argument, describe(), ": the input's ",
                    d == 0 ? "height " : "width ", input[2 + d], " padded to ", padded,
                    " is smaller than the kernel's ", kernel_[d]);
        output[2 + d] = (padded - kernel_[d]) / options_.stride[d] + 1;
    }
    return output;
}

tensor_spec conv2d::do_plan(context& ctx, const tensor_spec& input)
{
    const element_type compute =
        detail::require_compute_input(ctx, describe(), "a conv2d layer", input);
    GPU_EXPECTS(input.layout == dnn::tensor_layout::nchw, std::invalid_argument, describe(),
                ": the input ", input.to_string(),
                " is channels-last; the weight is stored [out, in, kh, kw] as PyTorch's, "
                "which cuDNN reads with nchw data only");
    std::vector<std::int64_t> shape = output_shape(input.shape);
    // Member by member: GCC 12 warns (-Wmaybe-uninitialized, falsely) on the designated
    // initializer of the nested geometry.
    dnn::convolution_problem problem;
    problem.input = detail::dnn_dims(describe(), input);
    problem.filter = {static_cast<int>(out_), static_cast<int>(in_), kernel_[0], kernel_[1]};
    problem.geometry.padding = {options_.padding[0], options_.padding[1]};
    problem.geometry.stride = {options_.stride[0], options_.stride[1]};
    problem.type = detail::dnn_type_of(describe(), input);
    problem.validate(); // the element counts cuDNN can index, named by dnn
    // The previous plan's workspaces go before the new ones are made.
    forward_.reset();
    data_.reset();
    filter_.reset();
    const dnn::convolution_options& options = ctx.convolution_options();
    dnn::handle& h = ctx.dnn();
    h.set_stream(ctx.stream()); // the plans' searches and workspaces are ordered on ctx.stream()
    dnn::convolution_problem forward = problem;
    forward.epilogue = bias_ ? dnn::convolution_epilogue::bias : dnn::convolution_epilogue::none;
    forward_.emplace(h, forward, options);
    // Inference mode: no backward plans (nor their algorithm searches), no gradient scratch.
    const bool backward = !ctx.inference_mode();
    if (backward) {
        data_.emplace(h, problem, options);
        filter_.emplace(h, problem, options);
    }
    // FP32 gradients take cuDNN's beta = 1 directly; FP16/BF16 ones go through a scratch.
    const std::size_t size = compute == element_type::fp32 || !backward ? 0 : element_size(compute);
    weight_scratch_ = device_buffer<std::byte>(size * problem.filter_elements(), ctx.stream(),
                                               detail::scratch_tag);
    bias_scratch_ = device_buffer<std::byte>(bias_ ? size * static_cast<std::size_t>(out_) : 0,
                                             ctx.stream(), detail::scratch_tag);
    problem_ = std::move(problem);
    planned_ = options;
    return tensor_spec{std::move(shape), compute, dnn::tensor_layout::nchw};
}

void conv2d::do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output)
{
    parameters& store = ctx.params();
    const void* weight = store.view(weight_).working;
    const void* bias = bias_ ? store.view(*bias_).working : nullptr;
    dnn::handle& h = ctx.dnn();
    h.set_stream(ctx.stream());
    forward_->forward_raw(h, input.data, weight, bias, output.data);
    saved_input_ = input.data;
}

void conv2d::do_backward(context& ctx, const tensor_ref& output_gradient,
                         const tensor_ref& input_gradient)
{
    dnn::handle& h = ctx.dnn();
    h.set_stream(ctx.stream());
    if (input_gradient.data != nullptr) { // dx = the adjoint of the convolution applied to dy
        data_->backward_data_raw(h, ctx.params().view(weight_).working, output_gradient.data,
                                 input_gradient.data);
    }
    add_weight_gradient(ctx, output_gradient.data);
    if (bias_) {
        add_bias_gradient(ctx, output_gradient.data);
    }
}

void conv2d::add_weight_gradient(context& ctx, const void* output_gradient)
{
    const parameter_view view = ctx.params().view(weight_);
    if (weight_scratch_.empty()) { // FP32: dW += cuDNN's gradient, in one call
        filter_->backward_filter_raw(ctx.dnn(), saved_input_, output_gradient, view.gradient,
                                     dnn::gradient_update::accumulate);
        return;
    }
    filter_->backward_filter_raw(ctx.dnn(), saved_input_, output_gradient, weight_scratch_.data(),
                                 dnn::gradient_update::overwrite);
    accumulate(weight_scratch_.data(), planned_input()->type, view.gradient, view.count,
               ctx.stream());
}

void conv2d::add_bias_gradient(context& ctx, const void* output_gradient)
{
    const parameter_view view = ctx.params().view(*bias_);
    if (bias_scratch_.empty()) { // FP32: db += Σ dy over N, H, W, in one call
        dnn::convolution_backward_bias_raw(ctx.dnn(), problem_, output_gradient, view.gradient,
                                           dnn::gradient_update::accumulate, planned_);
        return;
    }
    dnn::convolution_backward_bias_raw(ctx.dnn(), problem_, output_gradient, bias_scratch_.data(),
                                       dnn::gradient_update::overwrite, planned_);
    accumulate(bias_scratch_.data(), planned_input()->type, view.gradient, view.count,
               ctx.stream());
}

} // namespace gpu::nn
