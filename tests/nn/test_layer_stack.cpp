// A small CNN, conv2d -> relu -> max_pool2d -> flatten -> linear, in FP32 on a GPU: the forward
// against a float64 reference of the whole stack, the backward's parameter and input gradients
// against central finite differences of it, and the same step captured in a CUDA graph.
#include <gpu/nn.hpp>

#include "catch.hpp"
#include "layer_test_support.hpp"
#include "nn_test_support.hpp"

#include <gpu/capture.hpp>
#include <gpu/graph.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace nn = gpu::nn;
namespace dnn = gpu::dnn;

namespace {

using gpu::test::device_tensor;
constexpr dnn::tensor_layout nchw = dnn::tensor_layout::nchw;

// The float64 model: its parameters and input as the GPU holds them.
struct stack_values {
    std::vector<double> x, conv_w, conv_b, fc_w, fc_b, g; // g: the gradient given at the output
};

constexpr int batch = 2, channels = 2, side = 8, filters = 3, pooled = side / 2, classes = 5;
constexpr int features = filters * pooled * pooled;

std::vector<double> reference_forward(const stack_values& v)
{
    const std::vector<int> in{batch, channels, side, side};
    std::vector<double> c = gpu::test::reference_convolution(
        v.x, in, v.conv_w, {filters, channels, 3, 3}, {.padding = {1, 1}});
    for (std::size_t i = 0; i < c.size(); ++i) { // bias, then ReLU
        c[i] = std::max(c[i] + v.conv_b[(i / (side * side)) % filters], 0.0);
    }
    std::vector<double> p(static_cast<std::size_t>(batch * features),
                          -std::numeric_limits<double>::infinity());
    for (std::size_t i = 0; i < c.size(); ++i) { // 2x2 max pooling, stride 2
        const std::size_t plane = i / (side * side), row = (i / side) % side, column = i % side;
        double& out = p[(plane * pooled + row / 2) * pooled + column / 2];
        out = std::max(out, c[i]);
    }
    std::vector<double> y(
        static_cast<std::size_t>(batch * classes)); // flatten is the identity on p
    for (std::size_t n = 0; n < batch; ++n) {
        for (std::size_t k = 0; k < classes; ++k) {
            double sum = v.fc_b[k];
            for (std::size_t f = 0; f < features; ++f) {
                sum += p[n * features + f] * v.fc_w[k * features + f];
            }
            y[n * classes + k] = sum;
        }
    }
    return y;
}

double reference_loss(const stack_values& v)
{
    return gpu::test::dot(reference_forward(v), v.g);
}

// The model on the GPU with its activations and gradients.
struct stack_run {
    gpu::stream stream;
    nn::parameters store;
    nn::conv2d conv{store, "conv", channels, filters, 3, {.padding = {1, 1}}};
    nn::relu act;
    nn::max_pool2d pool{2};
    nn::flatten flat;
    nn::linear fc{store, "fc", features, classes};
    gpu::test::device_context device{gpu::test::prepared(store, stream), store};
    device_tensor<float> x{{batch, channels, side, side}, nchw, stream};
    device_tensor<float> c{{batch, filters, side, side}, nchw, stream}, a{c.dims, nchw, stream};
    device_tensor<float> p{{batch, filters, pooled, pooled}, nchw, stream};
    device_tensor<float> y{{batch, classes}, nchw, stream}, dy{y.dims, nchw, stream};
    device_tensor<float> dp{p.dims, nchw, stream}, da{c.dims, nchw, stream},
        dc{c.dims, nchw, stream};
    device_tensor<float> dx{x.dims, nchw, stream};
    nn::tensor_spec flat_spec;

    stack_run()
    {
        REQUIRE(conv.plan(device.ctx, gpu::test::spec_of(x)) == gpu::test::spec_of(c));
        REQUIRE(act.plan(device.ctx, gpu::test::spec_of(c)) == gpu::test::spec_of(a));
        REQUIRE(pool.plan(device.ctx, gpu::test::spec_of(a)) == gpu::test::spec_of(p));
        flat_spec = flat.plan(device.ctx, gpu::test::spec_of(p));
        REQUIRE(fc.plan(device.ctx, flat_spec) == gpu::test::spec_of(y));
        x.upload(gpu::test::random_doubles(x.element_count(), 51));
        dy.upload(gpu::test::random_doubles(dy.element_count(), 52));
    }

