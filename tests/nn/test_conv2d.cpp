// gpu/nn/conv2d.hpp: registration, initial bounds and shape checks without a GPU; on a GPU, the
// forward against a float64 direct convolution, the backward against central finite
// differences of it (FP32) and against the float64 adjoints (FP16, BF16), accumulation, and
// the context's convolution options reaching all three plans.
#include <gpu/nn/conv2d.hpp>

#include "catch.hpp"
#include "layer_test_support.hpp"
#include "nn_test_support.hpp"

#include <gpu/profile.hpp>

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;
namespace dnn = gpu::dnn;
using gpu::element_type;

TEST_CASE("a conv2d layer registers PyTorch's parameters, shapes and initial bounds", "[nn]")
{
    nn::parameters store;
    const nn::conv2d conv(store, "conv1", 3, 8, 5, {.padding = {2, 2}});
    CHECK(conv.describe() ==
          "conv2d conv1(3 -> 8, kernel [5, 5], stride [1, 1], padding [2, 2], bias)");
    CHECK(conv.in_channels() == 3);
    CHECK(conv.out_channels() == 8);
    CHECK(conv.kernel() == std::array<int, 2>{5, 5});
    const nn::parameter_info& weight = store.info(conv.weight_index());
    CHECK(weight.name == "conv1.weight");
    CHECK(weight.shape == std::vector<std::int64_t>{8, 3, 5, 5});
    CHECK(weight.init == nn::initialization::kaiming_uniform(3 * 5 * 5));
    REQUIRE(conv.bias_index().has_value());
    const nn::parameter_info& bias = store.info(*conv.bias_index());
    CHECK(bias.name == "conv1.bias");
    CHECK(bias.shape == std::vector<std::int64_t>{8});
    CHECK(bias.init == nn::initialization::fan_in_uniform(75));

    // PyTorch's bounds: both 1/sqrt(fan_in), and the drawn values fill them.
    const double bound = 1.0 / std::sqrt(75.0);
    CHECK(weight.init.bound == Approx(bound).epsilon(1e-12));
    CHECK(bias.init.bound == Approx(bound).epsilon(1e-12));
    const std::vector<float> values = store.initial_values(7);
    double largest = 0.0;
    for (std::size_t i = 0; i < weight.count; ++i) {
        largest = std::max(largest, std::abs(static_cast<double>(values[weight.offset + i])));
    }
    CHECK(largest <= bound);
    CHECK(largest > 0.9 * bound); // 600 draws reach the bound's last tenth
    for (std::size_t i = 0; i < bias.count; ++i) {
        CHECK(std::abs(values[bias.offset + i]) <= bound);
    }

    const nn::conv2d plain(store, "conv2", 8, 16, {3, 1}, {.stride = {2, 1}, .bias = false});
    CHECK(plain.describe() ==
          "conv2d conv2(8 -> 16, kernel [3, 1], stride [2, 1], padding [0, 0], no bias)");
    CHECK_FALSE(plain.bias_index().has_value());
    CHECK(store.info(plain.weight_index()).shape == std::vector<std::int64_t>{16, 8, 3, 1});
    CHECK(store.info(plain.weight_index()).init == nn::initialization::kaiming_uniform(24));
    CHECK(store.size() == 3);
}

TEST_CASE("a conv2d layer refuses bad channels, kernels, strides and paddings, registering nothing",
          "[nn]")
{
    nn::parameters store;
    CHECK_THROWS_WITH(
        nn::conv2d(store, "c", 0, 4, 3),
        ContainsSubstring(
            "gpu::nn::conv2d c: in_channels 0 and out_channels 4 must be in [1, 2^31 - 1]"));
    CHECK_THROWS_WITH(nn::conv2d(store, "c", 3, std::int64_t{1} << 31, 3),
                      ContainsSubstring("out_channels 2147483648"));
    CHECK_THROWS_WITH(nn::conv2d(store, "c", 3, 4, {3, 0}),
                      ContainsSubstring("the kernel [3, 0] must be positive"));
    CHECK_THROWS_WITH(nn::conv2d(store, "c", 3, 4, 3, {.stride = {1, -2}}),
                      ContainsSubstring("the stride [1, -2] must be positive"));
    CHECK_THROWS_WITH(nn::conv2d(store, "c", 3, 4, 3, {.padding = {-1, 0}}),
                      ContainsSubstring("the padding [-1, 0] must not be negative"));
    CHECK_THROWS_WITH(
        nn::conv2d(store, "c", 65536, 65536, 3),
        ContainsSubstring("the weight [65536, 65536, 3, 3] has more than 2^31 - 1 elements"));
    store.add("d.bias", {4}, nn::initialization::zeros());
    CHECK_THROWS_WITH(nn::conv2d(store, "d", 3, 4, 3),
                      ContainsSubstring("already has a parameter named d.bias"));
    CHECK(store.size() == 1);
    CHECK_FALSE(store.find("d.weight").has_value());

    nn::parameters allocated;
    allocated.allocate(gpu::legacy_default_stream); // empty: no GPU needed
    CHECK_THROWS_AS(nn::conv2d(allocated, "e", 3, 4, 3), std::logic_error);
}

