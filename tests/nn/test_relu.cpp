// gpu/nn/relu.hpp: planning (the output spec is the input's) and its checks without a GPU; on a
// GPU, the forward against max(x, 0) in every type, and the backward against central finite
// differences (FP32) and in place.
#include <gpu/nn/relu.hpp>

#include "catch.hpp"
#include "layer_test_support.hpp"
#include "nn_test_support.hpp"

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;
namespace dnn = gpu::dnn;
using gpu::element_type;

TEST_CASE("a relu layer plans any shape, type and layout cuDNN takes as its own output spec",
          "[nn]")
{
    nn::parameters store(nn::mixed_precision::fp16());
    gpu::test::host_context host(store);
    nn::relu act;
    CHECK(act.describe() == "relu");
    for (const nn::tensor_spec& spec : {
             nn::tensor_spec{.shape = {64, 128}, .type = element_type::fp16},
             nn::tensor_spec{.shape = {10}, .type = element_type::fp32},
             nn::tensor_spec{.shape = {8, 32, 14, 14},
             .type = element_type::bf16,
             .layout = dnn::tensor_layout::nhwc},
             nn::tensor_spec{.shape = {2, 3, 4, 5, 6, 7, 2, 2}, .type = element_type::fp32},
         }) {
        INFO(spec.to_string());
        CHECK(act.plan(host.ctx, spec) == spec);
        CHECK(act.planned_output() == spec);
    }
    CHECK_THROWS_WITH(
        act.plan(host.ctx, {.shape = {4, 4}, .type = element_type::fp64}),
        ContainsSubstring(
            "relu: the input is FP64 [4, 4] nchw; cuDNN takes FP32, FP16 or BF16 tensors"));
    CHECK_THROWS_WITH(act.plan(host.ctx, {.shape = {1, 2, 1, 2, 1, 2, 1, 2, 1}}),
                      ContainsSubstring("has 9 dimensions; cuDNN describes at most 8"));
    CHECK_THROWS_WITH(act.plan(host.ctx, {.shape = {4, 0, 2}}),
                      ContainsSubstring("dimension 1 of the input"));
    CHECK_THROWS_WITH(act.plan(host.ctx, {.shape = {65536, 65536}}),
                      ContainsSubstring("more than 2^31 - 1 elements"));
    CHECK_THROWS_WITH(act.plan(host.ctx, {.shape = {}}), ContainsSubstring("has no dimensions"));
    CHECK_FALSE(act.planned_input().has_value()); // a failed plan leaves the layer unplanned
    CHECK_THROWS_WITH(act.backward(host.ctx, {}, {}),
                      ContainsSubstring("relu: backward before a forward"));
}

// ---- GPU ----------------------------------------------------------------------------------------

namespace {

using gpu::test::device_tensor;

template <class T>
void check_relu(const std::vector<int>& dims, dnn::tensor_layout layout)
{
    gpu::stream stream;
    nn::parameters store(
        nn::mixed_precision::fp32()); // relu runs in its input's type whatever the policy
    gpu::test::device_context device(gpu::test::prepared(store, stream), store);
    device_tensor<T> x(dims, layout, stream), y(dims, layout, stream), dy(dims, layout, stream),
        dx(dims, layout, stream);
    nn::relu act;
    REQUIRE(act.plan(device.ctx, gpu::test::spec_of(x)) == gpu::test::spec_of(y));
    // No zeros: the derivative is defined everywhere (and finite differences see no kink).
    x.upload(gpu::test::nonzero_values(x.element_count(), 3));
    dy.upload(gpu::test::random_doubles(dy.element_count(), 4));
    act.forward(device.ctx, gpu::test::ref_of(x), gpu::test::ref_of(y));
    act.backward(device.ctx, gpu::test::ref_of(dy), gpu::test::ref_of(dx));

    std::vector<double> expected(x.values.size());
    std::transform(x.values.begin(), x.values.end(), expected.begin(),
                   [](double v) { return std::max(v, 0.0); });
    CHECK(y.download(stream) == expected); // exact: max(x, 0) rounds nothing
    std::vector<double> xs = x.values;
    const auto loss = [&] {
        double sum = 0.0;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            sum += std::max(xs[i], 0.0) * dy.values[i];
        }
        return sum;
    };
    CHECK(gpu::test::relative_error<double>(dx.download(stream),
                                            gpu::test::central_differences(xs, 1e-3, loss)) < 1e-9);
}

} // namespace

TEST_CASE("relu's forward is max(x, 0) and its backward matches central finite differences",
          "[nn][gpu]")
{
    check_relu<float>({3, 5, 4, 2}, dnn::tensor_layout::nchw);
    check_relu<float>({7, 9}, dnn::tensor_layout::nchw);
    check_relu<__half>({2, 6, 3, 5}, dnn::tensor_layout::nhwc);
    check_relu<__nv_bfloat16>({40}, dnn::tensor_layout::nchw);
}

TEST_CASE("relu runs in place, forward and backward", "[nn][gpu]")
{
    gpu::stream stream;
    nn::parameters store;
    gpu::test::device_context device(gpu::test::prepared(store, stream), store);
    device_tensor<float> x({4, 3, 5, 5}, dnn::tensor_layout::nchw, stream),
        dy(x.dims, x.layout, stream);
    x.upload(gpu::test::nonzero_values(x.element_count(), 8));
    dy.upload(gpu::test::random_doubles(dy.element_count(), 9));
    nn::relu act;
    act.plan(device.ctx, gpu::test::spec_of(x));
    act.forward(device.ctx, gpu::test::ref_of(x), gpu::test::ref_of(x)); // nn.ReLU(inplace=True)
    act.backward(device.ctx, gpu::test::ref_of(dy), gpu::test::ref_of(dy));
    const std::vector<double> y = x.download(stream);
    const std::vector<double> dx = dy.download(stream);
    for (std::size_t i = 0; i < y.size(); ++i) {
        CHECK(y[i] == std::max(x.values[i], 0.0));
        CHECK(dx[i] == (x.values[i] > 0.0 ? dy.values[i] : 0.0));
    }
}
