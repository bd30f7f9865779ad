// gpu/nn/adamw.hpp. On the host: the defaults and every option check (before anything is
// allocated). On a GPU: the fused kernel against a float64 reference of PyTorch's documented
// algorithm after several steps, found_inf and grad_scale on the device, checkpoints, argument
// checks on a live optimizer, and a step captured in a CUDA graph replaying like eager steps.
#include <gpu/memory.hpp>
#include <gpu/nn/adamw.hpp>
#include <gpu/nn/grad_scaler.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include "test_support.hpp"
#include <element_cast.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::nn::adamw;
using gpu::nn::adamw_options;

TEST_CASE("adamw defaults are torch.optim.AdamW's", "[nn][adamw]")
{
    const adamw_options o{};
    CHECK(o.lr == 1e-3);
    CHECK(o.beta1 == 0.9);
    CHECK(o.beta2 == 0.999);
    CHECK(o.eps == 1e-8);
    CHECK(o.weight_decay == 1e-2);
}

TEST_CASE("adamw refuses options out of range, naming them, before allocating", "[nn][adamw]")
{
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const auto refused = [](const adamw_options& options, const std::string& words) {
        CHECK_THROWS_AS(adamw(10, gpu::legacy_default_stream, options), std::invalid_argument);
        CHECK_THROWS_WITH(adamw(10, gpu::legacy_default_stream, options), ContainsSubstring(words));
    };
    refused({.lr = -1e-3}, "lr -0.001");
    refused({.lr = nan}, "lr nan");
    refused({.lr = std::numeric_limits<double>::infinity()}, "lr inf");
    refused({.beta1 = 1.0}, "beta1 1");
    refused({.beta1 = -0.1}, "beta1 -0.1");
    refused({.beta2 = 1.5}, "beta2 1.5");
    refused({.beta2 = nan}, "beta2 nan");
    refused({.eps = -1e-8}, "eps -0.0000");
    refused({.weight_decay = -0.01}, "weight_decay -0.01");
    refused({.weight_decay = nan}, "weight_decay nan");
}

namespace {

// torch.optim.AdamW's documented algorithm in float64 (as tests/nn/test_update_rules.cpp).
struct reference {
    adamw_options o;
    std::vector<double> m, v;
    int t = 0;

    void step(std::vector<double>& theta, const std::vector<float>& g, double grad_scale = 1.0)
    {
        ++t;
        for (std::size_t i = 0; i < theta.size(); ++i) {
            const double gi = g[i] / grad_scale;
            theta[i] -= o.lr * o.weight_decay * theta[i];
            m[i] = o.beta1 * m[i] + (1 - o.beta1) * gi;
            v[i] = o.beta2 * v[i] + (1 - o.beta2) * gi * gi;
            const double mhat = m[i] / (1 - std::pow(o.beta1, t));
            const double vhat = v[i] / (1 - std::pow(o.beta2, t));
            theta[i] -= o.lr * mhat / (std::sqrt(vhat) + o.eps);
        }
    }
};

gpu::device_buffer<float> device_float(float value, gpu::stream_ref s)
{
    return gpu::device_buffer<float>::from_host(std::vector<float>{value}, s);
}

} // namespace

TEST_CASE("the fused AdamW kernel matches the float64 reference after several steps",
          "[nn][adamw][gpu]")
{
    gpu::stream s;
    // Over 1M parameters: the grid-stride loop runs more than once per thread.
    const std::size_t n = (std::size_t{1} << 20) + 777;
    const adamw_options options{.lr = 1e-2, .weight_decay = 0.1};
    const std::vector<float> start = gpu::test::random_floats(n, 1);
    auto params = gpu::device_buffer<float>::from_host(start, s);
    gpu::device_buffer<float> grads(n, s);
    adamw optimizer(n, s, options);
    CHECK(optimizer.size() == n);
    CHECK(optimizer.step_count(s) == 0);

    std::vector<double> theta = gpu::test::widened(start);
    reference ref{options, std::vector<double>(n), std::vector<double>(n)};
    for (std::uint32_t step = 0; step < 6; ++step) {
        const std::vector<float> g = gpu::test::random_floats(n, 10 + step);
        grads.copy_from_host(g);
        optimizer.step(params, grads, s);
        ref.step(theta, g);
    }
    CHECK(optimizer.step_count(s) == 6);
    CHECK(gpu::test::relative_error<float>(params.to_host(), theta) < 1e-5);
    CHECK(gpu::test::relative_error<float>(optimizer.exp_avg().to_host(), ref.m) < 1e-5);
    CHECK(gpu::test::relative_error<float>(optimizer.exp_avg_sq().to_host(), ref.v) < 1e-5);
}

