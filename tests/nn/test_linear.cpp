// gpu/nn/linear.hpp: registration and shape checks without a GPU; on a GPU, the forward against
// a float64 reference and the backward against central finite differences of a float64 forward,
// in FP32, FP16 and BF16, with and without bias, fused ReLU, both bias-gradient methods.
#include <gpu/nn/linear.hpp>

#include "catch.hpp"
#include "nn_test_support.hpp"
#include <element_cast.hpp>
#include <test_support.hpp>

#include <gpu/blas/error.hpp>
#include <gpu/nn/tensor.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;
using gpu::element_type;
using gpu::test::fake_device_address;
using gpu::test::narrow;

TEST_CASE("a linear layer registers PyTorch's parameters with PyTorch's initialisation", "[nn]")
{
    nn::parameters store;
    const nn::linear fc(store, "fc1", 784, 128);
    CHECK(fc.describe() == "linear fc1(784 -> 128, bias)");
    CHECK(fc.in_features() == 784);
    CHECK(fc.out_features() == 128);
    const nn::parameter_info& weight = store.info(fc.weight_index());
    CHECK(weight.name == "fc1.weight");
    CHECK(weight.shape == std::vector<std::int64_t>{128, 784});
    CHECK(weight.init == nn::initialization::kaiming_uniform(784));
    REQUIRE(fc.bias_index().has_value());
    const nn::parameter_info& bias = store.info(*fc.bias_index());
    CHECK(bias.name == "fc1.bias");
    CHECK(bias.shape == std::vector<std::int64_t>{128});
    CHECK(bias.init == nn::initialization::fan_in_uniform(784));
    CHECK(fc.bias_gradient_in_use() == nn::bias_gradient_method::automatic);

    const nn::linear plain(store, "fc2", 128, 10, {.bias = false});
    CHECK(plain.describe() == "linear fc2(128 -> 10, no bias)");
    CHECK_FALSE(plain.bias_index().has_value());
    CHECK(store.size() == 3);
    const nn::linear fused(store, "fc3", 10, 10, {.relu = true});
    CHECK(fused.describe() == "linear fc3(10 -> 10, bias, relu)");
    CHECK(nn::to_string(nn::bias_gradient_method::reduction) == "reduction");
}

TEST_CASE("a linear layer refuses bad features and options, registering nothing", "[nn]")
{
    nn::parameters store;
    CHECK_THROWS_WITH(
        nn::linear(store, "a", 0, 4),
        ContainsSubstring("gpu::nn::linear a: in_features 0 and out_features 4 must be positive"));
    CHECK_THROWS_WITH(nn::linear(store, "a", 4, -1), ContainsSubstring("out_features -1"));
    CHECK_THROWS_WITH(nn::linear(store, "a", 4, 4, {.bias = false, .relu = true}),
                      ContainsSubstring("a fused ReLU needs the bias"));
    CHECK_THROWS_WITH(
        nn::linear(store, "a", 4, 4, {.bias_gradient = static_cast<nn::bias_gradient_method>(5)}),
        ContainsSubstring("bias_gradient 5 is not a gpu::nn::bias_gradient_method"));
    store.add("b.bias", {4}, nn::initialization::zeros());
    CHECK_THROWS_WITH(nn::linear(store, "b", 4, 4),
                      ContainsSubstring("already has a parameter named b.bias"));
    CHECK(store.size() == 1);
    CHECK_FALSE(store.find("b.weight").has_value());

    nn::parameters allocated;
    allocated.allocate(gpu::legacy_default_stream); // empty: no GPU needed
    CHECK_THROWS_AS(nn::linear(allocated, "c", 4, 4), std::logic_error);
}

