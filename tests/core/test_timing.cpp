// gpu/timing.hpp: statistics on known samples, option checks, host benchmarks, event timing.
#include <gpu/memory.hpp>
#include <gpu/timing.hpp>

#include "catch.hpp"

#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <thread>
#include <vector>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("statistics of an odd number of known samples", "[timing]")
{
    const std::vector<double> samples{4.0, 1.0, 100.0, 3.0, 2.0};
    const gpu::statistics s = gpu::summarize(samples);
    CHECK(s.count == 5);
    CHECK(s.min_ms == 1.0);
    CHECK(s.max_ms == 100.0);
    CHECK(s.median_ms == 3.0);
    CHECK(s.mean_ms == Approx(22.0));
    // Sample standard deviation: sqrt(sum((x - 22)^2) / 4).
    CHECK(s.stddev_ms == Approx(std::sqrt((324.0 + 441.0 + 6084.0 + 361.0 + 400.0) / 4.0)));
    CHECK(s.samples_ms == samples);
    CHECK(s.relative_spread() == Approx(99.0 / 3.0));
}

TEST_CASE("the median of an even number of samples is the mean of the middle two", "[timing]")
{
    const std::vector<double> samples{1.0, 2.0, 3.0, 10.0};
    CHECK(gpu::summarize(samples).median_ms == 2.5);
}

TEST_CASE("a single sample has no spread", "[timing]")
{
    const std::vector<double> one{0.25};
    const gpu::statistics s = gpu::summarize(one);
    CHECK(s.median_ms == 0.25);
    CHECK(s.stddev_ms == 0.0);
    CHECK(s.relative_spread() == 0.0);
}

TEST_CASE("summarize rejects empty, negative and non-finite samples, naming them", "[timing]")
{
    CHECK_THROWS_WITH(gpu::summarize(std::vector<double>{}), ContainsSubstring("no samples"));
    CHECK_THROWS_WITH(gpu::summarize(std::vector<double>{1.0, -2.0}),
                      ContainsSubstring("sample 1 is -2"));
    CHECK_THROWS_AS(gpu::summarize(std::vector<double>{std::numeric_limits<double>::quiet_NaN()}),
                    std::invalid_argument);
    CHECK_THROWS_AS(gpu::summarize(std::vector<double>{std::numeric_limits<double>::infinity()}),
                    std::invalid_argument);
}

TEST_CASE("statistics of huge or repeated samples stay finite and within the samples' range",
          "[timing]")
{
    // Found by fuzzing: (a + b) / 2 and the sums of the mean and the squares overflowed to
    // infinity for samples near DBL_MAX, and rounding put the mean of three 0.1 above 0.1.
    const double big = std::numeric_limits<double>::max();
    const gpu::statistics huge = gpu::summarize(std::vector<double>{big, big});
    CHECK(huge.median_ms == big);
    CHECK(huge.mean_ms == big);
    CHECK(huge.stddev_ms == 0.0);
    const gpu::statistics spread = gpu::summarize(std::vector<double>{0.0, 1e308});
    CHECK(spread.mean_ms == Approx(5e307));
    CHECK(spread.stddev_ms == Approx(1e308 / std::sqrt(2.0)));
    const gpu::statistics same = gpu::summarize(std::vector<double>{0.1, 0.1, 0.1});
    CHECK(same.mean_ms == 0.1);
    CHECK(same.stddev_ms < 1e-16);
}

TEST_CASE("benchmark options are checked field by field", "[timing]")
{
    CHECK_NOTHROW(gpu::validate(gpu::benchmark_options{}));
    CHECK_THROWS_WITH(gpu::validate({.warmup = -1}), ContainsSubstring("warmup is -1"));
    CHECK_THROWS_WITH(gpu::validate({.repetitions = 0}), ContainsSubstring("repetitions is 0"));
    CHECK_THROWS_WITH(gpu::validate({.calls_per_repetition = 0}),
                      ContainsSubstring("calls_per_repetition is 0"));
    CHECK_THROWS_WITH(
        gpu::validate({.repetitions = 20, .max_repetitions = 10}),
        ContainsSubstring("max_repetitions is 10; it must be at least repetitions, which is 20"));
    gpu::benchmark_options negative_time;
    negative_time.min_time = std::chrono::milliseconds(-1);
    CHECK_THROWS_WITH(gpu::validate(negative_time), ContainsSubstring("min_time"));
}