TEST_CASE("a conv2d layer computes PyTorch's output shape and checks its input when planned",
          "[nn]")
{
    nn::parameters store(nn::mixed_precision::bf16());
    gpu::test::host_context host(store);
    nn::conv2d conv(store, "conv", 3, 6, {3, 5}, {.stride = {2, 1}, .padding = {1, 2}});
    CHECK(conv.output_shape({4, 3, 28, 28}) == std::vector<std::int64_t>{4, 6, 14, 28});
    CHECK(conv.output_shape({1, 3, 1, 1}) == std::vector<std::int64_t>{1, 6, 1, 1});
    CHECK_THROWS_WITH(
        conv.output_shape({3, 28, 28}),
        ContainsSubstring(
            "conv2d conv(3 -> 6, kernel [3, 5], stride [2, 1], padding [1, 2], bias): the "
            "input has 3 dimensions; it needs [N, 3, H, W]"));
    CHECK_THROWS_WITH(conv.output_shape({4, 3, 0, 28}),
                      ContainsSubstring("dimension 2 of the input is 0"));
    CHECK_THROWS_WITH(conv.output_shape({4, 1, 28, 28}),
                      ContainsSubstring("the input has 1 channels, not in_channels 3"));
    nn::conv2d wide(store, "wide", 3, 6, 7);
    CHECK_THROWS_WITH(
        wide.output_shape({4, 3, 6, 9}),
        ContainsSubstring("the input's height 6 padded to 6 is smaller than the kernel's 7"));

    const nn::tensor_spec good{.shape = {4, 3, 28, 28}, .type = element_type::bf16};
    CHECK_THROWS_WITH(
        conv.plan(host.ctx, {.shape = {4, 3, 28, 28}, .type = element_type::fp32}),
        ContainsSubstring(
            "the input is FP32 [4, 3, 28, 28] nchw, but under the BF16 policy a conv2d "
            "layer takes BF16"));
    CHECK_THROWS_WITH(conv.plan(host.ctx, {.shape = {4, 3, 28, 28},
                                           .type = element_type::bf16,
                                           .layout = dnn::tensor_layout::nhwc}),
                      ContainsSubstring("is channels-last"));
    CHECK_THROWS_WITH(conv.plan(host.ctx, {.shape = {4, 2, 28, 28}, .type = element_type::bf16}),
                      ContainsSubstring("the input has 2 channels"));
    CHECK_THROWS_WITH(
        conv.plan(host.ctx, {.shape = {70000, 3, 128, 128}, .type = element_type::bf16}),
        ContainsSubstring("more than 2^31 - 1 elements"));
    // A valid input passes every check and reaches the cuDNN handle, empty here.
    CHECK_THROWS_AS(conv.plan(host.ctx, good), std::logic_error);
    CHECK_FALSE(conv.planned_input().has_value());
    CHECK(conv.forward_plan() == nullptr);
    CHECK_THROWS_WITH(conv.forward(host.ctx, {}, {}), ContainsSubstring("forward before plan"));
}

TEST_CASE("the context carries the convolution options conv2d plans with", "[nn]")
{
    nn::parameters store;
    gpu::test::host_context host(store);
    CHECK(host.ctx.convolution_options() == dnn::convolution_options{});
    gpu::profile settings = gpu::profile::defaults();
    settings.benchmark = true; // torch.backends.cudnn.benchmark = True
    host.ctx.set_convolution_options(dnn::convolution_options::from_profile(settings));
    CHECK(host.ctx.convolution_options().search == dnn::algorithm_search::exhaustive);
    const gpu::nn::context copy = host.ctx;
    CHECK(copy.convolution_options().search == dnn::algorithm_search::exhaustive);
}