TEST_CASE("found_inf on the device skips the whole step and keeps the count", "[nn][adamw][gpu]")
{
    gpu::stream s;
    const std::size_t n = 5000;
    auto params = gpu::device_buffer<float>::from_host(gpu::test::random_floats(n, 2), s);
    auto grads = gpu::device_buffer<float>::from_host(gpu::test::random_floats(n, 3), s);
    adamw optimizer(n, s);
    optimizer.step(params, grads, s);
    const std::vector<float> p1 = params.to_host();
    const std::vector<float> m1 = optimizer.exp_avg().to_host();
    const std::vector<float> v1 = optimizer.exp_avg_sq().to_host();

    auto found = device_float(1.0F, s);
    optimizer.step(params, grads, s, found.data());
    CHECK(params.to_host() == p1);
    CHECK(optimizer.exp_avg().to_host() == m1);
    CHECK(optimizer.exp_avg_sq().to_host() == v1);
    CHECK(optimizer.step_count(s) == 1);

    found.copy_from_host(std::vector<float>{0.0F});
    optimizer.step(params, grads, s, found.data());
    CHECK(optimizer.step_count(s) == 2);
    CHECK(params.to_host() != p1);
}

TEST_CASE("grad_scale divides the gradients inside the kernel", "[nn][adamw][gpu]")
{
    gpu::stream s;
    const std::size_t n = 3000;
    const std::vector<float> start = gpu::test::random_floats(n, 4);
    const std::vector<float> g = gpu::test::random_floats(n, 5);
    std::vector<float> scaled_g(g);
    for (float& x : scaled_g) {
        x *= 4096.0F;
    }
    auto plain = gpu::device_buffer<float>::from_host(start, s);
    auto scaled = gpu::device_buffer<float>::from_host(start, s);
    auto grads = gpu::device_buffer<float>::from_host(g, s);
    auto scaled_grads = gpu::device_buffer<float>::from_host(scaled_g, s);
    auto scale = device_float(4096.0F, s);
    adamw a(n, s);
    adamw b(n, s);
    for (int step = 0; step < 3; ++step) {
        a.step(plain, grads, s);
        b.step(scaled, scaled_grads, s, nullptr, scale.data());
    }
    CHECK(plain.to_host() == scaled.to_host()); // a power of two: exactly the same update
    CHECK(scaled_grads.to_host() == scaled_g);  // gradients are only read
}

TEST_CASE("optimizer state goes to a checkpoint and back", "[nn][adamw][gpu]")
{
    gpu::stream s;
    const std::size_t n = 2048;
    auto params = gpu::device_buffer<float>::from_host(gpu::test::random_floats(n, 6), s);
    auto grads = gpu::device_buffer<float>::from_host(gpu::test::random_floats(n, 7), s);
    adamw original(n, s, {.lr = 3e-3});
    for (int step = 0; step < 3; ++step) {
        original.step(params, grads, s);
    }
    const gpu::nn::adamw_state saved = original.state(s);
    CHECK(saved.step == 3);
    CHECK(saved.exp_avg == original.exp_avg().to_host());

    // Restored from the host copy and from the device buffers, both continue exactly as the original.
    auto params_a = gpu::device_buffer<float>::from_host(params.to_host(), s);
    auto params_b = gpu::device_buffer<float>::from_host(params.to_host(), s);
    adamw from_host(n, s, {.lr = 3e-3});
    from_host.load_state(saved, s);
    adamw from_device(n, s, {.lr = 3e-3});
    from_device.load_state(3, original.exp_avg(), original.exp_avg_sq(), s);
    for (int step = 0; step < 2; ++step) {
        original.step(params, grads, s);
        from_host.step(params_a, grads, s);
        from_device.step(params_b, grads, s);
    }
    CHECK(params_a.to_host() == params.to_host());
    CHECK(params_b.to_host() == params.to_host());
    CHECK(from_host.step_count(s) == 5);

    CHECK_THROWS_WITH(
        from_host.load_state(gpu::nn::adamw_state{.step = 1, .exp_avg = {1.0F}}, s),
        ContainsSubstring("exp_avg of 1 and exp_avg_sq of 0 values for an optimizer of 2048"));
    CHECK_THROWS_WITH(from_host.load_state(-1, original.exp_avg(), original.exp_avg_sq(), s),
                      ContainsSubstring("step -1"));
    from_host.reset(s);
    CHECK(from_host.step_count(s) == 0);
    CHECK(from_host.exp_avg().to_host() == std::vector<float>(n, 0.0F));
}

