// gpu/nn/flatten.hpp: shapes, the view rule, and the layer contract (all on the host: a view
// moves no data).
#include <gpu/nn/flatten.hpp>

#include "catch.hpp"
#include "nn_test_support.hpp"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;

namespace {
void* fake(std::uintptr_t address)
{
    return reinterpret_cast<void*>(address);
}
} // namespace

TEST_CASE("flatten joins the dimensions from start_dim on", "[nn]")
{
    const nn::flatten flat;
    CHECK(flat.start_dim() == 1);
    CHECK(flat.output_is_view());
    CHECK(flat.describe() == "flatten(start_dim 1)");
    CHECK(flat.output_shape({64, 32, 7, 7}) == std::vector<std::int64_t>{64, 1568});
    CHECK(flat.output_shape({64, 10}) == std::vector<std::int64_t>{64, 10});
    CHECK(nn::flatten(0).output_shape({2, 3, 4}) == std::vector<std::int64_t>{24});
    CHECK(nn::flatten(2).output_shape({2, 3, 4, 5}) == std::vector<std::int64_t>{2, 3, 20});
    CHECK_THROWS_WITH(
        flat.output_shape({64}),
        ContainsSubstring("the input has 1 dimensions; flattening from dimension 1 needs more"));
    CHECK_THROWS_WITH(flat.output_shape({64, 0, 3}),
                      ContainsSubstring("dimension 1 of the input is 0"));
    const std::int64_t big = std::numeric_limits<std::int64_t>::max() / 2;
    CHECK_THROWS_WITH(flat.output_shape({1, big, 4}), ContainsSubstring("overflows"));
    CHECK_THROWS_WITH(nn::flatten(-1), ContainsSubstring("start_dim -1 is negative"));
}

TEST_CASE("flatten is planned, run forward and backward as a view of its input", "[nn]")
{
    nn::parameters store;
    gpu::test::host_context host(store);
    nn::flatten flat;
    const nn::tensor_spec in{.shape = {8, 4, 3, 3}, .type = gpu::element_type::fp16};
    CHECK_THROWS_WITH(flat.forward(host.ctx, {fake(0x1000), in}, {fake(0x1000), in}),
                      ContainsSubstring("flatten(start_dim 1): forward before plan"));
    const nn::tensor_spec out = flat.plan(host.ctx, in);
    CHECK(out == nn::tensor_spec{.shape = {8, 36}, .type = gpu::element_type::fp16});
    CHECK(flat.planned_input() == in);
    CHECK(flat.planned_output() == out);
    CHECK_THROWS_WITH(flat.backward(host.ctx, {fake(0x1000), out}, {fake(0x1000), in}),
                      ContainsSubstring("backward before a forward"));

    CHECK_NOTHROW(flat.forward(host.ctx, {fake(0x1000), in}, {fake(0x1000), out}));
    CHECK_THROWS_WITH(flat.forward(host.ctx, {fake(0x1000), in}, {fake(0x2000), out}),
                      ContainsSubstring("the output must be the input's memory"));
    CHECK_THROWS_WITH(
        flat.forward(host.ctx, {fake(0x1000), out}, {fake(0x1000), out}),
        ContainsSubstring("forward: the input is FP16 [8, 36] nchw but the layer was planned for "
                          "FP16 [8, 4, 3, 3] nchw"));
    CHECK_THROWS_WITH(flat.forward(host.ctx, {nullptr, in}, {nullptr, out}),
                      ContainsSubstring("the input (FP16 [8, 4, 3, 3] nchw) has a null address"));
    CHECK_NOTHROW(flat.backward(host.ctx, {fake(0x3000), out}, {fake(0x3000), in}));
    CHECK_NOTHROW(flat.backward(host.ctx, {fake(0x3000), out}, {})); // input gradient not needed
    CHECK_THROWS_WITH(flat.backward(host.ctx, {fake(0x3000), out}, {fake(0x4000), in}),
                      ContainsSubstring("the input gradient must be the output gradient's memory"));
    CHECK_THROWS_WITH(flat.backward(host.ctx, {fake(0x3000), in}, {fake(0x3000), in}),
                      ContainsSubstring("backward: the output gradient is FP16 [8, 4, 3, 3] nchw"));
}

TEST_CASE("flatten refuses a channels-last input, whose order is not PyTorch's", "[nn]")
{
    nn::parameters store;
    gpu::test::host_context host(store);
    nn::flatten flat;
    const nn::tensor_spec nhwc{.shape = {8, 4, 3, 3}, .layout = gpu::dnn::tensor_layout::nhwc};
    CHECK_THROWS_WITH(flat.plan(host.ctx, nhwc),
                      ContainsSubstring("FP32 [8, 4, 3, 3] nhwc is channels-last"));
    CHECK_FALSE(flat.planned_input().has_value()); // a refused plan leaves the layer unplanned
}
