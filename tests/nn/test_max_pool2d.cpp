// gpu/nn/max_pool2d.hpp: the window's checks, PyTorch's output shape and the planned spec
// without a GPU; on a GPU, the forward against a float64 maximum over each window, and the
// backward against central finite differences of it.
#include <gpu/nn/max_pool2d.hpp>

#include "catch.hpp"
#include "layer_test_support.hpp"
#include "nn_test_support.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;
namespace dnn = gpu::dnn;
using gpu::element_type;

TEST_CASE("a max_pool2d layer takes PyTorch's window arguments and refuses bad ones", "[nn]")
{
    const nn::max_pool2d two(2);
    CHECK(two.describe() ==
          "max_pool2d(kernel [2, 2], stride [2, 2], padding [0, 0])"); // stride = kernel
    const nn::max_pool2d three(3, 2, 1);
    CHECK(three.describe() == "max_pool2d(kernel [3, 3], stride [2, 2], padding [1, 1])");
    const nn::max_pool2d oblong({3, 2}, {1, 2}, {1, 0});
    CHECK(oblong.kernel() == std::array<int, 2>{3, 2});
    CHECK(oblong.stride() == std::array<int, 2>{1, 2});
    CHECK(oblong.padding() == std::array<int, 2>{1, 0});

    CHECK_THROWS_WITH(nn::max_pool2d(0),
                      ContainsSubstring("gpu::nn::max_pool2d: the kernel [0, 0] must be positive"));
    CHECK_THROWS_WITH(nn::max_pool2d(2, -1),
                      ContainsSubstring("the stride [-1, -1] must be positive"));
    CHECK_THROWS_WITH(
        nn::max_pool2d(3, 1, 2),
        ContainsSubstring(
            "the padding [2, 2] must be in [0, half the kernel [3, 3]] (PyTorch's rule)"));
    CHECK_THROWS_WITH(nn::max_pool2d({2, 2}, {1, 1}, {0, -1}),
                      ContainsSubstring("the padding [0, -1]"));
}

TEST_CASE("a max_pool2d layer plans PyTorch's output shape in the input's type and layout", "[nn]")
{
    nn::parameters store(nn::mixed_precision::fp16());
    gpu::test::host_context host(store);
    nn::max_pool2d pool(3, 2, 1);
    CHECK(pool.output_shape({8, 16, 28, 28}) == std::vector<std::int64_t>{8, 16, 14, 14});
    CHECK(pool.output_shape({1, 1, 7, 6}) == std::vector<std::int64_t>{1, 1, 4, 3});
    CHECK_THROWS_WITH(
        pool.output_shape({16, 28, 28}),
        ContainsSubstring(
            "max_pool2d(kernel [3, 3], stride [2, 2], padding [1, 1]): the input has 3 "
            "dimensions; it needs [N, C, H, W]"));
    CHECK_THROWS_WITH(pool.output_shape({1, 1, -4, 4}),
                      ContainsSubstring("dimension 2 of the input is -4"));
    nn::max_pool2d wide(5);
    CHECK_THROWS_WITH(
        wide.output_shape({1, 1, 8, 4}),
        ContainsSubstring("the input's width 4 padded to 4 is smaller than the kernel's 5"));

    const nn::tensor_spec nhwc{
        .shape = {8, 16, 28, 28}, .type = element_type::fp16, .layout = dnn::tensor_layout::nhwc};
    CHECK(pool.plan(host.ctx, nhwc) == nn::tensor_spec{.shape = {8, 16, 14, 14},
                                                       .type = element_type::fp16,
                                                       .layout = dnn::tensor_layout::nhwc});
    REQUIRE(pool.pooling_plan() != nullptr);
    CHECK(pool.pooling_plan()->geometry().mode == dnn::pooling_mode::max);
    // Under the context's deterministic options the backward is cuDNN's deterministic one.
    host.ctx.set_convolution_options({.deterministic = true});
    CHECK(pool.plan(host.ctx, {.shape = {2, 3, 9, 9}}) == nn::tensor_spec{.shape = {2, 3, 5, 5}});
    CHECK(pool.pooling_plan()->geometry().mode == dnn::pooling_mode::max_deterministic);
    CHECK_THROWS_WITH(pool.plan(host.ctx, {.shape = {2, 3, 9, 9}, .type = element_type::fp64}),
                      ContainsSubstring("cuDNN takes FP32, FP16 or BF16 tensors"));
    CHECK_FALSE(pool.planned_input().has_value());
}

