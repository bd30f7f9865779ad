// gpu/dnn/softmax.hpp: plans and every argument check on the host; softmax and log-softmax,
// forward and backward, against a float64 CPU reference on a GPU.
#include "typed_tensor.hpp"

#include <gpu/dnn/softmax.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include <test_support.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::dnn::data_type;
using gpu::dnn::softmax;
using gpu::dnn::softmax_algorithm;
using gpu::dnn::softmax_mode;
using gpu::dnn::tensor_layout;

// ---- host: plans and argument checks -------------------------------------------------------

TEST_CASE("a softmax plan holds its shape, algorithm and mode", "[dnn]")
{
    const softmax classes({32, 10, 1, 1}, softmax_algorithm::log);
    CHECK(classes.dims() == std::vector<int>{32, 10, 1, 1});
    CHECK(classes.elements() == 320);
    CHECK(classes.algorithm() == softmax_algorithm::log);
    CHECK(classes.mode() == softmax_mode::channel);
    CHECK(classes.type() == data_type::fp32);
    CHECK(classes.data_descriptor().dims() == classes.dims());
    CHECK(classes.to_string() == "log softmax (log) over channel of fp32 nchw [32, 10, 1, 1]");
    const softmax volume({2, 3, 4, 5, 6}, softmax_algorithm::accurate, softmax_mode::instance,
                         data_type::fp16, tensor_layout::nhwc);
    CHECK(volume.data_descriptor().layout() == tensor_layout::nhwc);
    CHECK(volume.to_string() == "softmax (accurate) over instance of fp16 nhwc [2, 3, 4, 5, 6]");
    CHECK(gpu::dnn::to_string(softmax_algorithm::fast) == "fast");
    CHECK(gpu::dnn::to_string(static_cast<softmax_algorithm>(3)) == "unknown");
    CHECK(gpu::dnn::to_string(static_cast<softmax_mode>(2)) == "unknown");
}

TEST_CASE("bad softmax plans are refused with their values", "[dnn]")
{
    CHECK_THROWS_WITH(softmax({32, 10, 1}),
                      ContainsSubstring("3 dimensions [32, 10, 1], but cuDNN takes 4 to 8"));
    CHECK_THROWS_WITH(softmax({32, 0, 1, 1}),
                      ContainsSubstring("dimension 1 of [32, 0, 1, 1] is 0"));
    CHECK_THROWS_WITH(softmax({32, 10, 1, 1}, static_cast<softmax_algorithm>(7)),
                      ContainsSubstring("softmax_algorithm value 7"));
    CHECK_THROWS_WITH(softmax({32, 10, 1, 1}, softmax_algorithm::log, static_cast<softmax_mode>(5)),
                      ContainsSubstring("softmax_mode value 5"));
}

TEST_CASE("softmax refuses buffers of another type or size, an empty handle and null pointers",
          "[dnn]")
{
    softmax p({4, 10, 1, 1}, softmax_algorithm::accurate, softmax_mode::channel, data_type::fp16);
    gpu::dnn::handle none = gpu::dnn::handle::from_native_handle(nullptr);
    gpu::device_buffer<__half> empty;
    CHECK_THROWS_WITH(
        p.forward(none, empty, empty),
        ContainsSubstring("softmax::forward: x has 0 elements but the operation needs 40"));
    CHECK_THROWS_WITH(p.backward(none, empty, empty, empty),
                      ContainsSubstring("softmax::backward: y has 0 elements"));
    gpu::device_buffer<float> single;
    CHECK_THROWS_WITH(p.forward(none, single, single), ContainsSubstring("hold fp32 elements"));
    __half storage{};
    CHECK_THROWS_AS(p.forward_raw(none, &storage, &storage), std::logic_error);
    gpu::test::fake_handle fake;
    CHECK_THROWS_WITH(p.backward_raw(fake.handle, &storage, &storage, nullptr),
                      ContainsSubstring("softmax::backward: dx is a null pointer"));
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<softmax>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<softmax>);
    softmax moved(std::move(p));
    CHECK(p.data_descriptor().get() == nullptr); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_AS(p.forward(fake.handle, empty, empty), std::logic_error); // NOLINT
    CHECK(moved.elements() == 40);
}

// ---- the float64 reference ------------------------------------------------------------------

