// gpu/blas/random.hpp: creation errors without a GPU; on a GPU,
// reproducibility by seed, ranges and moments, every element type, odd counts and alignments.
#include <gpu/blas/random.hpp>

#include "catch.hpp"

#include <gpu/device.hpp>
#include <gpu/memory.hpp>
#include <gpu/profile.hpp>

#include <gpu/stream.hpp>

#include "stream_gate.hpp"

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
namespace blas = gpu::blas;

namespace {
template <class T>
std::vector<double> as_doubles(const gpu::device_buffer<T>& buffer)
{
    const std::vector<T> host = buffer.to_host();
    std::vector<double> values;
    values.reserve(host.size());
    for (const T& v : host) {
        values.push_back(static_cast<double>(v));
    }
    return values;
}

template <class T>
bool bitwise_equal(const gpu::device_buffer<T>& a, const gpu::device_buffer<T>& b)
{
    const auto x = a.to_host();
    const auto y = b.to_host();
    return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) == 0;
}

template <class T>
void check_reproducible_and_in_range()
{
    constexpr std::size_t n = 100001; // odd: exercises the pair-wise normal generator's tail
    gpu::device_buffer<T> a(n, gpu::legacy_default_stream);
    gpu::device_buffer<T> b(n, gpu::legacy_default_stream);
    gpu::device_buffer<T> c(n, gpu::legacy_default_stream);
    blas::fill_uniform(a, 42, -2.0, 3.0);
    blas::fill_uniform(b, 42, -2.0, 3.0);
    blas::fill_uniform(c, 43, -2.0, 3.0);
    CHECK(bitwise_equal(a, b));
    CHECK_FALSE(bitwise_equal(a, c));
    const auto values = as_doubles(a);
    double sum = 0.0;
    for (const double v : values) {
        REQUIRE(v >= -2.0);
        REQUIRE(v <= 3.0);
        sum += v;
    }
    CHECK(sum / n == Approx(0.5).margin(0.05));

    blas::fill_normal(a, 7, 1.0, 2.0);
    blas::fill_normal(b, 7, 1.0, 2.0);
    CHECK(bitwise_equal(a, b));
    const auto normal = as_doubles(a);
    double mean = 0.0;
    for (const double v : normal) {
        REQUIRE(std::isfinite(v));
        mean += v;
    }
    mean /= n;
    double variance = 0.0;
    for (const double v : normal) {
        variance += (v - mean) * (v - mean);
    }
    CHECK(mean == Approx(1.0).margin(0.05));
    CHECK(std::sqrt(variance / (n - 1)) == Approx(2.0).margin(0.05));
}
} // namespace

TEST_CASE("a random_generator is made on a named stream", "[blas]")
{
    // Its fills are stream-ordered work: no constructor picks the default stream.
    STATIC_REQUIRE_FALSE(std::is_constructible_v<blas::random_generator, std::uint64_t>);
    STATIC_REQUIRE_FALSE(std::is_constructible_v<blas::random_generator, const gpu::profile&>);
    STATIC_REQUIRE(std::is_constructible_v<blas::random_generator, std::uint64_t, gpu::stream_ref>);
}
TEST_CASE("a generator without a usable GPU fails with cuRAND's status and the reason", "[blas]")
{
    if (gpu::is_available()) {
        const blas::random_generator rng(1, gpu::legacy_default_stream);
        CHECK(rng.get() != nullptr);
        CHECK(rng.seed() == 1u);
        return;
    }
    try {
        const blas::random_generator rng(1, gpu::legacy_default_stream);
        FAIL("curandCreateGenerator succeeded although no GPU is usable");
    } catch (const blas::random_error& e) {
        CHECK_THAT(
            std::string(e.what()),
            StartsWith(
                "curandCreateGenerator(&raw, CURAND_RNG_PSEUDO_PHILOX4_32_10): CURAND_STATUS_"));
        CHECK(e.status() != CURAND_STATUS_SUCCESS);
        if (e.status() == CURAND_STATUS_INITIALIZATION_FAILED) {
            CHECK_THAT(std::string(e.what()),
                       ContainsSubstring("CURAND_STATUS_INITIALIZATION_FAILED (203): "
                                         "initialization of CUDA failed\nhint: "));
            CHECK_THAT(e.hint(), ContainsSubstring(gpu::unavailable_reason()));
        }
    }
}

