// bench/harness/sampling.hpp and host_timing.hpp: the stopping rule on synthetic sample streams
// (it stops, it does not stop early, the time limit, the sample cap), the noise and its label,
// alternation, and the host timing that applies the rule.
#include "host_timing.hpp"
#include "sampling.hpp"

#include "catch.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace bench = gpu::bench;

namespace {

// A clock that advances by a fixed step each time it is read: the time limit without waiting.
struct stepping_clock {
    double now = 0;
    double step = 0;
    double operator()()
    {
        const double t = now;
        now += step;
        return t;
    }
};

// Samples from a list, repeating its last one when it runs out.
struct stream_of {
    std::vector<double> values;
    std::size_t next = 0;
    double operator()()
    {
        const double v = values[std::min(next, values.size() - 1)];
        ++next;
        return v;
    }
};

// Samples alternating around 1 ms by +-amplitude: a relative standard deviation of about
// `amplitude` (exactly, for an even count, with Bessel's correction a little more).
struct alternating {
    double amplitude;
    int n = 0;
    double operator()() { return (n++ % 2 == 0) ? 1.0 + amplitude : 1.0 - amplitude; }
};

} // namespace

TEST_CASE("the relative standard deviation of samples", "[bench]")
{
    CHECK_FALSE(bench::relative_stddev(std::vector<double>{}).has_value());
    CHECK_FALSE(bench::relative_stddev(std::vector<double>{1.0}).has_value());
    CHECK_FALSE(bench::relative_stddev(std::vector<double>{0.0, 0.0}).has_value());
    CHECK(*bench::relative_stddev(std::vector<double>{2.0, 2.0, 2.0}) == 0.0);
    // mean 2, sample stddev sqrt(2): 0.7071
    CHECK(*bench::relative_stddev(std::vector<double>{1.0, 2.0, 3.0}) ==
          Approx(1.0 / 2.0).margin(1e-12));
    const std::vector<double> many{1.0, 2.0, 3.0, 4.0};
    bench::sampler s(bench::stopping_rule{});
    for (const double v : many) {
        s.add(v);
    }
    // Welford's running value agrees with the two-pass one.
    CHECK(*s.noise() == Approx(*bench::relative_stddev(many)).epsilon(1e-12));
    CHECK_THROWS_WITH(s.add(-1.0), ContainsSubstring("-1 ms"));
    CHECK_THROWS_AS(s.add(std::numeric_limits<double>::infinity()), std::invalid_argument);
}

TEST_CASE("a bad stopping rule is named", "[bench]")
{
    CHECK_THROWS_WITH(bench::validate(bench::stopping_rule{.max_noise = 0}),
                      ContainsSubstring("max_noise is 0"));
    CHECK_THROWS_WITH(bench::validate(bench::stopping_rule{.min_samples = 0}),
                      ContainsSubstring("min_samples is 0"));
    CHECK_THROWS_WITH(bench::validate(bench::stopping_rule{.time_limit_s = -1}),
                      ContainsSubstring("time_limit_s is -1"));
    CHECK_THROWS_WITH(bench::validate(bench::stopping_rule{.min_samples = 20, .max_samples = 10}),
                      ContainsSubstring("max_samples is 10"));
    CHECK_NOTHROW(bench::validate(bench::stopping_rule{}));
    const bench::stopping_rule defaults;
    CHECK(defaults.max_noise == 0.005);
    CHECK(defaults.min_samples == 10);
}

TEST_CASE("a quiet stream stops at the minimum sample count, on the noise", "[bench]")
{
    const bench::stopping_rule rule{.max_noise = 0.005, .min_samples = 10, .time_limit_s = 100};
    stepping_clock clock{0, 0.001};
    const bench::series s = bench::sample_series(rule, alternating{0.001}, 1, std::ref(clock));
    CHECK(s.stopped == bench::stop_reason::converged);
    CHECK(s.stats.count == 10);
    REQUIRE(s.noise.has_value());
    CHECK(*s.noise < 0.005);
    CHECK(*s.max_noise == 0.005);
    CHECK(s.min_samples == 10);
    CHECK_FALSE(s.noisy());
    CHECK(s.stats.median_ms == Approx(1.0));
}