// ---- GPU ----------------------------------------------------------------------------------------

namespace {

using gpu::test::device_tensor;

struct conv_case {
    int n, c, h, w, k;
    std::array<int, 2> kernel, stride, padding;
    bool bias;
};

std::vector<int> dims_of(const std::vector<std::int64_t>& shape)
{
    return {shape.begin(), shape.end()};
}

// A conv2d layer planned on a GPU for one case, with random x and dy, NaN in y and dx, and the
// working copy of its parameters read back.
template <class T>
struct conv_run {
    conv_case shape;
    gpu::stream stream;
    nn::parameters store;
    nn::conv2d conv;
    gpu::test::device_context device;
    device_tensor<T> x, y, dy, dx;
    std::vector<double> w, b;

    conv_run(nn::mixed_precision policy, const conv_case& c,
             const dnn::convolution_options& options = {})
        : shape(c), store(policy), conv(store, "conv", c.c, c.k, c.kernel,
                                        {.stride = c.stride, .padding = c.padding, .bias = c.bias}),
          device(gpu::test::prepared(store, stream), store),
          x({c.n, c.c, c.h, c.w}, dnn::tensor_layout::nchw, stream),
          y(dims_of(conv.output_shape({c.n, c.c, c.h, c.w})), dnn::tensor_layout::nchw, stream),
          dy(y.dims, dnn::tensor_layout::nchw, stream), dx(x.dims, dnn::tensor_layout::nchw, stream)
    {
        device.ctx.set_convolution_options(options);
        REQUIRE(conv.plan(device.ctx, gpu::test::spec_of(x)) == gpu::test::spec_of(y));
        x.upload(gpu::test::random_doubles(x.element_count(), 41));
        dy.upload(gpu::test::random_doubles(dy.element_count(), 42));
        w = gpu::test::working_of<T>(store, conv.weight_index(), stream);
        if (c.bias) {
            b = gpu::test::working_of<T>(store, *conv.bias_index(), stream);
        }
    }

    [[nodiscard]] dnn::convolution_geometry geometry() const
    {
        return {.padding = {shape.padding[0], shape.padding[1]},
                .stride = {shape.stride[0], shape.stride[1]}};
    }
    [[nodiscard]] std::vector<int> filter() const
    {
        return {shape.k, shape.c, shape.kernel[0], shape.kernel[1]};
    }

    // The float64 forward of these x, w and b.
    [[nodiscard]] std::vector<double> reference(const std::vector<double>& xs,
                                                const std::vector<double>& ws,
                                                const std::vector<double>& bs) const
    {
        std::vector<double> out =
            gpu::test::reference_convolution(xs, x.dims, ws, filter(), geometry());
        const std::size_t plane = out.size() / static_cast<std::size_t>(shape.n * shape.k);
        for (std::size_t i = 0; i < out.size() && !bs.empty(); ++i) {
            out[i] += bs[(i / plane) % bs.size()];
        }
        return out;
    }
    // L = Σ dy ⊙ forward, whose gradients the backward computes.
    [[nodiscard]] double loss(const std::vector<double>& xs, const std::vector<double>& ws,
                              const std::vector<double>& bs) const
    {
        return gpu::test::dot(reference(xs, ws, bs), dy.values);
    }

    void forward() { conv.forward(device.ctx, gpu::test::ref_of(x), gpu::test::ref_of(y)); }
    void backward(bool input_gradient = true)
    {
        conv.backward(device.ctx, gpu::test::ref_of(dy),
                      input_gradient ? gpu::test::ref_of(dx) : nn::tensor_ref{});
    }
};

constexpr conv_case cases[] = {
    {2, 3, 7, 6, 4, {3, 3}, {1, 1}, {1, 1}, true},
    {3, 2, 9, 8, 5, {3, 2}, {2, 1}, {0, 1}, true},
    {1, 4, 5, 5, 3, {1, 1}, {1, 1}, {0, 0}, false},
    {2, 1, 8, 8, 6, {5, 5}, {2, 2}, {2, 2}, true},
};

std::string describe(const conv_case& c)
{
    return "x [" + std::to_string(c.n) + ", " + std::to_string(c.c) + ", " + std::to_string(c.h) +
           ", " + std::to_string(c.w) + "], k " + std::to_string(c.k) + ", bias " +
           std::to_string(c.bias);
}

template <class T>
void check_forward(nn::mixed_precision policy, const conv_case& c)
{
    conv_run<T> run(policy, c);
    run.forward();
    INFO(run.conv.forward_plan()->explain().to_string());
    CHECK(gpu::test::relative_error<double>(run.y.download(run.stream),
                                            run.reference(run.x.values, run.w, run.b)) <
          gpu::test::tolerance_of<T>());
}

} // namespace

