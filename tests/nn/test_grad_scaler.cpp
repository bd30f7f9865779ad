// gpu/nn/grad_scaler.hpp. On the host: every option check (before anything is allocated), the
// precision advice and its words. On a GPU: unscaling, the flag, skipping a step and backing off
// on an injected Inf, growing after the interval, the disabled scaler, and the checkpoint state.
#include <gpu/memory.hpp>
#include <gpu/nn/adamw.hpp>
#include <gpu/nn/grad_scaler.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include "test_support.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::nn::grad_scaler;
using gpu::nn::grad_scaler_options;

TEST_CASE("grad_scaler defaults are torch.amp.GradScaler's", "[nn][grad_scaler]")
{
    const grad_scaler_options defaults{};
    CHECK(defaults.init_scale == 65536.0F);
    CHECK(defaults.growth_factor == 2.0F);
    CHECK(defaults.backoff_factor == 0.5F);
    CHECK(defaults.growth_interval == 2000);
    CHECK(defaults.enabled);
    const gpu::nn::grad_scaler_state state{};
    CHECK(state.scale == 65536.0F);
    CHECK(state.growth_tracker == 0);
}

TEST_CASE("grad_scaler refuses options out of range, naming them, before allocating",
          "[nn][grad_scaler]")
{
    // No device memory is touched before the checks: these throw the same with or without a GPU.
    const auto refused = [](const grad_scaler_options& options, const std::string& words) {
        CHECK_THROWS_AS(grad_scaler(gpu::legacy_default_stream, options), std::invalid_argument);
        CHECK_THROWS_WITH(grad_scaler(gpu::legacy_default_stream, options),
                          ContainsSubstring(words));
    };
    refused({.init_scale = 0.0F}, "init_scale 0");
    refused({.init_scale = -2.0F}, "init_scale -2");
    refused({.init_scale = std::numeric_limits<float>::infinity()}, "init_scale inf");
    refused({.growth_factor = 1.0F}, "growth_factor 1");
    refused({.growth_factor = std::numeric_limits<float>::quiet_NaN()}, "growth_factor nan");
    refused({.backoff_factor = 1.0F}, "backoff_factor 1");
    refused({.backoff_factor = 0.0F}, "backoff_factor 0");
    refused({.growth_interval = 0}, "growth_interval 0");
    refused({.growth_interval = -5}, "growth_interval -5");
    // A disabled scaler's options are checked all the same.
    refused({.growth_factor = 0.5F, .enabled = false}, "growth_factor 0.5");
    CHECK_THROWS_AS(grad_scaler::for_precision(gpu::element_type::bf16, gpu::legacy_default_stream,
                                               {.backoff_factor = 2.0F}),
                    std::invalid_argument);
}

TEST_CASE("loss scaling is advised for FP16 only, with the reason", "[nn][grad_scaler]")
{
    const gpu::nn::loss_scaling_advice fp16 = gpu::nn::advise_loss_scaling(gpu::element_type::fp16);
    CHECK(fp16.needed);
    CHECK_THAT(fp16.reason, ContainsSubstring("FP16") && ContainsSubstring("2^-24"));
    const gpu::nn::loss_scaling_advice bf16 = gpu::nn::advise_loss_scaling(gpu::element_type::bf16);
    CHECK_FALSE(bf16.needed);
    CHECK_THAT(bf16.reason,
               ContainsSubstring("BF16") && ContainsSubstring("no loss scaling is needed"));
    CHECK_FALSE(gpu::nn::advise_loss_scaling(gpu::element_type::fp32).needed);
    CHECK_FALSE(gpu::nn::advise_loss_scaling(gpu::element_type::fp64).needed);
    CHECK_THROWS_WITH(gpu::nn::advise_loss_scaling(static_cast<gpu::element_type>(7)),
                      ContainsSubstring("element_type value 7"));
    CHECK_THROWS_AS(
        grad_scaler::for_precision(static_cast<gpu::element_type>(7), gpu::legacy_default_stream),
        std::invalid_argument);
}

namespace {

std::vector<float> read(const gpu::device_buffer<float>& buffer)
{
    return buffer.to_host();
}

// A scaler with a small interval for the tests: scale 1024, grows x2 after 3 good steps.
grad_scaler small_scaler(gpu::stream_ref s)
{
    return grad_scaler(s, {.init_scale = 1024.0F, .growth_interval = 3});
}

} // namespace

