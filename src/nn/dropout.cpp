// The dropout layer: cuDNN's seeded dropout in training, a copy (or nothing) in evaluation.
#include "memory_tags.hpp"
#include <gpu/detail/expects.hpp>
#include <gpu/nn/dropout.hpp>

#include "layer_support.hpp"

#include <sstream>
#include <stdexcept>

namespace gpu::nn {

namespace {

// The shortest readable form (0.25, not std::to_string's 0.250000).
std::string probability_text(float probability)
{
    std::ostringstream text;
    text << probability;
    return text.str();
}

} // namespace

dropout::dropout(float probability, std::uint64_t seed) : probability_(probability), seed_(seed)
{
    GPU_EXPECTS(probability >= 0.0F && probability < 1.0F, std::invalid_argument,
                "gpu::nn::dropout: p ", probability_text(probability), " is outside [0, 1)");
}

std::string dropout::describe() const
{
    return "dropout(p " + probability_text(probability_) + ")";
}

tensor_spec dropout::do_plan(context& ctx, const tensor_spec& input)
{
    type_ = detail::dnn_type_of(describe(), input);
    (void)detail::dnn_dims(describe(), input); // cuDNN's limits: at most 2^31 - 1 elements
    elements_ = input.elements();
    bytes_ = input.bytes();
    if (probability_ == 0.0F) {
        reserve_ = device_buffer<std::byte>(); // the identity: no states, no mask
        return input;
    }
    // Made in inference mode too (layer.hpp): whether the context trains is read at each forward,
    // and a forward that drops writes its mask into this memory whether or not a backward follows.
    const std::size_t reserve = dnn::dropout::reserve_bytes(elements_, type_);
    reserve_ = device_buffer<std::byte>(); // the old mask goes before the new one is made
    dnn::handle& h = ctx.dnn();
    h.set_stream(ctx.stream());
    if (!dropout_) { // seeded once: a new batch size continues the same sequence of masks
        dropout_.emplace(h, probability_, seed_);
    }
    reserve_ = device_buffer<std::byte>(reserve, ctx.stream(), detail::scratch_tag);
    return input;
}

void dropout::do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output)
{
    if (!ctx.training() || probability_ == 0.0F) { // model.eval(): the output is the input
        dropped_ = false;
        detail::copy_device(output.data, input.data, bytes_, ctx.stream());
        return;
    }
    GPU_EXPECTS(
        input.data != output.data, std::invalid_argument, describe(),
        ": forward: the output is the input's memory; cuDNN does not document dropout in place, "
        "so a training forward needs an output of its own");
    dropped_ = true;
    dnn::handle& h = ctx.dnn();
    h.set_stream(ctx.stream());
    dropout_->forward_raw(h, type_, elements_, input.data, output.data, reserve_.data(),
                          reserve_.size());
}

void dropout::do_backward(context& ctx, const tensor_ref& output_gradient,
                          const tensor_ref& input_gradient)
{
    if (input_gradient.data == nullptr) {
        return; // no parameters: nothing else to compute
    }
    if (!dropped_) {
        detail::copy_device(input_gradient.data, output_gradient.data, bytes_, ctx.stream());
        return;
    }
    GPU_EXPECTS(
        input_gradient.data != output_gradient.data, std::invalid_argument, describe(),
        ": backward: the input gradient is the output gradient's memory; cuDNN does not document "
        "dropout's backward in place, so it needs memory of its own");
    dnn::handle& h = ctx.dnn();
    h.set_stream(ctx.stream());
    dropout_->backward_raw(h, type_, elements_, output_gradient.data, input_gradient.data,
                           reserve_.data(), reserve_.size());
}

} // namespace gpu::nn
