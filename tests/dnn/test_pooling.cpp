// gpu/dnn/pooling.hpp: plans and every argument check on the host; max and average pooling,
// forward and backward, against a float64 CPU reference on a GPU.
#include "typed_tensor.hpp"

#include <gpu/dnn/pooling.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include <test_support.hpp>

#include <cuda_runtime_api.h>

#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::dnn::data_type;
using gpu::dnn::pooling;
using gpu::dnn::pooling_geometry;
using gpu::dnn::pooling_mode;
using gpu::dnn::tensor_layout;

// ---- host: plans and argument checks -------------------------------------------------------

TEST_CASE("a pooling plan holds the shapes and descriptors of its input and output", "[dnn]")
{
    const tensor_layout layout = GENERATE(tensor_layout::nchw, tensor_layout::nhwc);
    const pooling p({2, 3, 8, 10}, {.window = {3, 3}, .padding = {1, 1}, .stride = {2, 2}},
                    data_type::bf16, layout);
    CHECK(p.input_dims() == std::vector<int>{2, 3, 8, 10});
    CHECK(p.output_dims() == std::vector<int>{2, 3, 4, 5});
    CHECK(p.input_elements() == 480);
    CHECK(p.output_elements() == 120);
    CHECK(p.type() == data_type::bf16);
    CHECK(p.layout() == layout);
    CHECK(p.input_descriptor().dims() == p.input_dims());
    CHECK(p.input_descriptor().layout() == layout);
    CHECK(p.output_descriptor().dims() == p.output_dims());
    CHECK(p.output_descriptor().type() == data_type::bf16);
    CHECK(p.descriptor().geometry() == p.geometry());
    CHECK(p.to_string() == "bf16 " + std::string(gpu::dnn::to_string(layout)) +
                               " input [2, 3, 8, 10] output [2, 3, 4, 5], max, window [3, 3], "
                               "padding [1, 1], stride [2, 2]");
}

TEST_CASE("bad pooling plans are refused before any descriptor is made", "[dnn]")
{
    CHECK_THROWS_WITH(pooling({2, 3, 8}, {}), ContainsSubstring("has 3 dimensions"));
    CHECK_THROWS_WITH(pooling({2, 3, 8, 8}, {.window = {9, 9}}),
                      ContainsSubstring("larger than the padded input"));
    CHECK_THROWS_WITH(pooling({2, 3, 8, 8}, {}, static_cast<data_type>(5)),
                      ContainsSubstring("data_type value 5"));
    CHECK_THROWS_WITH(pooling({2, 3, 8, 8}, {}, data_type::fp32, static_cast<tensor_layout>(3)),
                      ContainsSubstring("tensor_layout value 3"));
}

TEST_CASE("pooling refuses buffers of another type or size, naming the sizes", "[dnn]")
{
    const pooling p({2, 3, 8, 10}, {}, data_type::fp16);
    gpu::dnn::handle none = gpu::dnn::handle::from_native_handle(nullptr);
    const gpu::device_buffer<__half> empty;
    gpu::device_buffer<__half> out;
    CHECK_THROWS_WITH(p.forward(none, empty, out),
                      ContainsSubstring("gpu::dnn::pooling::forward: x has 0 elements but the "
                                        "operation needs 480 (fp16 nchw input [2, 3, 8, 10]"));
    gpu::device_buffer<float> wrong;
    CHECK_THROWS_WITH(
        p.forward(none, gpu::device_buffer<float>(), wrong),
        ContainsSubstring("the buffers hold fp32 elements but the operation was planned for fp16"));
    gpu::device_buffer<__nv_bfloat16> bf16;
    CHECK_THROWS_WITH(p.backward(none, gpu::device_buffer<__nv_bfloat16>(),
                                 gpu::device_buffer<__nv_bfloat16>(),
                                 gpu::device_buffer<__nv_bfloat16>(), bf16),
                      ContainsSubstring("hold bf16 elements"));
    CHECK_THROWS_WITH(
        p.backward(none, empty, empty, empty, out),
        ContainsSubstring("pooling::backward: y has 0 elements but the operation needs 120"));
}