TEST_CASE("FP32 fills are reproducible by seed, in range, with the right moments", "[blas][gpu]")
{
    check_reproducible_and_in_range<float>();
}

TEST_CASE("FP64 fills are reproducible by seed, in range, with the right moments", "[blas][gpu]")
{
    check_reproducible_and_in_range<double>();
}

TEST_CASE("FP16 and BF16 fills are reproducible by seed, in range, with the right moments",
          "[blas][gpu]")
{
    check_reproducible_and_in_range<__half>();
    check_reproducible_and_in_range<__nv_bfloat16>();
}

TEST_CASE("a generator continues its sequence and one with the same seed repeats it", "[blas][gpu]")
{
    gpu::device_buffer<float> first(1000, gpu::legacy_default_stream);
    gpu::device_buffer<float> second(1000, gpu::legacy_default_stream);
    gpu::device_buffer<float> again(1000, gpu::legacy_default_stream);
    blas::random_generator rng(gpu::profile::testing(), gpu::legacy_default_stream);
    CHECK(rng.seed() == 42u);
    rng.uniform(first);
    rng.uniform(second);
    blas::random_generator replay(42, gpu::legacy_default_stream);
    replay.uniform(again);
    gpu::current_device().synchronize();
    CHECK_FALSE(bitwise_equal(first, second));
    CHECK(bitwise_equal(first, again));
}

TEST_CASE("normal fills work at any count and alignment", "[blas][gpu]")
{
    gpu::device_buffer<float> buffer(1001, gpu::legacy_default_stream);
    buffer.copy_from_host(std::vector<float>(1001, std::nanf("")));
    blas::random_generator rng(3, gpu::legacy_default_stream);
    rng.normal(buffer.data() + 1, 999); // odd count, pointer not 8-byte aligned
    const auto host = buffer.to_host();
    CHECK(std::isnan(host[0]));
    CHECK(std::isnan(host[1000]));
    for (std::size_t i = 1; i < 1000; ++i) {
        REQUIRE(std::isfinite(host[i]));
    }
}

TEST_CASE("bad fill arguments are rejected with the values", "[blas][gpu]")
{
    gpu::device_buffer<float> buffer(16, gpu::legacy_default_stream);
    blas::random_generator rng(1, gpu::legacy_default_stream);
    CHECK_THROWS_WITH(rng.uniform(buffer, 1.0, 1.0),
                      ContainsSubstring("range (1.000000, 1.000000]"));
    CHECK_THROWS_WITH(rng.normal(buffer, 0.0, -1.0), ContainsSubstring("stddev -1.000000"));
    CHECK_THROWS_AS(rng.uniform(buffer, 0.0, INFINITY), std::invalid_argument);
    CHECK_THROWS_WITH(rng.uniform(static_cast<float*>(nullptr), 4),
                      ContainsSubstring("null data for 4 elements"));
    CHECK_NOTHROW(rng.uniform(static_cast<float*>(nullptr), 0));
}

TEST_CASE("fill_uniform and fill_normal run on the buffer's stream unless given one",
          "[blas][gpu][gate]")
{
    using namespace std::chrono_literals;
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::device_buffer<float> a(4096, s);
    gpu::device_buffer<float> b(4096, s);
    gpu::device_buffer<float> warm(16, gpu::legacy_default_stream);
    blas::fill_uniform(warm,
                       1); // cuRAND's first use loads modules: keep that out of the timing below
    s.synchronize();
    std::future<void> filled;
    {
        gpu::test::stream_gate gate(s);
        // The fills return when their values are written; on s, held by the gate, that must wait.
        // (On the legacy default stream, which does not wait for s, they would finish at once.)
        filled = std::async(std::launch::async, [&] {
            blas::fill_uniform(a, 42);
            blas::fill_normal(b, 42);
        });
        CHECK(filled.wait_for(500ms) == std::future_status::timeout);
        gate.open();
        filled.get();
        CHECK_FALSE(gate.timed_out()); // the wait above ran while the gate held s
    }
    // The explicit stream wins: the same seed on another stream draws the same values.
    gpu::stream other(gpu::stream_flags::non_blocking);
    gpu::device_buffer<float> again(4096, other);
    blas::fill_uniform(again, 42, -1.0, 1.0, other);
    CHECK(bitwise_equal(a, again));
    blas::fill_normal(again, 42, 0.0, 1.0, other);
    CHECK(bitwise_equal(b, again));
}