TEST_CASE("conv2d's forward matches a float64 direct convolution with its bias", "[nn][gpu]")
{
    for (const conv_case& c : cases) {
        INFO(describe(c));
        check_forward<float>(nn::mixed_precision::fp32(), c);
        check_forward<__half>(nn::mixed_precision::fp16(), c);
        check_forward<__nv_bfloat16>(nn::mixed_precision::bf16(), c);
    }
}

TEST_CASE("conv2d's FP32 backward matches central finite differences and accumulates", "[nn][gpu]")
{
    for (const conv_case& c : cases) {
        INFO(describe(c));
        conv_run<float> run(nn::mixed_precision::fp32(), c);
        run.forward();
        run.backward();
        std::vector<double> xs = run.x.values;
        std::vector<double> ws = run.w;
        std::vector<double> bs = run.b;
        // The loss is linear in each variable: a large step loses nothing and rounds less.
        const double h = 0.25;
        const std::vector<double> dx = run.dx.download(run.stream);
        CHECK(gpu::test::relative_error<double>(dx, gpu::test::central_differences(xs, h, [&] {
                                                    return run.loss(xs, ws, bs);
                                                })) < 1e-5);
        std::vector<double> dw_reference =
            gpu::test::central_differences(ws, h, [&] { return run.loss(xs, ws, bs); });
        CHECK(gpu::test::relative_error<double>(
                  gpu::test::gradient_of(run.store, run.conv.weight_index(), run.stream),
                  dw_reference) < 1e-5);
        std::vector<double> db_reference;
        if (c.bias) {
            db_reference =
                gpu::test::central_differences(bs, h, [&] { return run.loss(xs, ws, bs); });
            CHECK(gpu::test::relative_error<double>(
                      gpu::test::gradient_of(run.store, *run.conv.bias_index(), run.stream),
                      db_reference) < 1e-5);
        }
        // A second backward without dx adds the parameter gradients again and leaves dx alone.
        run.backward(false);
        for (double& v : dw_reference) {
            v *= 2.0;
        }
        CHECK(gpu::test::relative_error<double>(
                  gpu::test::gradient_of(run.store, run.conv.weight_index(), run.stream),
                  dw_reference) < 1e-5);
        if (c.bias) {
            for (double& v : db_reference) {
                v *= 2.0;
            }
            CHECK(gpu::test::relative_error<double>(
                      gpu::test::gradient_of(run.store, *run.conv.bias_index(), run.stream),
                      db_reference) < 1e-5);
        }
        CHECK(run.dx.download(run.stream) == dx);
    }
}

namespace {

// Under FP16/BF16 the gradients go through cuDNN in T and are added to the FP32 store: they
// match the float64 adjoints within T's tolerance.
template <class T>
void check_low_precision_backward(nn::mixed_precision policy, const conv_case& c)
{
    conv_run<T> run(policy, c);
    run.forward();
    run.backward();
    const dnn::convolution_geometry g = run.geometry();
    CHECK(gpu::test::relative_error<double>(
              run.dx.download(run.stream),
              gpu::test::reference_backward_data(run.w, run.filter(), run.dy.values, run.x.dims,
                                                 g)) < 1e-2);
    CHECK(gpu::test::relative_error<double>(
              gpu::test::gradient_of(run.store, run.conv.weight_index(), run.stream),
              gpu::test::reference_backward_filter(run.x.values, run.x.dims, run.dy.values,
                                                   run.filter(), g)) < 1e-2);
    if (c.bias) {
        CHECK(gpu::test::relative_error<double>(
                  gpu::test::gradient_of(run.store, *run.conv.bias_index(), run.stream),
                  gpu::test::reference_backward_bias(run.dy.values, run.y.dims)) < 1e-2);
    }
}

} // namespace

