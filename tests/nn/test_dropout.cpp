// gpu/nn/dropout.hpp: the probability's checks and the identity plan (p = 0) without a GPU; on a
// GPU, the identity in evaluation, and in training a mask that the forward and the backward
// share, scaled by 1 / (1 - p), new at each forward, dropping about p of the elements.
#include <gpu/nn/dropout.hpp>

#include "catch.hpp"
#include "layer_test_support.hpp"
#include "nn_test_support.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;
namespace dnn = gpu::dnn;
using gpu::element_type;

TEST_CASE("a dropout layer takes a probability below 1 and a seed", "[nn]")
{
    const nn::dropout drop(0.25F, 7);
    CHECK(drop.describe() == "dropout(p 0.25)");
    CHECK(drop.probability() == 0.25F);
    CHECK(drop.seed() == 7);
    CHECK(nn::dropout().probability() == 0.5F); // nn.Dropout()'s default
    CHECK(drop.generator() == nullptr);         // made by the first plan
    CHECK_FALSE(drop.dropped());
    CHECK_THROWS_WITH(nn::dropout(1.0F),
                      ContainsSubstring("gpu::nn::dropout: p 1 is outside [0, 1)"));
    CHECK_THROWS_WITH(nn::dropout(-0.5F), ContainsSubstring("p -0.5 is outside [0, 1)"));
    CHECK_THROWS_AS(nn::dropout(std::numeric_limits<float>::quiet_NaN()), std::invalid_argument);
}

TEST_CASE("a dropout layer plans its input's spec and refuses what cuDNN cannot drop", "[nn]")
{
    nn::parameters store;
    gpu::test::host_context host(store);
    nn::dropout identity(0.0F); // p = 0 needs no generator: planned without a GPU
    const nn::tensor_spec spec{.shape = {32, 100}, .type = element_type::bf16};
    CHECK(identity.plan(host.ctx, spec) == spec);
    CHECK(identity.generator() == nullptr);
    CHECK(identity.mask().empty());
    const nn::tensor_spec nhwc{
        .shape = {2, 3, 4, 5}, .type = element_type::fp16, .layout = dnn::tensor_layout::nhwc};
    CHECK(identity.plan(host.ctx, nhwc) == nhwc);

    nn::dropout drop(0.5F);
    CHECK_THROWS_WITH(
        drop.plan(host.ctx, {.shape = {4, 4}, .type = element_type::fp64}),
        ContainsSubstring(
            "dropout(p 0.5): the input is FP64 [4, 4] nchw; cuDNN takes FP32, FP16 or BF16"));
    CHECK_THROWS_WITH(drop.plan(host.ctx, {.shape = {65536, 65536}}),
                      ContainsSubstring("more than 2^31 - 1 elements"));
    CHECK_THROWS_WITH(drop.plan(host.ctx, {.shape = {3, 0}}),
                      ContainsSubstring("dimension 1 of the input"));
    // A valid input reaches the cuDNN handle (empty here) to seed the generator.
    CHECK_THROWS_AS(drop.plan(host.ctx, spec), std::logic_error);
    CHECK_FALSE(drop.planned_input().has_value());
}

// ---- GPU ----------------------------------------------------------------------------------------

namespace {

using gpu::test::device_tensor;

template <class T>
struct dropout_run {
    gpu::stream stream;
    nn::parameters store;
    gpu::test::device_context device;
    nn::dropout drop;
    device_tensor<T> x, y, dy, dx;

