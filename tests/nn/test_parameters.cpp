// gpu/nn/parameters.hpp: registration, layout and views, argument checks, the initial values
// (bounds, moments, determinism, the documented generator), and on a GPU the flat buffers, the
// working copy's cast kernel and zero_grad.
#include <gpu/nn/parameters.hpp>

#include "catch.hpp"

#include <gpu/stream.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;

static_assert(!std::is_copy_constructible_v<nn::parameters>);
static_assert(!std::is_move_constructible_v<nn::parameters>); // layers keep a reference to it

TEST_CASE("parameters lie in registration order, each at a multiple of 128 elements", "[nn]")
{
    nn::parameters store(nn::mixed_precision::fp16());
    CHECK(store.add("fc1.weight", {128, 784}, nn::initialization::kaiming_uniform(784)) == 0);
    CHECK(store.add("fc1.bias", {128}, nn::initialization::fan_in_uniform(784)) == 1);
    CHECK(store.add("fc2.weight", {10, 128}, nn::initialization::kaiming_uniform(128)) == 2);
    CHECK(store.add("fc2.bias", {10}, nn::initialization::zeros()) == 3);
    CHECK(store.size() == 4);
    CHECK(store.info(0).offset == 0);
    CHECK(store.info(0).count == 128 * 784);
    CHECK(store.info(1).offset == 128 * 784); // already a multiple of 128
    CHECK(store.info(2).offset == 128 * 784 + 128);
    CHECK(store.info(3).offset == 128 * 784 + 128 + 1280);
    CHECK(store.total_elements() == 128 * 784 + 128 + 1280 + 10);
    CHECK(store.parameter_elements() == 128 * 784 + 128 + 1280 + 10);
    CHECK(store.info("fc2.weight").shape == std::vector<std::int64_t>{10, 128});
    CHECK(store.find("fc2.bias") == 3U);
    CHECK_FALSE(store.find("fc3.bias").has_value());
    CHECK(store.infos().size() == 4);
    CHECK(store.precision() == nn::mixed_precision::fp16());

    nn::parameters padded;
    padded.add("a", {3}, nn::initialization::ones());
    padded.add("b", {2, 2}, nn::initialization::ones());
    CHECK(padded.info("b").offset == 128);
    CHECK(padded.total_elements() == 132);
    CHECK(padded.parameter_elements() == 7);
}

TEST_CASE("registration refuses bad names, shapes and initialisations, naming them", "[nn]")
{
    nn::parameters store;
    store.add("w", {4, 4}, nn::initialization::zeros());
    CHECK_THROWS_WITH(store.add("w", {2}, nn::initialization::zeros()),
                      ContainsSubstring("the name w is taken"));
    CHECK_THROWS_WITH(store.add("", {2}, nn::initialization::zeros()),
                      ContainsSubstring("needs a name"));
    CHECK_THROWS_WITH(store.add("v", {}, nn::initialization::zeros()),
                      ContainsSubstring("v has 0 dimensions"));
    CHECK_THROWS_WITH(store.add("v", std::vector<std::int64_t>(9, 1), nn::initialization::zeros()),
                      ContainsSubstring("v has 9 dimensions; 1 to 8"));
    CHECK_THROWS_WITH(store.add("v", {3, 0}, nn::initialization::zeros()),
                      ContainsSubstring("dimension 1 of v is 0"));
    CHECK_THROWS_WITH(store.add("v", {-2}, nn::initialization::zeros()),
                      ContainsSubstring("dimension 0 of v is -2"));
    const std::int64_t big = std::numeric_limits<std::int64_t>::max();
    CHECK_THROWS_WITH(store.add("v", {big, big}, nn::initialization::zeros()),
                      ContainsSubstring("overflows"));
    CHECK_THROWS_WITH(
        store.add("v", {2}, nn::initialization{nn::initialization_kind::uniform, -1.0}),
        ContainsSubstring("the initialization of v (kind 2, bound -1"));
    CHECK(store.size() == 1); // nothing refused was registered
    CHECK_THROWS_WITH(store.info(1), ContainsSubstring("index 1 is not below the 1 parameters"));
    CHECK_THROWS_WITH(store.info("x"), ContainsSubstring("no parameter is named 'x'"));
    CHECK_THROWS_AS(nn::parameters(nn::mixed_precision{gpu::element_type::fp64}),
                    std::invalid_argument);
}

