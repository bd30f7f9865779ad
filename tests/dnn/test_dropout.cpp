// gpu/dnn/dropout.hpp: argument checks and reserve sizes on the host; the masks cuDNN draws
// (fraction kept, scaling, the backward's mask, seeds, successive forwards, graph replays,
// restored states) on a GPU.
#include "typed_tensor.hpp"

#include <gpu/dnn/dropout.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include <cuda_runtime_api.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::dnn::data_type;
using gpu::dnn::dropout;

// ---- host: arguments and reserve sizes ------------------------------------------------------

TEST_CASE(
    "dropout refuses a probability below 0, of 1 or more, or NaN before it looks at the handle",
    "[dnn]")
{
    gpu::dnn::handle none = gpu::dnn::handle::from_native_handle(nullptr);
    CHECK_THROWS_WITH(dropout(none, 1.0F, 1),
                      ContainsSubstring("gpu::dnn::dropout: the probability 1 is outside [0, 1)"));
    CHECK_THROWS_WITH(dropout(none, -0.25F, 1),
                      ContainsSubstring("the probability -0.25 is outside"));
    CHECK_THROWS_WITH(dropout(none, 1.5F, 1), ContainsSubstring("the probability 1.5 is outside"));
    CHECK_THROWS_WITH(dropout(none, std::numeric_limits<float>::quiet_NaN(), 1),
                      ContainsSubstring("the probability nan is outside"));
    CHECK_THROWS_AS(dropout::restore(none, 1.0F, 1, gpu::device_buffer<std::byte>()),
                    std::invalid_argument);
}

TEST_CASE("dropout refuses an empty handle", "[dnn]")
{
    gpu::dnn::handle none = gpu::dnn::handle::from_native_handle(nullptr);
    CHECK_THROWS_WITH(dropout(none, 0.5F, 42),
                      ContainsSubstring("gpu::dnn::dropout: the gpu::dnn::handle is empty"));
    CHECK_THROWS_AS(dropout(none, 0.0F, 42), std::logic_error);
    CHECK_THROWS_WITH(dropout::restore(none, 0.5F, 42, gpu::device_buffer<std::byte>()),
                      ContainsSubstring("dropout::restore: the gpu::dnn::handle is empty"));
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<dropout>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<dropout>);
}

TEST_CASE("dropout's reserve holds a mask for every element, as cuDNN sizes it", "[dnn]")
{
    const data_type type = GENERATE(data_type::fp32, data_type::fp16, data_type::bf16);
    const std::size_t small = dropout::reserve_bytes(1000, type);
    const std::size_t large = dropout::reserve_bytes(1'000'000, type);
    INFO(gpu::dnn::to_string(type) << ": " << small << " and " << large << " bytes");
    // At least a bit per element; more elements need more.
    CHECK(small >= 1000 / 8);
    CHECK(large >= 1'000'000 / 8);
    CHECK(large > small);
    CHECK(dropout::reserve_bytes(1'000'000, type) == large);
}

TEST_CASE("dropout's reserve size refuses counts cuDNN cannot describe", "[dnn]")
{
    CHECK_THROWS_WITH(dropout::reserve_bytes(0, data_type::fp32),
                      ContainsSubstring("dropout::reserve_bytes: 0 elements"));
    CHECK_THROWS_WITH(dropout::reserve_bytes(std::size_t{INT_MAX} + 1, data_type::fp32),
                      ContainsSubstring("2147483648 elements"));
    CHECK_THROWS_WITH(dropout::reserve_bytes(10, static_cast<data_type>(6)),
                      ContainsSubstring("data_type value 6"));
}

// ---- GPU: the masks ---------------------------------------------------------------------------

namespace {

constexpr std::size_t many = std::size_t{1} << 20;

// What a forward did: x, y, and which elements it kept.
struct outcome {
    std::vector<double> y;
    std::vector<bool> kept;
};

template <class T>
struct dropout_data {
    gpu::test::device_tensor<T> x;
    gpu::test::device_tensor<T> y;
    gpu::device_buffer<std::byte> reserve;

    dropout_data(std::size_t n, gpu::stream_ref s)
        : x({static_cast<int>(n), 1, 1, 1}, gpu::dnn::tensor_layout::nchw, s),
          y({static_cast<int>(n), 1, 1, 1}, gpu::dnn::tensor_layout::nchw, s),
          reserve(dropout::reserve_bytes(n, gpu::dnn::data_type_of<T>), s)
    {
        x.upload(gpu::test::nonzero_values(n, 77));
    }

