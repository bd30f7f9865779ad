/// @file sampling.hpp
/// @brief When to stop sampling, as nvbench decides it: the relative standard deviation of the
/// samples below a target after a minimum sample count, within a time limit per measurement.
/// The rule (`stopping_rule`), the state it is applied to (`sampler`), the loops that apply it
/// (`sample_series`, `sample_alternating`) and what a series of samples comes to (`series`).
///
/// A sample is a time per call in milliseconds: one call, or the mean of a batch of calls timed
/// as one. The loops know nothing of GPUs: a "take" function takes one sample (its own set-up
/// and synchronisation outside its timed window) and returns it, so that the rule is tested on
/// synthetic sample streams and applied alike to CUDA events and the host clock.
///
/// @code
/// const gpu::bench::stopping_rule rule{.max_noise = 0.005, .min_samples = 10, .time_limit_s = 1};
/// const gpu::bench::series s = gpu::bench::sample_series(rule, [&] { return time_one_call(); });
/// // s.stats.median_ms, *s.noise, s.stopped == stop_reason::converged or time_limit ...
/// @endcode
#pragma once

#include <gpu/timing.hpp>

#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::bench {

/// @brief Why a series of samples stopped.
enum class stop_reason {
    converged,   ///< the noise reached the target after the minimum sample count
    time_limit,  ///< the time limit came first: the noise is what the series reached
    sample_cap,  ///< the sample cap came first (samples far shorter than the time limit)
    fixed_count, ///< a fixed number of samples, no stopping rule (a CPU baseline, for one)
};

/// @brief `noise target`, `time limit`, `sample cap` or `fixed count`.
[[nodiscard]] std::string_view to_string(stop_reason reason) noexcept;

/// @brief nvbench's "stdrel" stopping criterion and its timeout: sampling stops once the
/// relative standard deviation of the samples is at most `max_noise` and at least
/// `min_samples` were taken, or once `time_limit_s` of sampling has passed, whichever is first.
struct stopping_rule {
    double max_noise = 0.005;  ///< target relative standard deviation (nvbench's `--max-noise`)
    int min_samples = 10;      ///< samples before the noise may stop (`--min-samples`)
    double time_limit_s = 1.0; ///< wall time one measurement may take (`--timeout`)
    /// At most this many samples, so that very short samples cannot fill the memory.
    int max_samples = 100000;
};

/// @brief Checks a rule.
/// @throws std::invalid_argument naming the field and its value when `max_noise` is not
/// positive and finite, `min_samples` < 1, `time_limit_s` is not positive and finite, or
/// `max_samples` < `min_samples`
void validate(const stopping_rule& rule);

/// @brief The relative standard deviation of @p samples_ms (sample standard deviation over the
/// mean); empty for fewer than two samples or a mean that is not positive.
[[nodiscard]] std::optional<double> relative_stddev(std::span<const double> samples_ms);

/// @brief The samples of one series so far and the rule they are judged by; the noise is kept
/// up to date as samples arrive (Welford's method), so each check is cheap.
class sampler {
public:
    /// @brief An empty series judged by @p rule.
    /// @throws std::invalid_argument as `validate`
    explicit sampler(const stopping_rule& rule);

    /// @brief Records a sample (milliseconds per call).
    /// @throws std::invalid_argument when @p sample_ms is negative or not finite
    void add(double sample_ms);

    /// @brief Samples so far.
    [[nodiscard]] std::size_t count() const noexcept { return samples_.size(); }

    /// @brief The relative standard deviation so far; empty as for `relative_stddev`.
    [[nodiscard]] std::optional<double> noise() const noexcept;

    /// @brief At least the minimum sample count (and two), with the noise at most the target.
    [[nodiscard]] bool converged() const noexcept;

    /// @brief Whether sampling is over after @p elapsed_s seconds of it: converged, the time
    /// limit reached, or the sample cap reached.
    [[nodiscard]] bool done(double elapsed_s) const noexcept;

    /// @brief Why sampling stopped (or would stop) after @p elapsed_s seconds: `converged` when
    /// it did, else `sample_cap` or `time_limit`.
    [[nodiscard]] stop_reason reason(double elapsed_s) const noexcept;

    /// @brief The samples, in the order they were taken.
    [[nodiscard]] const std::vector<double>& samples() const noexcept { return samples_; }

    /// @brief The rule.
    [[nodiscard]] const stopping_rule& rule() const noexcept { return rule_; }

private:
    stopping_rule rule_;
    std::vector<double> samples_;
    double mean_ = 0;
    double m2_ = 0; // sum of squared differences from the mean (Welford)
};

/// @brief What a series of samples comes to: per-call statistics, the noise reached and why it
/// stopped.
struct series {
    statistics stats{};                             ///< per call, over the samples
    std::optional<double> noise{};                  ///< relative standard deviation of the samples
    stop_reason stopped = stop_reason::fixed_count; ///< why sampling stopped
    std::optional<double> max_noise{}; ///< the target it was judged by; empty for a fixed count
    int min_samples = 0;               ///< the rule's minimum sample count (0: fixed count)
    int calls_per_sample = 1;          ///< calls timed as one sample
    /// Median host time per call spent issuing the work (device series); empty for host work.
    std::optional<double> host_ms{};
    double wall_s = 0; ///< seconds the sampling took (its warm-up excluded)

    /// @brief A fixed-count series of @p stats: its noise from the samples, no target.
    [[nodiscard]] static series of(const statistics& stats, int calls_per_sample = 1);

    /// @brief Stopped by the time limit or the sample cap before it converged.
    [[nodiscard]] bool noisy() const noexcept
    {
        return stopped == stop_reason::time_limit || stopped == stop_reason::sample_cap;
    }
};

/// @brief The noise as a report prints it: `0.31%`; `noisy: 3.1%` when the series stopped on
/// its limit above the target, with `(4 of 10 samples)` when it had fewer than the minimum;
/// `-` when there is no noise to speak of (fewer than two samples).
[[nodiscard]] std::string noise_label(std::optional<double> noise, stop_reason stopped,
                                      std::size_t samples, int min_samples);

/// @brief A clock in seconds from an arbitrary start, for the time limit.
using seconds_clock = std::function<double()>;

/// @brief `std::chrono::steady_clock` in seconds: the clock the loops use by default.
[[nodiscard]] double steady_seconds();

/// @brief One sample: runs its own set-up, times its window, and returns milliseconds per call.
using take_sample = std::function<double()>;

/// @brief Takes samples with @p take until @p rule says stop; the time limit counts from the
/// first sample (warm-up belongs before the call).
/// @param calls_per_sample recorded in the result: how many calls one sample times
/// @param clock the clock the time limit is read from
/// @throws std::invalid_argument as `validate`, or when @p take returns a negative or
/// non-finite time; whatever @p take throws
[[nodiscard]] series sample_series(const stopping_rule& rule, const take_sample& take,
                                   int calls_per_sample = 1,
                                   const seconds_clock& clock = steady_seconds);

/// @brief Takes samples of several works in alternating rounds (A B, then B A, then A B ...),
/// so that clock drift and background noise fall on all of them alike, until every series has
/// converged or the time limit or sample cap is reached; a series that converged early keeps
/// sampling with the others. Each series gets its own stop reason.
/// @throws std::invalid_argument as `sample_series`, or when @p takes is empty
[[nodiscard]] std::vector<series> sample_alternating(const stopping_rule& rule,
                                                     std::span<const take_sample> takes,
                                                     int calls_per_sample = 1,
                                                     const seconds_clock& clock = steady_seconds);

} // namespace gpu::bench
