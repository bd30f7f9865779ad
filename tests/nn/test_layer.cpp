// gpu/nn/layer.hpp: the contract every layer inherits, on a probe layer that records its calls.
#include <gpu/nn/layer.hpp>

#include "catch.hpp"
#include "nn_test_support.hpp"

#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;

static_assert(std::is_abstract_v<nn::layer>);
static_assert(!std::is_copy_constructible_v<nn::layer>);

using gpu::test::fake_device_address;

namespace {

// Doubles the last dimension; records what the base let through.
class probe : public nn::layer {
public:
    explicit probe(nn::parameters& store) : layer(store) {}
    [[nodiscard]] std::string describe() const override { return "probe"; }
    std::vector<std::string> calls;

private:
    nn::tensor_spec do_plan(nn::context&, const nn::tensor_spec& input) override
    {
        if (input.shape.empty()) {
            throw std::invalid_argument("probe: no dimensions");
        }
        calls.emplace_back("plan");
        nn::tensor_spec output = input;
        output.shape.back() *= 2;
        return output;
    }
    void do_forward(nn::context&, const nn::tensor_ref&, const nn::tensor_ref&) override
    {
        calls.emplace_back("forward");
    }
    void do_backward(nn::context&, const nn::tensor_ref&,
                     const nn::tensor_ref& input_gradient) override
    {
        calls.emplace_back(input_gradient.data == nullptr ? "backward without dx" : "backward");
    }
};

} // namespace

TEST_CASE("a layer is planned, then run forward, then backward, on the planned specs", "[nn]")
{
    nn::parameters store;
    gpu::test::host_context host(store);
    probe p(store);
    const nn::tensor_spec in{.shape = {4, 3}};
    const nn::tensor_spec out = p.plan(host.ctx, in);
    CHECK(out.shape == std::vector<std::int64_t>{4, 6});
    CHECK_THROWS_AS(
        p.backward(host.ctx, {fake_device_address(0x10), out}, {fake_device_address(0x20), in}),
        std::logic_error);
    p.forward(host.ctx, {fake_device_address(0x10), in}, {fake_device_address(0x20), out});
    p.backward(host.ctx, {fake_device_address(0x30), out}, {fake_device_address(0x40), in});
    p.backward(host.ctx, {fake_device_address(0x30), out}, {nullptr, {}});
    CHECK(p.calls ==
          std::vector<std::string>{"plan", "forward", "backward", "backward without dx"});

    // Planning again (another batch size) asks for a new forward before a backward.
    const nn::tensor_spec bigger{.shape = {8, 3}};
    p.plan(host.ctx, bigger);
    CHECK_THROWS_WITH(p.backward(host.ctx, {fake_device_address(0x30), {.shape = {8, 6}}}, {}),
                      ContainsSubstring("probe: backward before a forward with the current plan"));
    CHECK_THROWS_WITH(
        p.forward(host.ctx, {fake_device_address(0x10), in}, {fake_device_address(0x20), out}),
        ContainsSubstring("probe: forward: the input is FP32 [4, 3] nchw but the layer was "
                          "planned for FP32 [8, 3] nchw (plan again for another batch size)"));
    // A refused plan leaves the layer unplanned.
    CHECK_THROWS_AS(p.plan(host.ctx, nn::tensor_spec{}), std::invalid_argument);
    CHECK_FALSE(p.planned_input().has_value());
    CHECK_THROWS_WITH(p.forward(host.ctx, {fake_device_address(0x10), bigger},
                                {fake_device_address(0x20), {.shape = {8, 6}}}),
                      ContainsSubstring("probe: forward before plan"));
}

TEST_CASE("a layer planned in inference mode runs forward and refuses backward until planned again",
          "[nn]")
{
    nn::parameters store;
    gpu::test::host_context host(store);
    probe p(store);
    const nn::tensor_spec in{.shape = {4, 3}};
    CHECK_FALSE(p.planned_for_inference());
    host.ctx.set_inference_mode(true);
    const nn::tensor_spec out = p.plan(host.ctx, in);
    CHECK(p.planned_for_inference());
    p.forward(host.ctx, {fake_device_address(0x10), in}, {fake_device_address(0x20), out});
    CHECK_THROWS_WITH(
        p.backward(host.ctx, {fake_device_address(0x30), out}, {fake_device_address(0x40), in}),
        ContainsSubstring("probe: backward after a plan made in inference mode"));
    // The mode is read at plan time: turning it off does not change the current plan.
    host.ctx.set_inference_mode(false);
    CHECK_THROWS_AS(
        p.backward(host.ctx, {fake_device_address(0x30), out}, {fake_device_address(0x40), in}),
        std::logic_error);
    p.plan(host.ctx, in);
    CHECK_FALSE(p.planned_for_inference());
    p.forward(host.ctx, {fake_device_address(0x10), in}, {fake_device_address(0x20), out});
    p.backward(host.ctx, {fake_device_address(0x30), out}, {fake_device_address(0x40), in});
    CHECK(p.calls == std::vector<std::string>{"plan", "forward", "plan", "forward", "backward"});
}

TEST_CASE("a layer refuses a context whose store is not the one it registered in", "[nn]")
{
    nn::parameters store;
    nn::parameters other;
    gpu::test::host_context host(other);
    probe p(store);
    CHECK_THROWS_WITH(
        p.plan(host.ctx, {.shape = {2, 2}}),
        ContainsSubstring("probe: plan: the context's parameter store is not the one the layer "
                          "registered in"));
}