    outcome run(gpu::dnn::handle& h, dropout& d, gpu::stream_ref s)
    {
        y.poison();
        d.forward(h, x.buffer, y.buffer, reserve);
        return read(s);
    }

    outcome read(gpu::stream_ref s) const
    {
        outcome o{y.download(s), {}};
        o.kept.resize(o.y.size());
        for (std::size_t i = 0; i < o.y.size(); ++i) {
            o.kept[i] = o.y[i] != 0.0;
        }
        return o;
    }
};

// Every kept element is x / (1 - p) (within T's rounding), every other one is 0, and about
// 1 - p of them are kept: within 5 standard deviations of a binomial count.
template <class T>
void check_mask(const outcome& o, const std::vector<double>& x, float p)
{
    std::size_t kept = 0;
    std::size_t wrong = 0;
    const double scale = 1.0 / (1.0 - static_cast<double>(p));
    const double tolerance = std::is_same_v<T, float> ? 1e-6 : 1e-2;
    for (std::size_t i = 0; i < x.size(); ++i) {
        if (o.kept[i]) {
            ++kept;
            wrong += std::abs(o.y[i] - x[i] * scale) > tolerance * std::abs(x[i] * scale) ? 1 : 0;
        }
        wrong += std::isnan(o.y[i]) ? 1 : 0; // an element the forward did not write
    }
    const double n = static_cast<double>(x.size());
    const double fraction = static_cast<double>(kept) / n;
    INFO("kept " << kept << " of " << x.size() << " at p " << p);
    CHECK(wrong == 0);
    CHECK(std::abs(fraction - (1.0 - p)) < 5.0 * std::sqrt(p * (1.0 - p) / n) + 1e-9);
}

std::size_t differences(const std::vector<bool>& a, const std::vector<bool>& b)
{
    std::size_t count = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        count += a[i] != b[i] ? 1 : 0;
    }
    return count;
}

template <class T>
void check_forward_and_backward(float p)
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    dropout d(h, p, 1234);
    CHECK(d.probability() == p);
    CHECK(d.seed() == 1234);
    CHECK_FALSE(d.states().empty());
    dropout_data<T> data(many, s);
    const outcome first = data.run(h, d, s);
    check_mask<T>(first, data.x.values, p);
    // The backward applies the forward's mask (the reserve), scaled the same way.
    gpu::test::device_tensor<T> dy({static_cast<int>(many), 1, 1, 1}, gpu::dnn::tensor_layout::nchw,
                                   s);
    gpu::test::device_tensor<T> dx({static_cast<int>(many), 1, 1, 1}, gpu::dnn::tensor_layout::nchw,
                                   s);
    dy.upload(gpu::test::nonzero_values(many, 78));
    d.backward(h, dy.buffer, dx.buffer, data.reserve);
    const std::vector<double> grad = dx.download(s);
    std::vector<bool> kept(many);
    for (std::size_t i = 0; i < many; ++i) {
        kept[i] = grad[i] != 0.0;
    }
    CHECK(differences(kept, first.kept) == 0);
    check_mask<T>({grad, kept}, dy.values, p);
}

} // namespace

TEST_CASE("FP32 dropout keeps about 1 - p of the elements, scaled, and the backward uses its mask",
          "[dnn][gpu]")
{
    check_forward_and_backward<float>(0.3F);
    check_forward_and_backward<float>(0.5F);
}

TEST_CASE("FP16 dropout keeps about 1 - p of the elements, scaled, and the backward uses its mask",
          "[dnn][gpu]")
{
    check_forward_and_backward<__half>(0.5F);
}

TEST_CASE("BF16 dropout keeps about 1 - p of the elements, scaled, and the backward uses its mask",
          "[dnn][gpu]")
{
    check_forward_and_backward<__nv_bfloat16>(0.2F);
}

TEST_CASE("dropout with p = 0 keeps every element unscaled", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    dropout d(h, 0.0F, 5);
    dropout_data<float> data(4096, s);
    const outcome o = data.run(h, d, s);
    CHECK(o.y == data.x.values);
}