    dropout_run(float p, const std::vector<int>& dims)
        : device(gpu::test::prepared(store, stream), store), drop(p, 11),
          x(dims, dnn::tensor_layout::nchw, stream), y(dims, x.layout, stream),
          dy(dims, x.layout, stream), dx(dims, x.layout, stream)
    {
        REQUIRE(drop.plan(device.ctx, gpu::test::spec_of(x)) == gpu::test::spec_of(x));
        x.upload(gpu::test::nonzero_values(x.element_count(), 12)); // a zero output means dropped
        dy.upload(gpu::test::nonzero_values(dy.element_count(), 13));
    }
    void forward() { drop.forward(device.ctx, gpu::test::ref_of(x), gpu::test::ref_of(y)); }
    void backward() { drop.backward(device.ctx, gpu::test::ref_of(dy), gpu::test::ref_of(dx)); }
};

// In training: y is 0 or x / (1 - p) element by element, dx is 0 or dy / (1 - p) at the same
// elements; returns the fraction dropped.
template <class T>
double check_mask(dropout_run<T>& run, double p)
{
    const std::vector<double> y = run.y.download(run.stream);
    const std::vector<double> dx = run.dx.download(run.stream);
    const double scale = 1.0 / (1.0 - p);
    const double tolerance = gpu::test::tolerance_of<T>();
    std::size_t dropped = 0;
    for (std::size_t i = 0; i < y.size(); ++i) {
        const bool zero = y[i] == 0.0;
        dropped += zero ? 1 : 0;
        if (zero) {
            CHECK(dx[i] == 0.0);
        } else {
            CHECK(y[i] == Approx(run.x.values[i] * scale).epsilon(tolerance));
            CHECK(dx[i] == Approx(run.dy.values[i] * scale).epsilon(tolerance));
        }
    }
    return static_cast<double>(dropped) / static_cast<double>(y.size());
}

template <class T>
void check_training(float p)
{
    dropout_run<T> run(p, {8, 16, 8, 8});
    REQUIRE(run.drop.generator() != nullptr);
    run.forward();
    CHECK(run.drop.dropped());
    run.backward();
    const double fraction = check_mask(run, p);
    CHECK(fraction == Approx(p).margin(0.05)); // 8192 draws: the standard deviation is under 0.006
    // In place cuDNN does not document: refused, the mask and the outputs left as they were.
    CHECK_THROWS_WITH(
        run.drop.forward(run.device.ctx, gpu::test::ref_of(run.x), gpu::test::ref_of(run.x)),
        ContainsSubstring("cuDNN does not document dropout in place"));
    CHECK_THROWS_WITH(
        run.drop.backward(run.device.ctx, gpu::test::ref_of(run.dy), gpu::test::ref_of(run.dy)),
        ContainsSubstring("dropout's backward in place"));
    CHECK(check_mask(run, p) == fraction);
    const std::vector<double> first = run.y.download(run.stream);
    run.forward(); // a new mask
    run.backward();
    CHECK(check_mask(run, p) == Approx(p).margin(0.05));
    CHECK(run.y.download(run.stream) != first);
}

} // namespace

TEST_CASE("dropout in training drops about p, scales the rest, and the backward uses the same mask",
          "[nn][gpu]")
{
    check_training<float>(0.5F);
    check_training<__half>(0.2F);
    check_training<__nv_bfloat16>(0.7F);
}

TEST_CASE("dropout in evaluation, and with p = 0, is the identity forward and backward",
          "[nn][gpu]")
{
    dropout_run<float> run(0.5F, {4, 100});
    run.device.ctx.set_training(false); // model.eval()
    run.forward();
    CHECK_FALSE(run.drop.dropped());
    run.backward();
    CHECK(run.y.download(run.stream) == run.x.values);
    CHECK(run.dx.download(run.stream) == run.dy.values);
    // In place, nothing moves.
    run.drop.forward(run.device.ctx, gpu::test::ref_of(run.x), gpu::test::ref_of(run.x));
    CHECK(run.x.download(run.stream) == run.x.values);

    dropout_run<__half> none(0.0F, {3, 7, 5});
    none.forward(); // training, but p = 0
    none.backward();
    CHECK(none.y.download(none.stream) == none.x.values);
    CHECK(none.dx.download(none.stream) == none.dy.values);
}

TEST_CASE("a dropout planned again for another batch continues its generator", "[nn][gpu]")
{
    dropout_run<float> run(0.5F, {2, 64});
    const dnn::dropout* generator = run.drop.generator();
    device_tensor<float> big({5, 64}, dnn::tensor_layout::nchw, run.stream),
        out(big.dims, big.layout, run.stream);
    big.upload(gpu::test::nonzero_values(big.element_count(), 14));
    run.drop.plan(run.device.ctx, gpu::test::spec_of(big));
    CHECK(run.drop.generator() == generator); // seeded once
    CHECK(run.drop.mask().size() >=
          dnn::dropout::reserve_bytes(big.element_count(), dnn::data_type::fp32));
    run.drop.forward(run.device.ctx, gpu::test::ref_of(big), gpu::test::ref_of(out));
    const std::vector<double> y = out.download(run.stream);
    for (std::size_t i = 0; i < y.size(); ++i) {
        CHECK((y[i] == 0.0 || y[i] == Approx(2.0 * big.values[i]).epsilon(1e-6)));
    }
}
