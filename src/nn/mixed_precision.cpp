// The autocast policy: names, and the type each operation produces.
#include <gpu/detail/expects.hpp>
#include <gpu/nn/mixed_precision.hpp>

#include <stdexcept>

namespace gpu::nn {

std::string_view to_string(autocast_rule rule) noexcept
{
    switch (rule) {
    case autocast_rule::compute_type: return "compute_type";
    case autocast_rule::fp32: return "fp32";
    case autocast_rule::input_type: return "input_type";
    }
    return "unknown";
}

std::string_view to_string(autocast_op op) noexcept
{
    switch (op) {
    case autocast_op::linear: return "linear";
    case autocast_op::conv2d: return "conv2d";
    case autocast_op::relu: return "relu";
    case autocast_op::max_pool2d: return "max_pool2d";
    case autocast_op::dropout: return "dropout";
    case autocast_op::flatten: return "flatten";
    case autocast_op::softmax: return "softmax";
    case autocast_op::log_softmax: return "log_softmax";
    case autocast_op::cross_entropy: return "cross_entropy";
    }
    return "unknown";
}

mixed_precision mixed_precision::from_name(std::string_view name)
{
    if (name == "fp16") {
        return fp16();
    }
    if (name == "bf16") {
        return bf16();
    }
    GPU_EXPECTS(name == "fp32", std::invalid_argument, "unknown precision '", name,
                "' (fp16, bf16, fp32)");
    return fp32();
}

void mixed_precision::validate() const
{
    const bool known = compute == element_type::fp32 || compute == element_type::fp16 ||
                       compute == element_type::bf16;
    GPU_EXPECTS(known, std::invalid_argument, "gpu::nn::mixed_precision: the compute precision is ",
                to_string(compute), " (", static_cast<int>(compute),
                "); FP32, FP16 or BF16 are allowed");
}

element_type mixed_precision::output_type(autocast_op op, element_type input) const
{
    validate();
    GPU_EXPECTS(to_string(op) != "unknown", std::invalid_argument,
                "gpu::nn::mixed_precision::output_type: operation ", static_cast<int>(op),
                " is not a gpu::nn::autocast_op");
    switch (rule_of(op)) {
    case autocast_rule::compute_type: return compute;
    case autocast_rule::fp32: return element_type::fp32;
    case autocast_rule::input_type: break;
    }
    return input;
}

} // namespace gpu::nn
