// The relu layer: the dnn wrapper's activation, planned for the input's shape and type.
#include <gpu/nn/relu.hpp>

#include "layer_support.hpp"

namespace gpu::nn {

std::string relu::describe() const
{
    return "relu";
}

tensor_spec relu::do_plan(context&, const tensor_spec& input)
{
    // Described as a packed NCHW tensor whatever the layout: x, y, dy and dx share it, and an
    // elementwise function maps element i to element i either way.
    activation_.emplace(detail::elementwise_dims(describe(), input),
                        detail::dnn_type_of(describe(), input));
    return input;
}

void relu::do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output)
{
    detail::run_forward(ctx, *activation_, input.data, output.data);
    saved_input_ = input.data;
    saved_output_ = output.data;
}

void relu::do_backward(context& ctx, const tensor_ref& output_gradient,
                       const tensor_ref& input_gradient)
{
    detail::run_backward(ctx, *activation_, saved_output_, output_gradient.data, saved_input_,
                         input_gradient.data);
}

} // namespace gpu::nn