TEST_CASE("a linear layer checks its input's shape, type and layout when planned", "[nn]")
{
    nn::parameters store(nn::mixed_precision::fp16());
    gpu::test::host_context host(store);
    nn::linear fc(store, "fc", 32, 10, {.bias_gradient = nn::bias_gradient_method::reduction});
    CHECK(fc.output_shape({64, 32}) == std::vector<std::int64_t>{64, 10});
    CHECK(fc.output_shape({4, 16, 32}) == std::vector<std::int64_t>{4, 16, 10});
    CHECK_THROWS_WITH(fc.output_shape({32}),
                      ContainsSubstring("linear fc(32 -> 10, bias): the input has 1 dimensions"));
    CHECK_THROWS_WITH(fc.output_shape({64, 31}),
                      ContainsSubstring("the input's last dimension is 31, not in_features 32"));
    CHECK_THROWS_WITH(fc.output_shape({0, 32}), ContainsSubstring("dimension 0 of the input is 0"));
    CHECK_THROWS_WITH(
        fc.plan(host.ctx, {.shape = {64, 32}, .type = element_type::fp32}),
        ContainsSubstring("the input is FP32 [64, 32] nchw, but under the FP16 policy a linear "
                          "layer takes FP16"));
    CHECK_THROWS_WITH(fc.plan(host.ctx, {.shape = {2, 2, 2, 32},
                                         .type = element_type::fp16,
                                         .layout = gpu::dnn::tensor_layout::nhwc}),
                      ContainsSubstring("is channels-last"));
    const std::int64_t huge = std::int64_t{1} << 31;
    CHECK_THROWS_WITH(fc.plan(host.ctx, {.shape = {huge, 32}, .type = element_type::fp16}),
                      ContainsSubstring("more than 2^31 - 1 rows"));
    // A valid plan (the reduction needs no scratch: nothing is allocated, no GPU needed).
    const nn::tensor_spec out =
        fc.plan(host.ctx, {.shape = {4, 16, 32}, .type = element_type::fp16});
    CHECK(out == nn::tensor_spec{.shape = {4, 16, 10}, .type = element_type::fp16});
}

TEST_CASE(
    "a linear layer planned in inference mode allocates nothing, and a shared one plans on its own",
    "[nn]")
{
    nn::parameters store(nn::mixed_precision::fp16());
    gpu::test::host_context host(store);
    const nn::linear fc(store, "fc1", 32, 10,
                        {.relu = true}); // the ReLU's gradient, the epilogue's scratch
    const std::size_t registered = store.size();
    nn::linear first = fc.share();
    nn::linear second = fc.share();
    CHECK(store.size() == registered);
    CHECK(first.weight_index() == fc.weight_index());
    CHECK(first.bias_index() == fc.bias_index());
    CHECK(first.options().relu);
    CHECK(first.describe() == "linear fc1(32 -> 10, bias, relu)");
    // In inference mode nothing is allocated, so this plans on a machine without a GPU.
    host.ctx.set_inference_mode(true);
    CHECK(first.plan(host.ctx, {.shape = {8, 32}, .type = element_type::fp16}).shape ==
          std::vector<std::int64_t>{8, 10});
    CHECK(second.plan(host.ctx, {.shape = {256, 32}, .type = element_type::fp16}).shape ==
          std::vector<std::int64_t>{256, 10});
    CHECK(first.planned_for_inference());
    CHECK(first.planned_input()->shape == std::vector<std::int64_t>{8, 32});
    CHECK(second.planned_input()->shape == std::vector<std::int64_t>{256, 32});
}

TEST_CASE("a linear layer's forward and backward check their tensors before any work", "[nn]")
{
    nn::parameters store;
    gpu::test::host_context host(store);
    nn::linear fc(store, "fc", 8, 3, {.bias_gradient = nn::bias_gradient_method::reduction});
    const nn::tensor_spec in{.shape = {5, 8}};
    CHECK_THROWS_AS(fc.forward(host.ctx, {fake_device_address(0x100), in},
                               {fake_device_address(0x200), {.shape = {5, 3}}}),
                    std::logic_error);
    const nn::tensor_spec out = fc.plan(host.ctx, in);
    CHECK_THROWS_WITH(fc.forward(host.ctx, {fake_device_address(0x100), in},
                                 {fake_device_address(0x200), {.shape = {5, 4}}}),
                      ContainsSubstring("forward: the output is FP32 [5, 4] nchw but the layer was "
                                        "planned for FP32 [5, 3] nchw"));
    CHECK_THROWS_WITH(fc.forward(host.ctx, {fake_device_address(0x100), in}, {nullptr, out}),
                      ContainsSubstring("the output (FP32 [5, 3] nchw) has a null address"));
    CHECK_THROWS_WITH(fc.backward(host.ctx, {fake_device_address(0x300), out}, {}),
                      ContainsSubstring("backward before a forward"));
    // Right arguments reach the layer's own code, which finds the store unallocated.
    CHECK_THROWS_WITH(
        fc.forward(host.ctx, {fake_device_address(0x100), in}, {fake_device_address(0x200), out}),
        ContainsSubstring("the parameter store is not allocated"));
}