TEST_CASE("device views need an allocated store, and an allocated store takes no more parameters",
          "[nn]")
{
    nn::parameters store;
    store.add("w", {4}, nn::initialization::zeros());
    CHECK_THROWS_WITH(
        store.view(0),
        ContainsSubstring("gpu::nn::parameters::view: the parameter store is not allocated"));
    CHECK_THROWS_AS(store.view("w"), std::logic_error);
    CHECK_THROWS_AS(store.zero_grad(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(store.refresh_working_copy(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(store.initialize(1, gpu::legacy_default_stream), std::logic_error);
    CHECK_FALSE(store.allocated());

    // An empty store allocates nothing, so this runs without a GPU.
    nn::parameters empty;
    empty.allocate(gpu::legacy_default_stream);
    CHECK(empty.allocated());
    CHECK_THROWS_WITH(empty.add("w", {4}, nn::initialization::zeros()),
                      ContainsSubstring("cannot register w: the store is allocated"));
    CHECK_THROWS_WITH(empty.allocate(gpu::legacy_default_stream),
                      ContainsSubstring("already allocated"));
}

TEST_CASE("initialisations have PyTorch's bounds", "[nn]")
{
    // kaiming_uniform_(a = sqrt(5)): bound 1/sqrt(fan_in), the default of nn.Linear and nn.Conv2d.
    CHECK(nn::initialization::kaiming_uniform(784).bound == Approx(1.0 / std::sqrt(784.0)));
    CHECK(nn::initialization::kaiming_uniform(27).bound == Approx(1.0 / std::sqrt(27.0)));
    // a = 0 (ReLU): gain sqrt(2), bound sqrt(6 / fan_in).
    CHECK(nn::initialization::kaiming_uniform(100, 0.0).bound == Approx(std::sqrt(6.0 / 100.0)));
    CHECK(nn::initialization::fan_in_uniform(64).bound == Approx(0.125));
    CHECK(nn::initialization::fan_in_uniform(0) == nn::initialization::uniform(0.0));
    CHECK(nn::initialization::kaiming_uniform(9).kind == nn::initialization_kind::uniform);
    CHECK_THROWS_WITH(nn::initialization::kaiming_uniform(0),
                      ContainsSubstring("fan_in 0 is not positive"));
    CHECK_THROWS_AS(nn::initialization::kaiming_uniform(4, std::nan("")), std::invalid_argument);
    CHECK_THROWS_WITH(nn::initialization::fan_in_uniform(-3),
                      ContainsSubstring("fan_in -3 is negative"));
    CHECK_THROWS_AS(nn::initialization::uniform(std::numeric_limits<double>::infinity()),
                    std::invalid_argument);
    CHECK(nn::to_string(nn::initialization_kind::uniform) == "uniform");
}

TEST_CASE("initial values lie within their bounds, with the moments of a uniform distribution",
          "[nn]")
{
    nn::parameters store;
    const auto w = nn::initialization::kaiming_uniform(512);
    store.add("w", {250, 511}, w); // 127750 elements: padding follows
    store.add("z", {3}, nn::initialization::zeros());
    store.add("o", {5}, nn::initialization::ones());
    const std::vector<float> values = store.initial_values(42);
    REQUIRE(values.size() == store.total_elements());
    const auto& info = store.info("w");
    double sum = 0.0;
    double squares = 0.0;
    for (std::size_t i = info.offset; i < info.offset + info.count; ++i) {
        REQUIRE(std::abs(values[i]) <= w.bound);
        sum += values[i];
        squares += static_cast<double>(values[i]) * values[i];
    }
    const double n = static_cast<double>(info.count);
    const double mean = sum / n;
    const double variance = squares / n - mean * mean;
    // U(-b, b): mean 0 (standard error b/sqrt(3n), about 1e-4 b here), variance b²/3.
    CHECK(std::abs(mean) < 0.01 * w.bound);
    CHECK(variance == Approx(w.bound * w.bound / 3.0).epsilon(0.01));
    for (std::size_t i = 0; i < 3; ++i) {
        CHECK(values[store.info("z").offset + i] == 0.0F);
    }
    for (std::size_t i = 0; i < 5; ++i) {
        CHECK(values[store.info("o").offset + i] == 1.0F);
    }
    // The padding between parameters is zero.
    CHECK(values[store.info("z").offset - 1] == 0.0F);
}

TEST_CASE("initial values follow from the seed, by the documented generator", "[nn]")
{
    nn::parameters store;
    store.add("w", {8, 8}, nn::initialization::uniform(0.5));
    const std::vector<float> first = store.initial_values(7);
    CHECK(store.initial_values(7) == first);
    CHECK(store.initial_values(8) != first);
    // std::mt19937_64(seed), the top 53 bits as u in [0, 1), bound·(2u − 1) rounded to float.
    std::mt19937_64 engine(7);
    for (std::size_t i = 0; i < 64; ++i) {
        const double u = static_cast<double>(engine() >> 11) * 0x1.0p-53;
        REQUIRE(first[i] == static_cast<float>(0.5 * (2.0 * u - 1.0)));
    }
    // Zeros and ones draw nothing: a parameter registered before them does not shift the draws.
    nn::parameters shifted;
    shifted.add("z", {100}, nn::initialization::zeros());
    shifted.add("w", {8, 8}, nn::initialization::uniform(0.5));
    const std::vector<float> second = shifted.initial_values(7);
    CHECK(std::vector<float>(second.begin() + 128, second.begin() + 192) ==
          std::vector<float>(first.begin(), first.begin() + 64));
}

namespace {

std::uint16_t bits_of(__half value)
{
    std::uint16_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

std::uint16_t bits_of(__nv_bfloat16 value)
{
    std::uint16_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    return bits;
}

// The working copy read back, as 16-bit patterns, against the host's round-to-nearest casts.
template <class T>
void check_working_copy(nn::parameters& store, const std::vector<float>& master)
{
    std::vector<std::uint16_t> working(store.total_elements());
    GPU_CUDA_CHECK(cudaMemcpy(working.data(), store.working_data(), working.size() * 2,
                              cudaMemcpyDeviceToHost));
    for (std::size_t i = 0; i < master.size(); ++i) {
        if constexpr (std::is_same_v<T, __half>) {
            REQUIRE(working[i] == bits_of(__float2half_rn(master[i])));
        } else {
            REQUIRE(working[i] == bits_of(__float2bfloat16_rn(master[i])));
        }
    }
}

template <class T>
void check_cast(nn::mixed_precision policy)
{
    const gpu::stream stream;
    nn::parameters store(policy);
    store.add("w", {37, 45}, nn::initialization::kaiming_uniform(45));
    store.add("b", {37}, nn::initialization::fan_in_uniform(45));
    store.allocate(stream);
    store.initialize(3, stream);
    CHECK(store.master().to_host() == store.initial_values(3));
    check_working_copy<T>(store, store.initial_values(3));
    // After an "optimizer step" on the master, one refresh brings the working copy along.
    std::vector<float> stepped = store.initial_values(3);
    for (float& v : stepped) {
        v = v * 3.0F + 1e-3F;
    }
    store.master().copy_from_host(stepped);
    store.refresh_working_copy(stream);
    stream.synchronize();
    check_working_copy<T>(store, stepped);
    const nn::parameter_view view = store.view("b");
    CHECK(view.working == static_cast<std::byte*>(store.working_data()) + view.offset * 2);
    CHECK(view.master == store.master().data() + view.offset);
}

} // namespace

TEST_CASE("the working copy is the master cast to FP16 or BF16, refreshed by one kernel",
          "[nn][gpu]")
{
    check_cast<__half>(nn::mixed_precision::fp16());
    check_cast<__nv_bfloat16>(nn::mixed_precision::bf16());
}

TEST_CASE("an FP32 store's working copy is its master, and zero_grad clears every gradient",
          "[nn][gpu]")
{
    const gpu::stream stream;
    nn::parameters store;
    store.add("w", {3, 300}, nn::initialization::ones());
    store.add("b", {3}, nn::initialization::ones());
    store.allocate(stream);
    store.initialize(1, stream);
    CHECK(store.working_data() == store.master().data());
    const nn::parameter_view w = store.view(0);
    CHECK(w.working == w.master);
    CHECK(w.count == 900);
    CHECK(w.shape.size() == 2);
    CHECK(w.gradient == store.gradient().data());
    CHECK(store.gradient().to_host() ==
          std::vector<float>(store.total_elements(), 0.0F)); // zeroed at allocation
    store.gradient().copy_from_host(std::vector<float>(store.total_elements(), 2.5F));
    store.zero_grad(stream);
    stream.synchronize();
    CHECK(store.gradient().to_host() == std::vector<float>(store.total_elements(), 0.0F));
}