TEST_CASE("unscale divides by the scale and flags Inf and NaN", "[nn][grad_scaler][gpu]")
{
    gpu::stream s;
    grad_scaler scaler = small_scaler(s);
    CHECK(scaler.enabled());
    CHECK(scaler.current_scale(s) == 1024.0F);
    CHECK_FALSE(scaler.found_inf(s));
    CHECK(scaler.growth_tracker(s) == 0);

    // Over 1M elements, so the kernel's grid-stride loop runs more than once per thread.
    const std::size_t n = (std::size_t{1} << 20) + 4099;
    std::vector<float> host = gpu::test::random_floats(n, 3);
    auto grads = gpu::device_buffer<float>::from_host(host, s);
    scaler.unscale(grads, s);
    CHECK(scaler.unscaled());
    const std::vector<float> out = read(grads);
    bool exact = true;
    for (std::size_t i = 0; i < n; ++i) {
        exact = exact && out[i] == host[i] / 1024.0F; // a power of two: exact
    }
    CHECK(exact);
    CHECK_FALSE(scaler.found_inf(s));

    host[n - 1] = std::numeric_limits<float>::quiet_NaN(); // the very last element
    auto bad = gpu::device_buffer<float>::from_host(host, s);
    scaler.check(bad, s);
    CHECK(scaler.found_inf(s));
    CHECK(std::isnan(read(bad)[n - 1])); // check leaves the values as they are
    CHECK(read(bad)[0] == host[0]);
}

TEST_CASE("an injected Inf skips the AdamW step and backs the scale off", "[nn][grad_scaler][gpu]")
{
    gpu::stream s;
    grad_scaler scaler = small_scaler(s);
    const std::vector<float> start = gpu::test::random_floats(1000, 4);
    auto params = gpu::device_buffer<float>::from_host(start, s);
    std::vector<float> g = gpu::test::random_floats(1000, 5);
    g[321] = std::numeric_limits<float>::infinity();
    auto grads = gpu::device_buffer<float>::from_host(g, s);
    gpu::nn::adamw optimizer(params.size(), s);

    optimizer.step(params, grads, scaler, s); // checks, then skips on the device
    CHECK(scaler.found_inf(s));
    scaler.update(s);
    CHECK(read(params) == start);
    CHECK(optimizer.step_count(s) == 0);
    CHECK(read(optimizer.exp_avg()) == std::vector<float>(1000, 0.0F));
    CHECK(scaler.current_scale(s) == 512.0F);
    CHECK(scaler.growth_tracker(s) == 0);
    CHECK(scaler.found_inf(s)); // still telling that the last step was skipped

    // The next step's first check clears the flag: a clean step runs and counts.
    g[321] = 0.25F;
    grads.copy_from_host(g);
    optimizer.step(params, grads, scaler, s);
    CHECK_FALSE(scaler.found_inf(s));
    scaler.update(s);
    CHECK(optimizer.step_count(s) == 1);
    CHECK(read(params) != start);
    CHECK(scaler.current_scale(s) == 512.0F);
    CHECK(scaler.growth_tracker(s) == 1);
}

TEST_CASE("the scale grows after growth_interval clean steps", "[nn][grad_scaler][gpu]")
{
    gpu::stream s;
    grad_scaler scaler = small_scaler(s);
    auto grads = gpu::device_buffer<float>::from_host(gpu::test::random_floats(100, 6), s);
    for (int step = 1; step <= 2; ++step) {
        scaler.check(grads, s);
        scaler.update(s);
        CHECK(scaler.growth_tracker(s) == step);
    }
    CHECK(scaler.current_scale(s) == 1024.0F);
    scaler.check(grads, s);
    scaler.update(s);
    CHECK(scaler.current_scale(s) == 2048.0F);
    CHECK(scaler.growth_tracker(s) == 0);
    CHECK_FALSE(scaler.found_inf(s));
}

TEST_CASE("several buffers checked in one step share the flag", "[nn][grad_scaler][gpu]")
{
    gpu::stream s;
    grad_scaler scaler = small_scaler(s);
    std::vector<float> bad = gpu::test::random_floats(64, 7);
    bad[3] = -std::numeric_limits<float>::infinity();
    auto first = gpu::device_buffer<float>::from_host(bad, s);
    auto second = gpu::device_buffer<float>::from_host(gpu::test::random_floats(64, 8), s);
    scaler.unscale(first, s);
    scaler.unscale(second, s); // clean, but the flag the first set stays
    CHECK(scaler.found_inf(s));
    scaler.update(s);
    CHECK(scaler.current_scale(s) == 512.0F);
}