TEST_CASE("a live optimizer checks its step's arguments", "[nn][adamw][gpu]")
{
    gpu::stream s;
    adamw optimizer(100, s);
    gpu::device_buffer<float> params(100, s);
    gpu::device_buffer<float> grads(99, s);
    CHECK_THROWS_WITH(optimizer.step(params, grads, s),
                      ContainsSubstring("100 parameters and 99 gradients"));
    CHECK_THROWS_WITH(optimizer.step(params.data(), params.data(), 50, s),
                      ContainsSubstring("50 parameters given to an optimizer of 100"));
    CHECK_THROWS_WITH(optimizer.step(nullptr, params.data(), 100, s),
                      ContainsSubstring("null parameters"));
    CHECK_THROWS_WITH(optimizer.step(params.data(), nullptr, 100, s),
                      ContainsSubstring("null gradients"));
    gpu::nn::grad_scaler scaler(s);
    CHECK_THROWS_AS(optimizer.step(params, grads, scaler, s), std::invalid_argument);
    CHECK_THROWS_AS(scaler.update(s), std::logic_error); // the refused step queued no check
    CHECK_THROWS_WITH(optimizer.set_options({.lr = -1.0}), ContainsSubstring("lr -1"));
    optimizer.set_options({.lr = 0.5});
    CHECK(optimizer.options().lr == 0.5);

    adamw taken = std::move(optimizer);
    CHECK(taken.size() == 100);
    // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from state is what is tested
    CHECK_THROWS_WITH(optimizer.step(nullptr, nullptr, 0, s), ContainsSubstring("moved from"));
}

TEST_CASE("a scaled step captured in a CUDA graph replays like eager steps",
          "[nn][adamw][grad_scaler][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    const std::size_t n = 4096;
    const std::vector<float> start = gpu::test::random_floats(n, 8);
    std::vector<float> g = gpu::test::random_floats(n, 9);
    for (float& x : g) {
        x *= 1024.0F; // gradients of a loss scaled by the scaler's initial scale
    }
    const gpu::nn::grad_scaler_options options{.init_scale = 1024.0F, .growth_interval = 2};

    auto eager_params = gpu::device_buffer<float>::from_host(start, s);
    auto eager_grads = gpu::device_buffer<float>::from_host(g, s);
    adamw eager(n, s);
    gpu::nn::grad_scaler eager_scaler(s, options);
    for (int step = 0; step < 5; ++step) {
        eager.step(eager_params, eager_grads, eager_scaler, s);
        eager_scaler.update(s);
    }

    auto params = gpu::device_buffer<float>::from_host(start, s);
    auto grads = gpu::device_buffer<float>::from_host(g, s);
    adamw graphed(n, s);
    gpu::nn::grad_scaler scaler(s, options);
    s.synchronize();
    cudaGraph_t graph = nullptr;
    REQUIRE(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    graphed.step(params, grads, scaler, s);
    scaler.update(s);
    REQUIRE(cudaStreamEndCapture(s.get(), &graph) == cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    for (int step = 0; step < 5; ++step) {
        REQUIRE(cudaGraphLaunch(exec, s.get()) == cudaSuccess);
    }
    s.synchronize();
    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
    CHECK(cudaGraphDestroy(graph) == cudaSuccess);

    // The step count and the scale evolved on the device at every replay.
    CHECK(graphed.step_count(s) == 5);
    CHECK(scaler.current_scale(s) == eager_scaler.current_scale(s));
    CHECK(scaler.current_scale(s) == 4096.0F); // grown twice: after steps 2 and 4
    CHECK(scaler.growth_tracker(s) == 1);
    CHECK(params.to_host() == eager_params.to_host());
}