namespace {

template <class T>
void upload(nn::tensor& t, const std::vector<T>& values, gpu::stream_ref stream)
{
    GPU_CUDA_CHECK(cudaMemcpyAsync(t.data(), values.data(), values.size() * sizeof(T),
                                   cudaMemcpyHostToDevice, stream.get()));
    stream.synchronize();
}

template <class T>
std::vector<double> download(const void* data, std::size_t count, gpu::stream_ref stream)
{
    std::vector<T> values(count);
    stream.synchronize();
    GPU_CUDA_CHECK(cudaMemcpy(values.data(), data, count * sizeof(T), cudaMemcpyDeviceToHost));
    return gpu::test::widened(values);
}

// The layer's parameters and data as the GPU sees them (rounded to T), as doubles.
struct linear_values {
    std::int64_t rows = 0;
    std::int64_t in = 0;
    std::int64_t out = 0;
    bool relu = false;
    std::vector<double> x, w, b, g; // input, weight, bias (empty: none), output gradient
};

std::vector<double> forward(const linear_values& v)
{
    std::vector<double> y(static_cast<std::size_t>(v.rows * v.out));
    for (std::int64_t i = 0; i < v.rows; ++i) {
        for (std::int64_t j = 0; j < v.out; ++j) {
            double sum = v.b.empty() ? 0.0 : v.b[static_cast<std::size_t>(j)];
            for (std::int64_t p = 0; p < v.in; ++p) {
                sum += v.x[static_cast<std::size_t>(i * v.in + p)] *
                       v.w[static_cast<std::size_t>(j * v.in + p)];
            }
            y[static_cast<std::size_t>(i * v.out + j)] = v.relu ? std::max(sum, 0.0) : sum;
        }
    }
    return y;
}

// L = Σ g ⊙ y, whose gradient the backward computes when given dy = g.
double loss(const linear_values& v)
{
    const std::vector<double> y = forward(v);
    double sum = 0.0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        sum += v.g[i] * y[i];
    }
    return sum;
}

// ∂L/∂θ for every element θ of one of v's vectors, by central differences.
std::vector<double> finite_differences(linear_values v, std::vector<double> linear_values::*which,
                                       double h)
{
    std::vector<double> gradient((v.*which).size());
    for (std::size_t i = 0; i < gradient.size(); ++i) {
        const double keep = (v.*which)[i];
        (v.*which)[i] = keep + h;
        const double up = loss(v);
        (v.*which)[i] = keep - h;
        const double down = loss(v);
        (v.*which)[i] = keep;
        gradient[i] = (up - down) / (2.0 * h);
    }
    return gradient;
}

struct linear_case {
    std::int64_t rows, in, out;
    bool bias, relu;
    nn::bias_gradient_method method;
};

// Allocates and initialises @p store, before the context over it is made.
gpu::stream_ref prepared(nn::parameters& store, gpu::stream_ref stream)
{
    store.allocate(stream);
    store.initialize(5, stream);
    return stream;
}

template <class T>
struct linear_run {
    gpu::stream stream;
    nn::parameters store;
    nn::linear fc;
    gpu::test::device_context device;
    linear_values values;
    nn::tensor x, y, dy, dx;