TEST_CASE("pooling refuses an empty handle, a null pointer and a moved-from plan", "[dnn]")
{
    pooling p({1, 1, 4, 4}, {});
    gpu::dnn::handle none = gpu::dnn::handle::from_native_handle(nullptr);
    float storage = 0.0F;
    CHECK_THROWS_WITH(p.forward_raw(none, &storage, &storage),
                      ContainsSubstring("pooling::forward: the gpu::dnn::handle is empty"));
    CHECK_THROWS_AS(p.backward_raw(none, &storage, &storage, &storage, &storage), std::logic_error);
    gpu::test::fake_handle fake;
    CHECK_THROWS_WITH(p.forward_raw(fake.handle, &storage, nullptr),
                      ContainsSubstring("pooling::forward: y is a null pointer"));
    CHECK_THROWS_WITH(p.backward_raw(fake.handle, &storage, nullptr, &storage, &storage),
                      ContainsSubstring("pooling::backward: dy is a null pointer"));
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<pooling>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<pooling>);
    pooling q(std::move(p));
    CHECK(q.output_dims() == std::vector<int>{1, 1, 2, 2});
    CHECK(p.input_descriptor().get() == nullptr); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_WITH(
        p.forward_raw(fake.handle, &storage, &storage), // NOLINT(bugprone-use-after-move)
        ContainsSubstring("is empty (moved from or released; it holds no cuDNN descriptor)"));
    gpu::device_buffer<float> out;
    CHECK_THROWS_AS(p.forward(fake.handle, gpu::device_buffer<float>(), out),
                    std::logic_error); // NOLINT
}

// ---- the float64 reference ------------------------------------------------------------------

namespace {

// Calls visit(output index, input indices inside the window) for every window of a 2-d pooling
// of logical NCHW data.
template <class Visit>
void for_each_window(const std::vector<int>& in, const pooling_geometry& g, Visit visit)
{
    const std::vector<int> out = gpu::dnn::pooling_output_dims(in, g);
    std::vector<std::size_t> members;
    std::size_t o = 0;
    for (int nc = 0; nc < in[0] * in[1]; ++nc) {
        for (int oh = 0; oh < out[2]; ++oh) {
            for (int ow = 0; ow < out[3]; ++ow) {
                members.clear();
                for (int r = 0; r < g.window[0]; ++r) {
                    const int ih = oh * g.stride[0] - g.padding[0] + r;
                    for (int s = 0; s < g.window[1]; ++s) {
                        const int iw = ow * g.stride[1] - g.padding[1] + s;
                        if (ih >= 0 && ih < in[2] && iw >= 0 && iw < in[3]) {
                            members.push_back((static_cast<std::size_t>(nc) * in[2] + ih) * in[3] +
                                              iw);
                        }
                    }
                }
                visit(o++, members);
            }
        }
    }
}

bool is_max(pooling_mode mode)
{
    return mode == pooling_mode::max || mode == pooling_mode::max_deterministic;
}

// What an average divides by.
double divisor(const pooling_geometry& g, std::size_t members)
{
    return g.mode == pooling_mode::average_include_padding ? g.window[0] * g.window[1]
                                                           : static_cast<double>(members);
}

std::size_t argmax(const std::vector<double>& x, const std::vector<std::size_t>& members)
{
    std::size_t best = members.front();
    for (const std::size_t i : members) {
        best = x[i] > x[best] ? i : best;
    }
    return best;
}

std::vector<double> reference_forward(const std::vector<double>& x, const std::vector<int>& in,
                                      const pooling_geometry& g)
{
    std::vector<double> y;
    for_each_window(in, g, [&](std::size_t, const std::vector<std::size_t>& members) {
        if (is_max(g.mode)) {
            y.push_back(x[argmax(x, members)]);
            return;
        }
        double sum = 0.0;
        for (const std::size_t i : members) {
            sum += x[i];
        }
        y.push_back(sum / divisor(g, members.size()));
    });
    return y;
}

std::vector<double> reference_backward(const std::vector<double>& x, const std::vector<int>& in,
                                       const pooling_geometry& g, const std::vector<double>& dy)
{
    std::vector<double> dx(x.size(), 0.0);
    for_each_window(in, g, [&](std::size_t o, const std::vector<std::size_t>& members) {
        if (is_max(g.mode)) {
            dx[argmax(x, members)] += dy[o];
            return;
        }
        for (const std::size_t i : members) {
            dx[i] += dy[o] / divisor(g, members.size());
        }
    });
    return dx;
}

using gpu::test::error_of;

const std::vector<pooling_geometry>& geometries()
{
    static const std::vector<pooling_geometry> all{
        {},
        {.window = {3, 3}, .padding = {1, 1}, .stride = {2, 2}},
        {.window = {2, 3},
         .padding = {1, 1},
         .stride = {1, 2},
         .mode = pooling_mode::max_deterministic},
        {.window = {3, 3},
         .padding = {1, 1},
         .stride = {2, 2},
         .mode = pooling_mode::average_include_padding},
        {.window = {3, 2},
         .padding = {1, 1},
         .stride = {1, 1},
         .mode = pooling_mode::average_exclude_padding},
    };
    return all;
}

template <class T>
void check_against_reference(tensor_layout layout)
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const std::vector<int> in{2, 3, 8, 10}; // 480 elements: distinct values even in bf16
    for (const pooling_geometry& g : geometries()) {
        const pooling p(in, g, gpu::dnn::data_type_of<T>, layout);
        INFO(p.to_string());
        gpu::test::device_tensor<T> x(in, layout, s);
        gpu::test::device_tensor<T> y(p.output_dims(), layout, s);
        gpu::test::device_tensor<T> dy(p.output_dims(), layout, s);
        gpu::test::device_tensor<T> dx(in, layout, s);
        x.upload(gpu::test::distinct_values(x.element_count(), 11));
        dy.upload(gpu::test::nonzero_values(dy.element_count(), 12));
        p.forward(h, x.buffer, y.buffer);
        const std::vector<double> forward = y.download(s);
        CHECK(error_of(forward, reference_forward(x.values, in, g)) < gpu::test::tolerance_of<T>());
        // y.buffer holds exactly what the forward wrote: max pooling's backward finds the
        // maxima by comparing it with x.
        p.backward(h, y.buffer, dy.buffer, x.buffer, dx.buffer);
        CHECK(error_of(dx.download(s), reference_backward(x.values, in, g, dy.values)) <
              gpu::test::tolerance_of<T>());
    }
}

} // namespace