TEST_CASE("the same seed draws the same masks; successive forwards draw new ones", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    dropout_data<float> data(many, s);
    dropout a(h, 0.5F, 99);
    dropout b(h, 0.5F, 99);
    dropout other(h, 0.5F, 100);
    const outcome a1 = data.run(h, a, s);
    const outcome b1 = data.run(h, b, s);
    CHECK(b1.y == a1.y);
    // The states advance on the device with each forward: the next mask differs (half of the
    // elements, for p = 0.5), and the other object still follows the same sequence.
    const outcome a2 = data.run(h, a, s);
    CHECK(differences(a2.kept, a1.kept) > many / 4);
    const outcome b2 = data.run(h, b, s);
    CHECK(b2.y == a2.y);
    const outcome o1 = data.run(h, other, s);
    CHECK(differences(o1.kept, a1.kept) > many / 4);
}

TEST_CASE("a dropout forward replayed from a CUDA graph draws a new mask each replay", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    dropout d(h, 0.5F, 7);
    dropout_data<float> data(many, s);
    d.forward(h, data.x.buffer, data.y.buffer, data.reserve); // the tensor descriptor is made here
    s.synchronize();
    cudaGraph_t graph = nullptr;
    REQUIRE(cudaStreamBeginCapture(s.get(), cudaStreamCaptureModeThreadLocal) == cudaSuccess);
    d.forward(h, data.x.buffer, data.y.buffer, data.reserve);
    REQUIRE(cudaStreamEndCapture(s.get(), &graph) == cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    REQUIRE(cudaGraphInstantiate(&exec, graph, 0) == cudaSuccess);
    REQUIRE(cudaGraphLaunch(exec, s.get()) == cudaSuccess);
    const outcome first = data.read(s);
    REQUIRE(cudaGraphLaunch(exec, s.get()) == cudaSuccess);
    const outcome second = data.read(s);
    check_mask<float>(first, data.x.values, 0.5F);
    check_mask<float>(second, data.x.values, 0.5F);
    CHECK(differences(first.kept, second.kept) > many / 4);
    CHECK(cudaGraphExecDestroy(exec) == cudaSuccess);
    CHECK(cudaGraphDestroy(graph) == cudaSuccess);
}

TEST_CASE("restored states continue the sequence where they were saved", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    dropout d(h, 0.25F, 2024);
    dropout_data<float> data(many, s);
    static_cast<void>(data.run(h, d, s));
    gpu::device_buffer<std::byte> saved(d.states().size(), s);
    REQUIRE(cudaMemcpyAsync(saved.data(), d.states().data(), saved.size(), cudaMemcpyDeviceToDevice,
                            s.get()) == cudaSuccess);
    const outcome next = data.run(h, d, s);
    dropout restored = dropout::restore(h, 0.25F, 2024, std::move(saved));
    CHECK(restored.probability() == 0.25F);
    const outcome again = data.run(h, restored, s);
    CHECK(again.y == next.y);
    CHECK_THROWS_WITH(
        dropout::restore(h, 0.25F, 2024, gpu::device_buffer<std::byte>(16, s)),
        ContainsSubstring("the states hold 16 bytes but cuDNN's states on this GPU take"));
}

TEST_CASE("dropout refuses a reserve that is too small and buffers of different sizes",
          "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    dropout d(h, 0.5F, 1);
    gpu::device_buffer<float> x(1000, s);
    gpu::device_buffer<float> y(1000, s);
    gpu::device_buffer<float> shorter(999, s);
    gpu::device_buffer<std::byte> reserve(dropout::reserve_bytes(1000, data_type::fp32) - 1, s);
    CHECK_THROWS_WITH(d.forward(h, x, y, reserve),
                      ContainsSubstring("dropout::forward: the reserve holds") &&
                          ContainsSubstring("1000 fp32 elements need"));
    CHECK_THROWS_WITH(d.forward(h, x, shorter, reserve),
                      ContainsSubstring("dropout::forward: x has 1000 elements but y has 999"));
    CHECK_THROWS_WITH(d.backward(h, shorter, y, reserve),
                      ContainsSubstring("dropout::backward: dy has 999 elements but dx has 1000"));
    dropout moved(std::move(d));
    CHECK_FALSE(d); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_WITH(d.forward(h, x, y, reserve), ContainsSubstring("moved from")); // NOLINT
    CHECK(moved);
}
