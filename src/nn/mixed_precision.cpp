// The autocast policy: names, and the type each operation produces.
#include <gpu/detail/enum_names.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/nn/mixed_precision.hpp>

#include <algorithm>
#include <stdexcept>
#include <string>

namespace gpu::nn {

constexpr gpu::detail::enum_name<autocast_rule> autocast_rule_names[] = {
    {autocast_rule::compute_type, "compute_type"},
    {autocast_rule::fp32, "fp32"},
    {autocast_rule::input_type, "input_type"}};
std::string_view to_string(autocast_rule rule) noexcept
{
    return gpu::detail::name_of(autocast_rule_names, rule);
}

constexpr gpu::detail::enum_name<autocast_op> autocast_op_names[] = {
    {autocast_op::linear, "linear"},
    {autocast_op::conv2d, "conv2d"},
    {autocast_op::relu, "relu"},
    {autocast_op::max_pool2d, "max_pool2d"},
    {autocast_op::dropout, "dropout"},
    {autocast_op::flatten, "flatten"},
    {autocast_op::softmax, "softmax"},
    {autocast_op::log_softmax, "log_softmax"},
    {autocast_op::cross_entropy, "cross_entropy"}};
std::string_view to_string(autocast_op op) noexcept
{
    return gpu::detail::name_of(autocast_op_names, op);
}

namespace {
// The compute precisions a policy may have, in the order its refusals list them. FP64 is not one:
// it has no tensor cores to gain.
constexpr element_type compute_types[] = {element_type::fp16, element_type::bf16,
                                          element_type::fp32};
} // namespace

mixed_precision mixed_precision::from_name(std::string_view name)
{
    std::string choices;
    for (const element_type type : compute_types) {
        if (enumerator_name(type) == name) {
            return {type};
        }
        choices += (choices.empty() ? "" : ", ") + std::string(enumerator_name(type));
    }
    gpu::detail::fail<std::invalid_argument>("unknown precision '", name, "' (", choices, ")");
}

void mixed_precision::validate() const
{
    GPU_EXPECTS(std::ranges::find(compute_types, compute) != std::ranges::end(compute_types),
                std::invalid_argument, "gpu::nn::mixed_precision: the compute precision is ",
                to_string(compute), " (", static_cast<int>(compute),
                "); FP32, FP16 or BF16 are allowed");
}

element_type mixed_precision::output_type(autocast_op op, element_type input) const
{
    validate();
    GPU_EXPECTS(gpu::detail::is_named(autocast_op_names, op), std::invalid_argument,
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