TEST_CASE("a host benchmark warms up, then times repetitions of back-to-back calls", "[timing]")
{
    int calls = 0;
    const gpu::statistics s = gpu::benchmark(
        [&] { ++calls; }, {.warmup = 2, .repetitions = 5, .calls_per_repetition = 3});
    CHECK(calls == 2 + 5 * 3);
    CHECK(s.count == 5);
    CHECK(s.min_ms >= 0.0);
}

TEST_CASE("a minimum time adds repetitions up to the maximum", "[timing]")
{
    int calls = 0;
    gpu::benchmark_options options{.warmup = 0, .repetitions = 2, .calls_per_repetition = 1};
    options.min_time = std::chrono::milliseconds(20);
    options.max_repetitions = 8;
    const gpu::statistics s = gpu::benchmark(
        [&] {
            ++calls;
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        },
        options);
    CHECK(s.count > 2);
    CHECK(s.count <= 8);
    CHECK(calls == static_cast<int>(s.count));
}

TEST_CASE("a bad option stops the benchmark before any call", "[timing]")
{
    int calls = 0;
    CHECK_THROWS_AS(gpu::benchmark([&] { ++calls; }, {.repetitions = 0}), std::invalid_argument);
    CHECK(calls == 0);
}

TEST_CASE("the host timer measures at least a sleep", "[timing]")
{
    gpu::host_timer timer;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    CHECK(timer.elapsed().count() >= 5.0);
    timer.restart();
    CHECK(timer.elapsed().count() < 5000.0);
}

TEST_CASE("throughput helpers", "[timing]")
{
    // A 4096^3 GEMM (2 * 4096^3 flops) in 1 ms is 137.4 TFLOP/s.
    CHECK(gpu::tflops(2.0 * 4096.0 * 4096.0 * 4096.0, 1.0) == Approx(137.438953472));
    CHECK(gpu::gflops(2e9, 1000.0) == Approx(2.0));
    CHECK(gpu::gbps(411e6, 0.1) == Approx(4110.0));
    CHECK_THROWS_WITH(gpu::tflops(1.0, 0.0), ContainsSubstring("got 0"));
    CHECK_THROWS_AS(gpu::gbps(1.0, -1.0), std::invalid_argument);
    CHECK_THROWS_AS(gpu::gflops(1.0, std::numeric_limits<double>::infinity()),
                    std::invalid_argument);
}

TEST_CASE("an event timer measures device work on a stream", "[timing][gpu]")
{
    gpu::stream s;
    gpu::device_buffer<char> big(std::size_t{512} << 20, s);
    gpu::event_timer timer(s);
    timer.start();
    big.fill_zero_async(s);
    timer.stop();
    CHECK(timer.elapsed().count() > 0.0F);
}

TEST_CASE("a device benchmark samples with events", "[timing][gpu]")
{
    gpu::stream s;
    gpu::device_buffer<char> big(std::size_t{64} << 20, s);
    int calls = 0;
    const gpu::statistics stats =
        gpu::benchmark(s,
                       [&] {
                           ++calls;
                           big.fill_zero_async(s);
                       },
                       {.warmup = 1, .repetitions = 5, .calls_per_repetition = 4});
    CHECK(calls == 1 + 5 * 4);
    CHECK(stats.count == 5);
    CHECK(stats.min_ms > 0.0);
    // 64 MiB written: any real device does it in well under a second.
    CHECK(gpu::gbps(static_cast<double>(big.size_bytes()), stats.median_ms) > 1.0);
}