// ---- GPU ----------------------------------------------------------------------------------------

namespace {

using gpu::test::device_tensor;

// The float64 max pooling of x (N×C×H×W, logical) with PyTorch's implicit −∞ padding.
std::vector<double> reference_max_pool(const std::vector<double>& x, const std::vector<int>& in,
                                       const nn::max_pool2d& pool)
{
    const std::vector<std::int64_t> out = pool.output_shape({in.begin(), in.end()});
    std::vector<double> y;
    for (int plane = 0; plane < in[0] * in[1]; ++plane) {
        for (std::int64_t p = 0; p < out[2]; ++p) {
            for (std::int64_t q = 0; q < out[3]; ++q) {
                double best = -std::numeric_limits<double>::infinity();
                for (int r = 0; r < pool.kernel()[0]; ++r) {
                    for (int s = 0; s < pool.kernel()[1]; ++s) {
                        const std::int64_t i = p * pool.stride()[0] - pool.padding()[0] + r;
                        const std::int64_t j = q * pool.stride()[1] - pool.padding()[1] + s;
                        if (i >= 0 && i < in[2] && j >= 0 && j < in[3]) {
                            best = std::max(
                                best, x[static_cast<std::size_t>((plane * in[2] + i) * in[3] + j)]);
                        }
                    }
                }
                y.push_back(best);
            }
        }
    }
    return y;
}

template <class T>
void check_pool(const nn::max_pool2d& shape, const std::vector<int>& in, dnn::tensor_layout layout)
{
    gpu::stream stream;
    nn::parameters store(nn::mixed_precision::bf16()); // max_pool2d runs in its input's type
    gpu::test::device_context device(gpu::test::prepared(store, stream), store);
    nn::max_pool2d pool(shape.kernel(), shape.stride(), shape.padding());
    const std::vector<std::int64_t> out = pool.output_shape({in.begin(), in.end()});
    device_tensor<T> x(in, layout, stream), dx(in, layout, stream);
    device_tensor<T> y({out.begin(), out.end()}, layout, stream), dy(y.dims, layout, stream);
    REQUIRE(pool.plan(device.ctx, gpu::test::spec_of(x)) == gpu::test::spec_of(y));
    // Distinct values, exact in every type: one maximum per window, 2^-8 apart.
    x.upload(gpu::test::distinct_values(x.element_count(), 5));
    dy.upload(gpu::test::random_doubles(dy.element_count(), 6));
    pool.forward(device.ctx, gpu::test::ref_of(x), gpu::test::ref_of(y));
    pool.backward(device.ctx, gpu::test::ref_of(dy), gpu::test::ref_of(dx));

    CHECK(y.download(stream) == reference_max_pool(x.values, in, pool)); // a maximum rounds nothing
    std::vector<double> xs = x.values;
    const auto loss = [&] { return gpu::test::dot(reference_max_pool(xs, in, pool), dy.values); };
    CHECK(gpu::test::relative_error<double>(dx.download(stream),
                                            gpu::test::central_differences(xs, 1e-4, loss)) <
          gpu::test::tolerance_of<T>());
}

} // namespace

TEST_CASE(
    "max_pool2d's forward is each window's maximum and its backward matches finite differences",
    "[nn][gpu]")
{
    check_pool<float>(nn::max_pool2d(2), {2, 3, 8, 6}, dnn::tensor_layout::nchw);
    check_pool<float>(nn::max_pool2d(3, 2, 1), {2, 2, 9, 7},
                      dnn::tensor_layout::nchw); // overlapping windows
    check_pool<float>(nn::max_pool2d({3, 2}, {1, 2}, {1, 0}), {1, 4, 6, 8},
                      dnn::tensor_layout::nhwc);
    check_pool<__half>(nn::max_pool2d(2), {2, 4, 6, 6}, dnn::tensor_layout::nchw);
    check_pool<__nv_bfloat16>(nn::max_pool2d(3, 2, 1), {1, 3, 9, 9}, dnn::tensor_layout::nhwc);
}