TEST_CASE("update without a check since the last one is refused", "[nn][grad_scaler][gpu]")
{
    gpu::stream s;
    grad_scaler scaler = small_scaler(s);
    CHECK_THROWS_WITH(scaler.update(s), ContainsSubstring("no gradients were checked"));
    auto grads = gpu::device_buffer<float>::from_host(gpu::test::random_floats(8, 9), s);
    scaler.check(grads, s);
    scaler.update(s);
    CHECK_THROWS_AS(scaler.update(s), std::logic_error);
    CHECK_THROWS_WITH(scaler.unscale(nullptr, 5, s), ContainsSubstring("null gradients for 5"));
    CHECK_THROWS_AS(scaler.check(nullptr, 1, s), std::invalid_argument);
}

TEST_CASE("a disabled scaler is the identity and says why", "[nn][grad_scaler][gpu]")
{
    gpu::stream s;
    grad_scaler scaler = grad_scaler::for_precision(gpu::element_type::bf16, s);
    CHECK_FALSE(scaler.enabled());
    CHECK_FALSE(scaler.options().enabled);
    CHECK_THAT(scaler.reason(), ContainsSubstring("BF16"));
    CHECK_THAT(scaler.to_string(),
               ContainsSubstring("disabled (scale 1)") && ContainsSubstring("BF16"));
    CHECK(scaler.current_scale(s) == 1.0F);
    float device_scale = 0.0F;
    REQUIRE(cudaMemcpy(&device_scale, scaler.scale(), sizeof device_scale,
                       cudaMemcpyDeviceToHost) == cudaSuccess);
    CHECK(device_scale == 1.0F);

    std::vector<float> g = gpu::test::random_floats(16, 10);
    g[0] = std::numeric_limits<float>::quiet_NaN();
    auto grads = gpu::device_buffer<float>::from_host(g, s);
    scaler.unscale(grads, s);
    scaler.update(s); // no check needed: nothing to do
    CHECK_FALSE(scaler.found_inf(s));
    CHECK(read(grads)[1] == g[1]);
    scaler.load_state({.scale = 8.0F, .growth_tracker = 1}, s); // ignored, as PyTorch's
    CHECK(scaler.current_scale(s) == 1.0F);

    const grad_scaler fp16 = grad_scaler::for_precision(gpu::element_type::fp16, s);
    CHECK(fp16.enabled());
    CHECK_THAT(fp16.to_string(), ContainsSubstring("enabled, init scale 65536") &&
                                     ContainsSubstring("after 2000 steps"));
    const grad_scaler off =
        grad_scaler::for_precision(gpu::element_type::fp16, s, {.enabled = false});
    CHECK_FALSE(off.enabled());
    CHECK_THAT(off.reason(), ContainsSubstring("enabled is false"));
}

TEST_CASE("scaler state goes to a checkpoint and back", "[nn][grad_scaler][gpu]")
{
    gpu::stream s;
    grad_scaler scaler = small_scaler(s);
    auto grads = gpu::device_buffer<float>::from_host(gpu::test::random_floats(8, 11), s);
    scaler.check(grads, s);
    scaler.update(s);
    const gpu::nn::grad_scaler_state saved = scaler.state(s);
    CHECK(saved.scale == 1024.0F);
    CHECK(saved.growth_tracker == 1);

    grad_scaler restored(s, {.init_scale = 1.0F, .growth_interval = 3});
    restored.load_state(saved, s);
    CHECK(restored.current_scale(s) == 1024.0F);
    CHECK(restored.growth_tracker(s) == 1);
    CHECK_THROWS_WITH(restored.load_state({.scale = 0.0F}, s), ContainsSubstring("scale 0"));
    CHECK_THROWS_WITH(restored.load_state({.scale = 2.0F, .growth_tracker = 3}, s),
                      ContainsSubstring("growth_tracker 3"));
    // Two more clean steps reach the interval from the restored tracker.
    for (int step = 0; step < 2; ++step) {
        restored.check(grads, s);
        restored.update(s);
    }
    CHECK(restored.current_scale(s) == 2048.0F);
}

TEST_CASE("a moved-from scaler refuses to work", "[nn][grad_scaler][gpu]")
{
    gpu::stream s;
    grad_scaler scaler = small_scaler(s);
    const grad_scaler taken = std::move(scaler);
    CHECK(taken.current_scale(s) == 1024.0F);
    // NOLINTBEGIN(bugprone-use-after-move): the moved-from state is what is tested
    CHECK_THROWS_AS(scaler.scale(), std::logic_error);
    CHECK_THROWS_AS(scaler.current_scale(s), std::logic_error);
    CHECK_THROWS_WITH(scaler.update(s), ContainsSubstring("moved from"));
    // NOLINTEND(bugprone-use-after-move)
}
