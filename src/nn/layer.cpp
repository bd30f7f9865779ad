// The layer contract, checked once for every layer: plan, then forward, then backward, on
// tensors of the planned specs.
#include <gpu/detail/expects.hpp>
#include <gpu/nn/layer.hpp>
#include <gpu/nvtx.hpp>

#include <stdexcept>
#include <string>

namespace gpu::nn {

namespace {
/// The NVTX range of a forward or backward (@p pass) of @p l: `nn fc1 forward`.
std::string range_name(const layer& l, const char* pass)
{
    std::string name = "nn ";
    name += l.name();
    name += ' ';
    name += pass;
    return name;
}
} // namespace

tensor_spec layer::plan(context& ctx, const tensor_spec& input)
{
    check_store("plan", ctx);
    // A failed plan leaves the layer unplanned, never half planned for a new batch size.
    input_.reset();
    output_.reset();
    forwarded_ = false;
    tensor_spec output = do_plan(ctx, input);
    input_ = input;
    output_ = output;
    forward_only_ = ctx.inference_mode();
    return output;
}

void layer::forward(context& ctx, const tensor_ref& input, const tensor_ref& output)
{
    GPU_EXPECTS(input_.has_value(), std::logic_error, describe(), ": forward before plan");
    check_store("forward", ctx);
    check_tensor("forward", "input", input, *input_, false);
    check_tensor("forward", "output", output, *output_, false);
    GPU_EXPECTS(!output_is_view() || output.data == input.data, std::invalid_argument, describe(),
                ": forward: the output must be the input's memory (the layer is a view)");
    const nvtx::range range([&] { return range_name(*this, "forward"); }, nvtx::colours::compute);
    do_forward(ctx, input, output);
    forwarded_ = true;
}

void layer::backward(context& ctx, const tensor_ref& output_gradient,
                     const tensor_ref& input_gradient)
{
    GPU_EXPECTS(input_.has_value() && forwarded_, std::logic_error, describe(),
                ": backward before a forward with the current plan");
    GPU_EXPECTS(
        !forward_only_, std::logic_error, describe(),
        ": backward after a plan made in inference mode, which made nothing a backward needs "
        "(plan again with ctx.set_inference_mode(false))");
    check_store("backward", ctx);
    check_tensor("backward", "output gradient", output_gradient, *output_, false);
    check_tensor("backward", "input gradient", input_gradient, *input_, true);
    GPU_EXPECTS(!output_is_view() || input_gradient.data == nullptr ||
                    input_gradient.data == output_gradient.data,
                std::invalid_argument, describe(),
                ": backward: the input gradient must be the output gradient's memory (the layer is "
                "a view)");
    const nvtx::range range([&] { return range_name(*this, "backward"); }, nvtx::colours::compute);
    do_backward(ctx, output_gradient, input_gradient);
}

void layer::check_tensor(const char* function, const char* role, const tensor_ref& tensor,
                         const tensor_spec& planned, bool may_be_null) const
{
    if (may_be_null && tensor.data == nullptr) {
        return; // not needed: its spec does not matter
    }
    GPU_EXPECTS(tensor.spec == planned, std::invalid_argument, describe(), ": ", function, ": the ",
                role, " is ", tensor.spec.to_string(), " but the layer was planned for ",
                planned.to_string(), " (plan again for another batch size)");
    GPU_EXPECTS(tensor.data != nullptr, std::invalid_argument, describe(), ": ", function, ": the ",
                role, " (", planned.to_string(), ") has a null address");
}

void layer::check_store(const char* function, const context& ctx) const
{
    GPU_EXPECTS(store_ == nullptr || store_ == &ctx.params(), std::invalid_argument, describe(),
                ": ", function,
                ": the context's parameter store is not the one the layer registered in");
}

} // namespace gpu::nn
