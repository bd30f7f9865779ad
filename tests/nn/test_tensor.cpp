// gpu/nn/tensor.hpp: specs (counts, text, checks) and the owning tensor.
#include <gpu/nn/tensor.hpp>

#include "catch.hpp"

#include <gpu/stream.hpp>

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;

TEST_CASE("a tensor spec counts its elements and bytes, and says what it is", "[nn]")
{
    const nn::tensor_spec spec{.shape = {64, 1, 28, 28}, .type = gpu::element_type::fp16};
    CHECK(spec.elements() == 64 * 28 * 28);
    CHECK(spec.bytes() == 2 * 64 * 28 * 28);
    CHECK(spec.to_string() == "FP16 [64, 1, 28, 28] nchw");
    CHECK(nn::tensor_spec{}.elements() == 1);
    CHECK(nn::tensor_spec{.shape = {3, 0}}.elements() == 0);
    const nn::tensor_spec nhwc{.shape = {2, 3}, .layout = gpu::dnn::tensor_layout::nhwc};
    CHECK(nhwc.to_string() == "FP32 [2, 3] nhwc");
    CHECK(nhwc != nn::tensor_spec{.shape = {2, 3}});
}

TEST_CASE("a tensor spec refuses negative dimensions and counts that overflow", "[nn]")
{
    CHECK_THROWS_WITH((nn::tensor_spec{.shape = {4, -1}}.elements()),
                      ContainsSubstring("FP32 [4, -1] nchw has a negative dimension"));
    const std::int64_t big = std::numeric_limits<std::int64_t>::max();
    CHECK_THROWS_WITH((nn::tensor_spec{.shape = {big, big}}.elements()),
                      ContainsSubstring("overflows"));
    CHECK_THROWS_AS((nn::tensor_spec{.shape = {big / 2}, .type = gpu::element_type::fp64}.bytes()),
                    std::invalid_argument);
    CHECK_THROWS_WITH(
        (nn::tensor_spec{.shape = {2}, .type = static_cast<gpu::element_type>(7)}.bytes()),
        ContainsSubstring("element type 7 is not a gpu::element_type"));
}

TEST_CASE("an empty tensor owns nothing", "[nn]")
{
    nn::tensor empty;
    CHECK(empty.data() == nullptr);
    CHECK(empty.ref().data == nullptr);
    CHECK(empty.buffer().empty());
}

TEST_CASE("a tensor allocates its spec's bytes", "[nn][gpu]")
{
    const gpu::stream stream;
    nn::tensor t({.shape = {3, 5}, .type = gpu::element_type::bf16}, stream);
    CHECK(t.buffer().size() == 30);
    CHECK(t.ref().data == t.data());
    CHECK(t.ref().spec == t.spec());
}