    linear_run(nn::mixed_precision policy, const linear_case& c)
        : store(policy),
          fc(store, "fc", c.in, c.out, {.bias = c.bias, .relu = c.relu, .bias_gradient = c.method}),
          device(prepared(store, stream), store)
    {
        const nn::tensor_spec in{.shape = {c.rows, c.in}, .type = policy.compute};
        const nn::tensor_spec out = fc.plan(device.ctx, in);
        x = nn::tensor(in, stream);
        y = nn::tensor(out, stream);
        dy = nn::tensor(out, stream);
        dx = nn::tensor(in, stream);
        values = {c.rows, c.in, c.out, c.relu, {}, {}, {}, {}};
        const auto host_x =
            gpu::test::rounded_random<T>(static_cast<std::size_t>(c.rows * c.in), 21);
        const auto host_g =
            gpu::test::rounded_random<T>(static_cast<std::size_t>(c.rows * c.out), 22);
        values.x = host_x.values;
        values.g = host_g.values;
        upload(x, host_x.stored, stream);
        upload(dy, host_g.stored, stream);
        upload(y, std::vector<T>(values.g.size(), narrow<T>(std::nan(""))), stream); // poisoned
        upload(dx, std::vector<T>(values.x.size(), narrow<T>(std::nan(""))), stream);
        // The weights the GPU reads: the working copy, i.e. the master rounded to T.
        values.w = working(fc.weight_index());
        if (fc.bias_index()) {
            values.b = working(*fc.bias_index());
        }
    }

    std::vector<double> working(std::size_t index)
    {
        const nn::parameter_view view = store.view(index);
        return download<T>(view.working, view.count, stream);
    }
    std::vector<double> gradient(std::size_t index)
    {
        const nn::parameter_view view = store.view(index);
        return download<float>(view.gradient, view.count, stream);
    }
};

template <class T>
void check_forward(nn::mixed_precision policy, const linear_case& c, double bound)
{
    linear_run<T> run(policy, c);
    run.fc.forward(run.device.ctx, run.x.ref(), run.y.ref());
    const std::vector<double> y = download<T>(run.y.data(), run.values.g.size(), run.stream);
    CHECK(gpu::test::relative_error<double>(y, forward(run.values)) < bound);
}

template <class T>
void check_backward(nn::mixed_precision policy, const linear_case& c, double bound)
{
    linear_run<T> run(policy, c);
    run.fc.forward(run.device.ctx, run.x.ref(), run.y.ref());
    run.fc.backward(run.device.ctx, run.dy.ref(), run.dx.ref());
    const double h =
        c.relu ? 1e-6 : 1e-3; // the loss is linear in each parameter away from ReLU's kink
    const std::vector<double> dx = download<T>(run.dx.data(), run.values.x.size(), run.stream);
    CHECK(gpu::test::relative_error<double>(
              dx, finite_differences(run.values, &linear_values::x, h)) < bound);
    const std::vector<double> dw_reference = finite_differences(run.values, &linear_values::w, h);
    // The parameter gradients are FP32 sums of products of values the reference has exactly.
    CHECK(gpu::test::relative_error<double>(run.gradient(run.fc.weight_index()), dw_reference) <
          1e-5);
    if (c.bias) {
        const std::vector<double> db_reference =
            finite_differences(run.values, &linear_values::b, h);
        CHECK(gpu::test::relative_error<double>(run.gradient(*run.fc.bias_index()), db_reference) <
              1e-5);
        CHECK(run.fc.bias_gradient_in_use() != nn::bias_gradient_method::automatic);
    }
    // A second backward adds the same gradients again; without dx, dx is left alone.
    run.fc.backward(run.device.ctx, run.dy.ref(), {});
    std::vector<double> twice = dw_reference;
    for (double& v : twice) {
        v *= 2.0;
    }
    CHECK(gpu::test::relative_error<double>(run.gradient(run.fc.weight_index()), twice) < 1e-5);
    CHECK(download<T>(run.dx.data(), run.values.x.size(), run.stream) == dx);
}

constexpr linear_case shapes[] = {
    {5, 7, 3, true, false, nn::bias_gradient_method::automatic},
    {16, 33, 10, true, true, nn::bias_gradient_method::reduction},
    {9, 64, 17, false, false, nn::bias_gradient_method::automatic},
    {33, 20, 8, true, false, nn::bias_gradient_method::reduction},
};

} // namespace

TEST_CASE("linear's forward matches a float64 reference, bias and ReLU fused or not", "[nn][gpu]")
{
    for (const linear_case& c : shapes) {
        INFO(c.rows << " x " << c.in << " -> " << c.out << ", bias " << c.bias << ", relu "
                    << c.relu);
        check_forward<float>(nn::mixed_precision::fp32(), c, 1e-5);
        check_forward<__half>(nn::mixed_precision::fp16(), c, 1e-2);
        check_forward<__nv_bfloat16>(nn::mixed_precision::bf16(), c, 1e-2);
    }
}

