// gpu/nn/mixed_precision.hpp: the autocast rules of every operation and the policies.
#include <gpu/nn/mixed_precision.hpp>

#include "catch.hpp"

#include <stdexcept>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;
using gpu::element_type;

TEST_CASE("each operation has PyTorch's autocast rule", "[nn]")
{
    STATIC_REQUIRE(nn::rule_of(nn::autocast_op::linear) == nn::autocast_rule::compute_type);
    STATIC_REQUIRE(nn::rule_of(nn::autocast_op::conv2d) == nn::autocast_rule::compute_type);
    STATIC_REQUIRE(nn::rule_of(nn::autocast_op::softmax) == nn::autocast_rule::fp32);
    STATIC_REQUIRE(nn::rule_of(nn::autocast_op::log_softmax) == nn::autocast_rule::fp32);
    STATIC_REQUIRE(nn::rule_of(nn::autocast_op::cross_entropy) == nn::autocast_rule::fp32);
    STATIC_REQUIRE(nn::rule_of(nn::autocast_op::relu) == nn::autocast_rule::input_type);
    STATIC_REQUIRE(nn::rule_of(nn::autocast_op::max_pool2d) == nn::autocast_rule::input_type);
    STATIC_REQUIRE(nn::rule_of(nn::autocast_op::dropout) == nn::autocast_rule::input_type);
    STATIC_REQUIRE(nn::rule_of(nn::autocast_op::flatten) == nn::autocast_rule::input_type);
    CHECK(nn::to_string(nn::autocast_rule::compute_type) == "compute_type");
    CHECK(nn::to_string(nn::autocast_op::cross_entropy) == "cross_entropy");
    CHECK(nn::to_string(static_cast<nn::autocast_op>(42)) == "unknown");
}

TEST_CASE("a policy gives each operation's output type", "[nn]")
{
    const nn::mixed_precision half = nn::mixed_precision::fp16();
    CHECK(half.output_type(nn::autocast_op::linear, element_type::fp32) == element_type::fp16);
    CHECK(half.output_type(nn::autocast_op::cross_entropy, element_type::fp16) ==
          element_type::fp32);
    CHECK(half.output_type(nn::autocast_op::relu, element_type::fp16) == element_type::fp16);
    CHECK(half.output_type(nn::autocast_op::relu, element_type::fp32) == element_type::fp32);
    const nn::mixed_precision brain = nn::mixed_precision::bf16();
    CHECK(brain.output_type(nn::autocast_op::conv2d, element_type::fp32) == element_type::bf16);
    const nn::mixed_precision full = nn::mixed_precision::fp32();
    CHECK(full.output_type(nn::autocast_op::linear, element_type::fp32) == element_type::fp32);
    CHECK(full == nn::mixed_precision{});
    CHECK_THROWS_WITH(half.output_type(static_cast<nn::autocast_op>(42), element_type::fp16),
                      ContainsSubstring("operation 42 is not a gpu::nn::autocast_op"));
}

TEST_CASE("a policy is named fp16, bf16 or fp32 on a command line", "[nn]")
{
    CHECK(nn::mixed_precision::from_name("fp16") == nn::mixed_precision::fp16());
    CHECK(nn::mixed_precision::from_name("bf16") == nn::mixed_precision::bf16());
    CHECK(nn::mixed_precision::from_name("fp32") == nn::mixed_precision::fp32());
    CHECK_THROWS_WITH(nn::mixed_precision::from_name("fp8"),
                      ContainsSubstring("unknown precision 'fp8' (fp16, bf16, fp32)"));
    CHECK_THROWS_AS(nn::mixed_precision::from_name("FP16"), std::invalid_argument);
    CHECK_THROWS_WITH(nn::mixed_precision::from_name("fp64"),
                      ContainsSubstring("unknown precision 'fp64' (fp16, bf16, fp32)"));
    for (const element_type type : {element_type::fp16, element_type::bf16, element_type::fp32}) {
        CHECK(nn::mixed_precision::from_name(gpu::enumerator_name(type)).compute == type);
    }
}

TEST_CASE("only FP16 needs loss scaling, and only FP32, FP16 and BF16 are policies", "[nn]")
{
    STATIC_REQUIRE(nn::mixed_precision::fp16().needs_loss_scaling());
    STATIC_REQUIRE_FALSE(nn::mixed_precision::bf16().needs_loss_scaling());
    STATIC_REQUIRE_FALSE(nn::mixed_precision::fp32().needs_loss_scaling());
    CHECK_NOTHROW(nn::mixed_precision::bf16().validate());
    CHECK_THROWS_WITH(
        nn::mixed_precision{element_type::fp64}.validate(),
        ContainsSubstring("the compute precision is FP64 (1); FP32, FP16 or BF16 are allowed"));
    CHECK_THROWS_AS(nn::mixed_precision{static_cast<element_type>(9)}.validate(),
                    std::invalid_argument);
}