TEST_CASE("a quiet stream does not stop before the minimum sample count", "[bench]")
{
    // Identical samples have no noise at all from the second one on; still 25 are taken.
    const bench::stopping_rule rule{.min_samples = 25, .time_limit_s = 100};
    stepping_clock clock{0, 0.001};
    const bench::series s = bench::sample_series(
        rule, [] { return 2.0; }, 1, std::ref(clock));
    CHECK(s.stopped == bench::stop_reason::converged);
    CHECK(s.stats.count == 25);
    CHECK(*s.noise == 0.0);
}

TEST_CASE("a noisy stream does not stop early: it runs to the time limit", "[bench]")
{
    // 5% noise never reaches 0.5%: the clock's 0.01 s per read ends it at 1 s, about 100
    // samples, not at the minimum of 10.
    const bench::stopping_rule rule{.max_noise = 0.005, .min_samples = 10, .time_limit_s = 1.0};
    stepping_clock clock{0, 0.01};
    const bench::series s = bench::sample_series(rule, alternating{0.05}, 4, std::ref(clock));
    CHECK(s.stopped == bench::stop_reason::time_limit);
    CHECK(s.noisy());
    CHECK(s.stats.count >= 99);
    CHECK(s.stats.count <= 101);
    CHECK(*s.noise == Approx(0.05).epsilon(0.02));
    CHECK(s.wall_s >= 1.0);
    CHECK(s.calls_per_sample == 4);
    CHECK(bench::noise_label(s.noise, s.stopped, s.stats.count, s.min_samples) == "noisy: 5.03%");
}

TEST_CASE("a stream whose noise falls later stops when it falls, not before", "[bench]")
{
    // Ten wild samples, then steady ones: the noise falls below 0.5% only after many samples,
    // and the series stops at the first one where it does.
    std::vector<double> values{1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0, 1.0, 2.0};
    values.resize(100000, 1.5);
    const bench::stopping_rule rule{.max_noise = 0.005, .min_samples = 10, .time_limit_s = 1e9};
    stepping_clock clock{0, 1e-6};
    stream_of source{values};
    const bench::series s = bench::sample_series(rule, std::ref(source), 1, std::ref(clock));
    REQUIRE(s.stopped == bench::stop_reason::converged);
    CHECK(*s.noise <= 0.005);
    // One sample fewer and the noise was still above the target.
    std::vector<double> fewer(values.begin(),
                              values.begin() + static_cast<std::ptrdiff_t>(s.stats.count - 1));
    CHECK(*bench::relative_stddev(fewer) > 0.005);
    CHECK(s.stats.count > 100);
}

TEST_CASE("the time limit stops a series that has fewer than the minimum samples", "[bench]")
{
    const bench::stopping_rule rule{.min_samples = 10, .time_limit_s = 1.0};
    stepping_clock clock{0, 0.4};
    const bench::series s = bench::sample_series(
        rule, [] { return 3.0; }, 1, std::ref(clock));
    CHECK(s.stopped == bench::stop_reason::time_limit);
    CHECK(s.stats.count == 3);
    CHECK(bench::noise_label(s.noise, s.stopped, s.stats.count, s.min_samples) ==
          "noisy: 0.00% (3 of 10 samples)");
}

TEST_CASE("the sample cap stops very short samples before the time limit", "[bench]")
{
    const bench::stopping_rule rule{.min_samples = 2, .time_limit_s = 100, .max_samples = 50};
    stepping_clock clock{0, 1e-6};
    const bench::series s = bench::sample_series(rule, alternating{0.5}, 1, std::ref(clock));
    CHECK(s.stopped == bench::stop_reason::sample_cap);
    CHECK(s.stats.count == 50);
    CHECK(to_string(s.stopped) == "sample cap");
}