TEST_CASE("conv2d's FP16 and BF16 backward add FP32 gradients within the type's tolerance",
          "[nn][gpu]")
{
    for (const conv_case& c : cases) {
        INFO(describe(c));
        check_low_precision_backward<__half>(nn::mixed_precision::fp16(), c);
        check_low_precision_backward<__nv_bfloat16>(nn::mixed_precision::bf16(), c);
    }
}

TEST_CASE("conv2d plans all three passes under the context's options: benchmark, deterministic",
          "[nn][gpu]")
{
    gpu::profile settings = gpu::profile::defaults();
    settings.benchmark = true;
    {
        conv_run<float> run(nn::mixed_precision::fp32(), cases[0],
                            dnn::convolution_options::from_profile(settings));
        CHECK(run.conv.forward_plan()->explain().search == dnn::algorithm_search::exhaustive);
        CHECK(run.conv.backward_data_plan()->explain().search == dnn::algorithm_search::exhaustive);
        CHECK(run.conv.backward_filter_plan()->explain().search ==
              dnn::algorithm_search::exhaustive);
        run.forward();
        CHECK(gpu::test::relative_error<double>(run.y.download(run.stream),
                                                run.reference(run.x.values, run.w, run.b)) < 1e-5);
    }
    settings.benchmark = false;
    settings.deterministic = true;
    conv_run<__half> run(nn::mixed_precision::fp16(), cases[1],
                         dnn::convolution_options::from_profile(settings));
    CHECK(run.conv.forward_plan()->explain().deterministic);
    CHECK(run.conv.backward_data_plan()->explain().deterministic);
    CHECK(run.conv.backward_filter_plan()->explain().deterministic);
}

TEST_CASE("a shared conv2d layer uses the same parameters and registers nothing", "[nn]")
{
    nn::parameters store;
    const nn::conv2d conv(store, "conv1", 1, 32, 5, {.padding = {2, 2}});
    const std::size_t registered = store.size();
    const nn::conv2d shared = conv.share();
    CHECK(store.size() == registered);
    CHECK(shared.weight_index() == conv.weight_index());
    CHECK(shared.bias_index() == conv.bias_index());
    CHECK(shared.describe() == conv.describe());
    CHECK_FALSE(shared.planned_input().has_value());
    CHECK_FALSE(shared.planned_for_inference());
}

TEST_CASE("conv2d planned in inference mode has the forward plan only, and a shared layer keeps "
          "its own plan",
          "[nn][gpu]")
{
    const conv_case c = cases[0];
    conv_run<__half> run(nn::mixed_precision::fp16(), c); // planned for training, batch c.n
    run.forward();
    const std::vector<double> before = run.y.download(run.stream);
    nn::conv2d shared = run.conv.share();
    run.device.ctx.set_inference_mode(true);
    // Twice the batch: the same images twice.
    device_tensor<__half> x2({2 * c.n, c.c, c.h, c.w}, dnn::tensor_layout::nchw, run.stream);
    device_tensor<__half> y2({2 * c.n, run.y.dims[1], run.y.dims[2], run.y.dims[3]},
                             dnn::tensor_layout::nchw, run.stream);
    REQUIRE(shared.plan(run.device.ctx, gpu::test::spec_of(x2)) == gpu::test::spec_of(y2));
    CHECK(shared.planned_for_inference());
    CHECK(shared.forward_plan() != nullptr);
    CHECK(shared.backward_data_plan() == nullptr);
    CHECK(shared.backward_filter_plan() == nullptr);
    std::vector<double> twice = run.x.values;
    twice.insert(twice.end(), run.x.values.begin(), run.x.values.end());
    x2.upload(twice);
    shared.forward(run.device.ctx, gpu::test::ref_of(x2), gpu::test::ref_of(y2));
    std::vector<double> expected = run.reference(run.x.values, run.w, run.b);
    expected.insert(expected.end(), expected.begin(), expected.end());
    CHECK(gpu::test::relative_error<double>(y2.download(run.stream), expected) <
          gpu::test::tolerance_of<__half>());
    CHECK_THROWS_WITH(shared.backward(run.device.ctx, gpu::test::ref_of(y2), gpu::test::ref_of(x2)),
                      ContainsSubstring("backward after a plan made in inference mode"));
    // The first layer kept its training plan: the same output, bit for bit, and its backward.
    run.y.poison();
    run.forward();
    CHECK(run.y.download(run.stream) == before);
    CHECK_FALSE(run.conv.planned_for_inference());
    run.backward();
}