// ---- GPU: against the reference --------------------------------------------------------------

TEST_CASE("FP32 max and average pooling, forward and backward, match the float64 reference",
          "[dnn][gpu]")
{
    check_against_reference<float>(tensor_layout::nchw);
    check_against_reference<float>(tensor_layout::nhwc);
}

TEST_CASE("FP16 max and average pooling, forward and backward, match the float64 reference",
          "[dnn][gpu]")
{
    check_against_reference<__half>(tensor_layout::nchw);
    check_against_reference<__half>(tensor_layout::nhwc);
}

TEST_CASE("BF16 max and average pooling, forward and backward, match the float64 reference",
          "[dnn][gpu]")
{
    check_against_reference<__nv_bfloat16>(tensor_layout::nchw);
    check_against_reference<__nv_bfloat16>(tensor_layout::nhwc);
}

TEST_CASE("max pooling propagates NaN unless told not to", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (const bool propagate : {true, false}) {
        const pooling p({1, 1, 2, 2}, {.propagate_nan = propagate});
        gpu::test::device_tensor<float> x({1, 1, 2, 2}, tensor_layout::nchw, s);
        gpu::test::device_tensor<float> y({1, 1, 1, 1}, tensor_layout::nchw, s);
        x.upload({0.5, nan, -1.0, 0.25});
        p.forward(h, x.buffer, y.buffer);
        const double result = y.download(s).at(0);
        INFO("propagate " << propagate << ": " << result);
        CHECK(std::isnan(result) == propagate);
        if (!propagate) {
            CHECK(result == 0.5);
        }
    }
}

TEST_CASE("a pooling forward and backward replay from a CUDA graph", "[dnn][gpu]")
{
    // Nothing in either call synchronises or allocates: both can be captured.
    gpu::stream s;
    gpu::dnn::handle h(s);
    const std::vector<int> in{2, 3, 8, 10};
    const pooling_geometry g{.window = {3, 3}, .padding = {1, 1}, .stride = {2, 2}};
    const pooling p(in, g);
    gpu::test::device_tensor<float> x(in, tensor_layout::nchw, s);
    gpu::test::device_tensor<float> y(p.output_dims(), tensor_layout::nchw, s);
    gpu::test::device_tensor<float> dy(p.output_dims(), tensor_layout::nchw, s);
    gpu::test::device_tensor<float> dx(in, tensor_layout::nchw, s);
    x.upload(gpu::test::distinct_values(x.element_count(), 3));
    dy.upload(gpu::test::nonzero_values(dy.element_count(), 4));
    // Warm-up outside the capture: a handle's first calls may load modules or set up lazily.
    p.forward(h, x.buffer, y.buffer);
    p.backward(h, y.buffer, dy.buffer, x.buffer, dx.buffer);
    s.synchronize();
    // Poisoned again, so that only the replay can write the right values.
    y.upload(std::vector<double>(y.element_count(), std::nan("")));
    dx.upload(std::vector<double>(dx.element_count(), std::nan("")));
    cudaGraph_t graph = nullptr;
    REQUIRE(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    p.forward(h, x.buffer, y.buffer);
    p.backward(h, y.buffer, dy.buffer, x.buffer, dx.buffer);
    REQUIRE(cudaStreamEndCapture(s.get(), &graph) == cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    REQUIRE(cudaGraphLaunch(exec, s.get()) == cudaSuccess);
    CHECK(error_of(y.download(s), reference_forward(x.values, in, g)) < 1e-5);
    CHECK(error_of(dx.download(s), reference_backward(x.values, in, g, dy.values)) < 1e-5);
    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
    CHECK(cudaGraphDestroy(graph) == cudaSuccess);
}