TEST_CASE("alternating sampling orders works A B, B A, and stops when all converged", "[bench]")
{
    std::string order;
    const bench::stopping_rule rule{.min_samples = 3, .time_limit_s = 100};
    stepping_clock clock{0, 0.001};
    const std::vector<bench::take_sample> takes{[&] {
                                                    order += 'a';
                                                    return 1.0;
                                                },
                                                [&] {
                                                    order += 'b';
                                                    return 2.0;
                                                }};
    const std::vector<bench::series> out =
        bench::sample_alternating(rule, takes, 1, std::ref(clock));
    CHECK(order == "abbaab");
    REQUIRE(out.size() == 2);
    CHECK(out[0].stats.median_ms == 1.0);
    CHECK(out[1].stats.median_ms == 2.0);

    // One quiet and one noisy work: both sample until the limit, each with its own reason.
    stepping_clock slow{0, 0.1};
    alternating noisy{0.1};
    const std::vector<bench::take_sample> mixed{[] { return 1.0; }, std::ref(noisy)};
    const std::vector<bench::series> both = bench::sample_alternating(
        {.min_samples = 3, .time_limit_s = 1.0}, mixed, 1, std::ref(slow));
    CHECK(both[0].stopped == bench::stop_reason::converged);
    CHECK(both[1].stopped == bench::stop_reason::time_limit);
    CHECK(both[0].stats.count == both[1].stats.count);
    CHECK_THROWS_WITH(bench::sample_alternating(rule, {}, 1), ContainsSubstring("no work"));
}

TEST_CASE("noise labels say the figure, and say noisy when the limit came first", "[bench]")
{
    CHECK(bench::noise_label(0.0031, bench::stop_reason::converged, 12, 10) == "0.31%");
    CHECK(bench::noise_label(0.031, bench::stop_reason::time_limit, 40, 10) == "noisy: 3.10%");
    CHECK(bench::noise_label(0.31, bench::stop_reason::time_limit, 40, 10) == "noisy: 31.0%");
    CHECK(bench::noise_label(0.02, bench::stop_reason::fixed_count, 5, 0) == "2.00%");
    CHECK(bench::noise_label(std::nullopt, bench::stop_reason::fixed_count, 1, 0) == "-");
    CHECK(to_string(bench::stop_reason::converged) == "noise target");
    CHECK(to_string(bench::stop_reason::fixed_count) == "fixed count");
}

TEST_CASE("host timing by the rule: warm-up, batches, the untimed step between", "[bench]")
{
    int calls = 0;
    int between = 0;
    const bench::stopping_rule rule{.min_samples = 4, .time_limit_s = 0.05};
    const bench::series s = bench::time_host(
        rule, 5, 2, [&] { ++calls; }, [&] { ++between; });
    CHECK(s.stats.count >= 4);
    CHECK(calls == 2 + 5 * static_cast<int>(s.stats.count));
    CHECK(between == 1 + static_cast<int>(s.stats.count));
    CHECK(s.calls_per_sample == 5);
    CHECK(s.stopped != bench::stop_reason::fixed_count);

    std::string order;
    const std::array<bench::series, 2> p = bench::time_host_paired(
        {.min_samples = 2, .time_limit_s = 0.05}, 1, 1, [&] { order += 'a'; },
        [&] { order += 'b'; }, [] {});
    // The warm-up, then A B, then B A.
    CHECK(order.substr(0, 6) == "ababba");
    CHECK(p[0].stats.count == p[1].stats.count);
    CHECK_THROWS_AS(bench::time_host(
                        rule, 0, 1, [] {}, [] {}),
                    std::invalid_argument);

    // A fixed count: the noise of its samples, no target.
    const std::vector<double> samples{1.0, 1.1, 0.9};
    const bench::series fixed = bench::series::of(gpu::summarize(samples), 3);
    CHECK(fixed.stopped == bench::stop_reason::fixed_count);
    CHECK(*fixed.noise == Approx(0.1));
    CHECK_FALSE(fixed.max_noise.has_value());
}