namespace {

// The groups of logical NCHW... indices one softmax runs over: the channels at each (n,
// position) for `channel`, every element of a sample for `instance`.
std::vector<std::vector<std::size_t>> groups_of(const std::vector<int>& dims, softmax_mode mode)
{
    std::size_t spatial = 1;
    for (std::size_t d = 2; d < dims.size(); ++d) {
        spatial *= static_cast<std::size_t>(dims[d]);
    }
    const auto channels = static_cast<std::size_t>(dims[1]);
    std::vector<std::vector<std::size_t>> groups;
    for (std::size_t n = 0; n < static_cast<std::size_t>(dims[0]); ++n) {
        if (mode == softmax_mode::instance) {
            groups.emplace_back();
        }
        for (std::size_t position = 0; position < spatial; ++position) {
            if (mode == softmax_mode::channel) {
                groups.emplace_back();
            }
            for (std::size_t c = 0; c < channels; ++c) {
                // instance groups are filled position by position: the order does not matter.
                groups.back().push_back((n * channels + c) * spatial + position);
            }
        }
    }
    return groups;
}

// The softmax (or log-softmax) of x, in float64.
std::vector<double> reference_forward(const std::vector<double>& x, const std::vector<int>& dims,
                                      softmax_mode mode, bool log)
{
    std::vector<double> y(x.size());
    for (const std::vector<std::size_t>& group : groups_of(dims, mode)) {
        double top = x[group.front()];
        for (const std::size_t i : group) {
            top = std::max(top, x[i]);
        }
        double sum = 0.0;
        for (const std::size_t i : group) {
            sum += std::exp(x[i] - top);
        }
        for (const std::size_t i : group) {
            y[i] = log ? x[i] - top - std::log(sum) : std::exp(x[i] - top) / sum;
        }
    }
    return y;
}

// dx from y (probabilities, or log-probabilities when `log`) and dy, in float64.
std::vector<double> reference_backward(const std::vector<double>& y, const std::vector<double>& dy,
                                       const std::vector<int>& dims, softmax_mode mode, bool log)
{
    std::vector<double> dx(y.size());
    for (const std::vector<std::size_t>& group : groups_of(dims, mode)) {
        double sum = 0.0;
        for (const std::size_t i : group) {
            sum += log ? dy[i] : dy[i] * y[i];
        }
        for (const std::size_t i : group) {
            dx[i] = log ? dy[i] - std::exp(y[i]) * sum : y[i] * (dy[i] - sum);
        }
    }
    return dx;
}

using gpu::test::error_of;

template <class T>
void check_softmax(gpu::dnn::handle& h, gpu::stream_ref s, const std::vector<int>& dims,
                   softmax_algorithm algorithm, softmax_mode mode, tensor_layout layout)
{
    const softmax p(dims, algorithm, mode, gpu::dnn::data_type_of<T>, layout);
    INFO(p.to_string());
    const bool log = algorithm == softmax_algorithm::log;
    gpu::test::device_tensor<T> x(dims, layout, s);
    gpu::test::device_tensor<T> y(dims, layout, s);
    gpu::test::device_tensor<T> dy(dims, layout, s);
    gpu::test::device_tensor<T> dx(dims, layout, s);
    // Logits in [-4, 4): a spread that gives the probabilities some range.
    std::vector<double> logits = gpu::test::nonzero_values(p.elements(), 31);
    for (double& v : logits) {
        v *= 4.0;
    }
    x.upload(logits);
    dy.upload(gpu::test::nonzero_values(p.elements(), 32));
    p.forward(h, x.buffer, y.buffer);
    const std::vector<double> forward = y.download(s);
    CHECK(error_of(forward, reference_forward(x.values, dims, mode, log)) <
          gpu::test::tolerance_of<T>());
    // Each softmax sums to 1 (its exponentials, for the log-softmax).
    for (const std::vector<std::size_t>& group : groups_of(dims, mode)) {
        double sum = 0.0;
        for (const std::size_t i : group) {
            sum += log ? std::exp(forward[i]) : forward[i];
        }
        CHECK(sum == Approx(1.0).epsilon(std::is_same_v<T, float> ? 1e-5 : 2e-2));
    }
    p.backward(h, y.buffer, dy.buffer, dx.buffer);
    CHECK(error_of(dx.download(s), reference_backward(forward, dy.values, dims, mode, log)) <
          gpu::test::tolerance_of<T>());
}

template <class T>
void check_every_variant()
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        for (const softmax_algorithm algorithm :
             {softmax_algorithm::accurate, softmax_algorithm::log}) {
            check_softmax<T>(h, s, {16, 10, 1, 1}, algorithm, softmax_mode::channel, layout);
            check_softmax<T>(h, s, {2, 5, 3, 4}, algorithm, softmax_mode::channel, layout);
            check_softmax<T>(h, s, {2, 5, 3, 4}, algorithm, softmax_mode::instance, layout);
        }
    }
}

} // namespace

// ---- GPU: against the reference --------------------------------------------------------------

TEST_CASE("FP32 softmax and log-softmax, forward and backward, match the float64 reference",
          "[dnn][gpu]")
{
    check_every_variant<float>();
}

TEST_CASE("FP16 softmax and log-softmax, forward and backward, match the float64 reference",
          "[dnn][gpu]")
{
    check_every_variant<__half>();
}

TEST_CASE("BF16 softmax and log-softmax, forward and backward, match the float64 reference",
          "[dnn][gpu]")
{
    check_every_variant<__nv_bfloat16>();
}

TEST_CASE("the fast softmax matches the accurate one where nothing overflows", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    check_softmax<float>(h, s, {8, 12, 1, 1}, softmax_algorithm::fast, softmax_mode::channel,
                         tensor_layout::nchw);
}