    void step()
    {
        nn::context& ctx = device.ctx;
        const nn::tensor_ref p_flat{p.buffer.data(), flat_spec};
        const nn::tensor_ref dp_flat{dp.buffer.data(), flat_spec};
        conv.forward(ctx, gpu::test::ref_of(x), gpu::test::ref_of(c));
        act.forward(ctx, gpu::test::ref_of(c), gpu::test::ref_of(a));
        pool.forward(ctx, gpu::test::ref_of(a), gpu::test::ref_of(p));
        flat.forward(ctx, gpu::test::ref_of(p), p_flat);
        fc.forward(ctx, p_flat, gpu::test::ref_of(y));
        fc.backward(ctx, gpu::test::ref_of(dy), dp_flat);
        flat.backward(ctx, dp_flat, dp_flat);
        pool.backward(ctx, gpu::test::ref_of(dp), gpu::test::ref_of(da));
        act.backward(ctx, gpu::test::ref_of(da), gpu::test::ref_of(dc));
        conv.backward(ctx, gpu::test::ref_of(dc), gpu::test::ref_of(dx));
    }

    stack_values values()
    {
        return {x.values,
                gpu::test::working_of<float>(store, conv.weight_index(), stream),
                gpu::test::working_of<float>(store, *conv.bias_index(), stream),
                gpu::test::working_of<float>(store, fc.weight_index(), stream),
                gpu::test::working_of<float>(store, *fc.bias_index(), stream),
                dy.values};
    }
    std::vector<double> gradients()
    {
        std::vector<double> all =
            gpu::test::read_device<float>(store.gradient().data(), store.total_elements(), stream);
        const std::vector<double> input = dx.download(stream);
        all.insert(all.end(), input.begin(), input.end());
        return all;
    }
};

// Compares the gradient @p computed of elements @p indices of @p which with central
// differences of the float64 loss (a small step: the loss has kinks at ReLU and the maxima).
void check_sampled(stack_values& v, std::vector<double> stack_values::*which,
                   const std::vector<double>& computed, std::initializer_list<std::size_t> indices)
{
    for (const std::size_t i : indices) {
        const double fd =
            gpu::test::central_difference(v.*which, i, 1e-6, [&] { return reference_loss(v); });
        INFO("element " << i);
        CHECK(computed.at(i) == Approx(fd).epsilon(1e-4).margin(1e-6));
    }
}

} // namespace

TEST_CASE("conv2d, relu, max_pool2d, flatten and linear: forward and backward end to end",
          "[nn][gpu]")
{
    stack_run run;
    run.step();
    stack_values v = run.values();
    CHECK(gpu::test::relative_error<double>(run.y.download(run.stream), reference_forward(v)) <
          1e-5);
    nn::parameters& store = run.store;
    check_sampled(v, &stack_values::conv_w,
                  gpu::test::gradient_of(store, run.conv.weight_index(), run.stream),
                  {0, 7, 20, 35, 53});
    check_sampled(v, &stack_values::conv_b,
                  gpu::test::gradient_of(store, *run.conv.bias_index(), run.stream), {0, 1, 2});
    check_sampled(v, &stack_values::fc_w,
                  gpu::test::gradient_of(store, run.fc.weight_index(), run.stream),
                  {0, 47, 100, 239});
    check_sampled(v, &stack_values::fc_b,
                  gpu::test::gradient_of(store, *run.fc.bias_index(), run.stream), {1, 4});
    check_sampled(v, &stack_values::x, run.dx.download(run.stream), {0, 37, 100, 255});
}

TEST_CASE("the stack's forward and backward captured in a CUDA graph give the eager results",
          "[nn][gpu]")
{
    stack_run run;
    run.step(); // eager: also fills cuBLASLt's algorithm cache, as capture needs
    const std::vector<double> output = run.y.download(run.stream);
    const std::vector<double> eager = run.gradients();
    run.store.zero_grad(run.stream);
    run.dx.poison();
    run.y.poison();
    const gpu::graph_exec exec(gpu::capture(run.stream, [&](gpu::stream_ref) { run.step(); }));
    exec.launch(run.stream);
    CHECK(run.y.download(run.stream) == output);
    CHECK(gpu::test::relative_error<double>(run.gradients(), eager) <
          1e-6);             // cuDNN may sum with atomics
    exec.launch(run.stream); // a replay adds the gradients again
    std::vector<double> twice = eager;
    for (std::size_t i = 0; i < run.store.total_elements(); ++i) {
        twice[i] *= 2.0;
    }
    CHECK(gpu::test::relative_error<double>(run.gradients(), twice) < 1e-6);
}