TEST_CASE("linear's backward matches central finite differences of a float64 forward", "[nn][gpu]")
{
    for (const linear_case& c : shapes) {
        INFO(c.rows << " x " << c.in << " -> " << c.out << ", bias " << c.bias << ", relu "
                    << c.relu << ", bias gradient " << nn::to_string(c.method));
        check_backward<float>(nn::mixed_precision::fp32(), c, 1e-5);
        check_backward<__half>(nn::mixed_precision::fp16(), c, 1e-2);
        check_backward<__nv_bfloat16>(nn::mixed_precision::bf16(), c, 1e-2);
    }
}

namespace {

// Whether a layer left to choose picks cuBLASLt's bias-gradient epilogue for these types.
template <class T>
bool epilogue_chosen(nn::mixed_precision policy)
{
    linear_run<T> run(policy, {24, 40, 12, true, false, nn::bias_gradient_method::automatic});
    run.fc.forward(run.device.ctx, run.x.ref(), run.y.ref());
    run.fc.backward(run.device.ctx, run.dy.ref(), run.dx.ref());
    REQUIRE(run.fc.bias_gradient_in_use() != nn::bias_gradient_method::automatic);
    return run.fc.bias_gradient_in_use() == nn::bias_gradient_method::epilogue;
}

// Forced, the epilogue gives the finite differences' gradients, or throws where it has no kernel.
template <class T>
void check_forced_epilogue(nn::mixed_precision policy, bool relu, double bound)
{
    const linear_case forced{24, 40, 12, true, relu, nn::bias_gradient_method::epilogue};
    if (epilogue_chosen<T>(policy)) {
        check_backward<T>(policy, forced, bound);
        return;
    }
    linear_run<T> run(policy, forced);
    run.fc.forward(run.device.ctx, run.x.ref(), run.y.ref());
    CHECK_THROWS_AS(run.fc.backward(run.device.ctx, run.dy.ref(), run.dx.ref()),
                    gpu::blas::blas_error);
    WARN("cuBLASLt has no BGRADB kernel for "
         << gpu::to_string(policy.compute)
         << " inputs and an FP32 output here: the reduction runs");
}

} // namespace

TEST_CASE("the bias-gradient epilogue, when forced, gives the right gradients or says it cannot",
          "[nn][gpu]")
{
    check_forced_epilogue<__half>(nn::mixed_precision::fp16(), false, 1e-2);
    check_forced_epilogue<__nv_bfloat16>(nn::mixed_precision::bf16(), true, 1e-2);
    check_forced_epilogue<float>(nn::mixed_precision::fp32(), true, 1e-5);
}

TEST_CASE("linear's backward may write the input gradient over its input, never a gradient over a "
          "fused ReLU's output",
          "[nn][gpu]")
{
    const linear_case c{6, 8, 5, true, true, nn::bias_gradient_method::reduction};
    linear_run<float> run(nn::mixed_precision::fp32(), c);
    run.fc.forward(run.device.ctx, run.x.ref(), run.y.ref());
    // The ReLU's mask is the forward's output: a gradient written there first would erase it.
    CHECK_THROWS_WITH(run.fc.backward(run.device.ctx, run.y.ref(), run.dx.ref()),
                      ContainsSubstring("gpu::nn::linear(fc)::backward") &&
                          ContainsSubstring("the fused ReLU reads its mask from that output"));
    // dW reads the input, so it is computed before the input gradient overwrites it.
    run.fc.backward(run.device.ctx, run.dy.ref(), run.x.ref());
    const std::vector<double> dw_reference =
        finite_differences(run.values, &linear_values::w, 1e-6);
    CHECK(gpu::test::relative_error<double>(run.gradient(run.fc.weight_index()), dw_reference) <
          1e-5);
    const std::vector<double> dx = download<float>(run.x.data(), run.values.x.size(), run.stream);
    CHECK(gpu::test::relative_error<double>(
              dx, finite_differences(run.values, &linear_values::x, 1e-6)) < 1e-5);
}
