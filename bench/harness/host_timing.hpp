/// @file host_timing.hpp
/// @brief Host-clock timing of batches of calls (allocation, launch overhead, a CPU baseline):
/// with a fixed repetition count (`benchmark_options`) or stopped by the noise rule
/// (`stopping_rule`), alone or two works in alternation.
#pragma once

#include "sampling.hpp"

#include <gpu/timing.hpp>

#include <array>
#include <functional>
#include <vector>

namespace gpu::bench {

/// @brief Divides every sample of @p stats by @p calls: per-call times of batched work.
/// @throws std::invalid_argument when @p calls < 1
[[nodiscard]] statistics per_call(const statistics& stats, int calls);

/// @brief Host-clock timing of batches: @p work runs `warmup` times untimed, then
/// `repetitions` samples each time @p options.calls_per_repetition calls; @p between runs
/// after each sample, untimed (a synchronisation, so that a full launch queue never blocks the
/// timed calls). Returns per-call statistics.
template <class Work, class Between>
[[nodiscard]] statistics time_host(const benchmark_options& options, Work&& work, Between&& between)
{
    validate(options);
    for (int i = 0; i < options.warmup; ++i) {
        work();
    }
    between();
    std::vector<double> samples;
    samples.reserve(static_cast<std::size_t>(options.repetitions));
    for (int r = 0; r < options.repetitions; ++r) {
        const host_timer timer;
        for (int call = 0; call < options.calls_per_repetition; ++call) {
            work();
        }
        samples.push_back(timer.elapsed().count() / options.calls_per_repetition);
        between();
    }
    return summarize(samples);
}

/// @brief Two host-clock measurements taken in alternation (A, B, A, B, ...), so that clock
/// drift and background noise fall on both alike; used to compare a wrapper with the raw call.
struct paired_statistics {
    statistics a; ///< per-call statistics of the first work
    statistics b; ///< per-call statistics of the second work
};

/// @brief Times @p work_a and @p work_b in alternating repetitions with the host clock (see
/// `time_host` for @p between).
template <class WorkA, class WorkB, class Between>
[[nodiscard]] paired_statistics time_host_paired(const benchmark_options& options, WorkA&& work_a,
                                                 WorkB&& work_b, Between&& between)
{
    validate(options);
    for (int i = 0; i < options.warmup; ++i) {
        work_a();
        work_b();
    }
    between();
    std::vector<double> a;
    std::vector<double> b;
    const auto sample = [&](auto& work, std::vector<double>& into) {
        const host_timer timer;
        for (int call = 0; call < options.calls_per_repetition; ++call) {
            work();
        }
        into.push_back(timer.elapsed().count() / options.calls_per_repetition);
        between();
    };
    for (int r = 0; r < options.repetitions; ++r) {
        // Alternate which goes first, so neither always follows the other's synchronisation.
        if (r % 2 == 0) {
            sample(work_a, a);
            sample(work_b, b);
        } else {
            sample(work_b, b);
            sample(work_a, a);
        }
    }
    return {summarize(a), summarize(b)};
}

/// @brief How many back-to-back calls of @p work fill about @p target_ms, from one timed call
/// after one warm-up call, clamped to [@p min_calls, @p max_calls].
template <class Work>
[[nodiscard]] int calibrate_calls(Work&& work, double target_ms, int min_calls = 1,
                                  int max_calls = 100000)
{
    work();
    const host_timer timer;
    work();
    const double one = timer.elapsed().count();
    if (!(one > 0.0)) {
        return max_calls;
    }
    const double calls = target_ms / one;
    if (calls < min_calls) {
        return min_calls;
    }
    return calls > max_calls ? max_calls : static_cast<int>(calls);
}

/// @brief One host-clock sample of @p calls back-to-back calls of @p work, then @p between
/// (untimed): milliseconds per call. @p work and @p between must outlive the sample.
template <class Work, class Between>
[[nodiscard]] take_sample host_batch(int calls, Work& work, Between& between)
{
    return [&work, &between, calls] {
        const host_timer timer;
        for (int call = 0; call < calls; ++call) {
            work();
        }
        const double ms = timer.elapsed().count() / calls;
        between();
        return ms;
    };
}

/// @brief Host-clock samples of batches of @p calls calls of @p work, stopped by @p rule:
/// @p warmup calls first, untimed, then @p between after each sample, untimed (a
/// synchronisation, so that a full launch queue never blocks the timed calls). Per call.
/// @throws std::invalid_argument when @p calls < 1 or @p warmup < 0, or as `validate(rule)`
template <class Work, class Between>
[[nodiscard]] series time_host(const stopping_rule& rule, int calls, int warmup, Work&& work,
                               Between&& between)
{
    validate(benchmark_options{.warmup = warmup, .calls_per_repetition = calls});
    for (int i = 0; i < warmup; ++i) {
        work();
    }
    between();
    return sample_series(rule, host_batch(calls, work, between), calls);
}

/// @brief `time_host` for two works in alternating samples (A B, B A, ...), until both have
/// converged or the time limit is reached; used to compare a wrapper with the raw call.
template <class WorkA, class WorkB, class Between>
[[nodiscard]] std::array<series, 2> time_host_paired(const stopping_rule& rule, int calls,
                                                     int warmup, WorkA&& work_a, WorkB&& work_b,
                                                     Between&& between)
{
    validate(benchmark_options{.warmup = warmup, .calls_per_repetition = calls});
    for (int i = 0; i < warmup; ++i) {
        work_a();
        work_b();
    }
    between();
    const std::vector<take_sample> takes{host_batch(calls, work_a, between),
                                         host_batch(calls, work_b, between)};
    const std::vector<series> out = sample_alternating(rule, takes, calls);
    return {out[0], out[1]};
}

} // namespace gpu::bench
