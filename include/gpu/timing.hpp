/// @file timing.hpp
/// @brief Timers and `benchmark`: warm-up, repetitions and robust statistics, for host work or
/// for device work timed by CUDA events.
///
/// @code
/// gpu::stream s;
/// auto stats = gpu::benchmark(s, [&] { gpu::blas::gemm(h, a, b, c); },
///                             {.warmup = 3, .repetitions = 20, .calls_per_repetition = 10});
/// std::printf("%.3f ms (spread %.1f%%), %.1f TFLOP/s\n", stats.median_ms,
///             100 * stats.relative_spread(), gpu::tflops(2.0 * n * n * n, stats.median_ms));
/// @endcode
#pragma once

#include <gpu/event.hpp>
#include <gpu/stream.hpp>

#include <chrono>
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace gpu {

/// @brief Summary statistics of repeated measurements, in milliseconds per call.
struct statistics {
    std::size_t count = 0;            ///< number of samples
    double min_ms = 0;                ///< fastest sample
    double median_ms = 0;             ///< the figure to quote
    double mean_ms = 0;               ///< arithmetic mean
    double max_ms = 0;                ///< slowest sample
    double stddev_ms = 0;             ///< sample standard deviation (0 for one sample)
    std::vector<double> samples_ms{}; ///< the samples, in the order they were taken

    /// @brief `(max - min) / median`: how noisy the run was (0 for one sample).
    [[nodiscard]] double relative_spread() const noexcept
    {
        return median_ms > 0 ? (max_ms - min_ms) / median_ms : 0.0;
    }
};

/// @brief Computes the statistics of @p samples_ms.
/// @throws std::invalid_argument when @p samples_ms is empty or holds a negative or non-finite
/// value (the offending value is named)
[[nodiscard]] statistics summarize(std::span<const double> samples_ms);

/// @brief How `benchmark` measures.
struct benchmark_options {
    int warmup = 3;               ///< untimed calls first (lazy loading, caches, clocks)
    int repetitions = 10;         ///< timed samples, at least
    int calls_per_repetition = 1; ///< back-to-back calls per sample; the sample is their mean
    /// Keep taking samples until this much time has been measured (0: just `repetitions`).
    std::chrono::duration<double, std::milli> min_time{0};
    int max_repetitions = 1000; ///< upper bound when `min_time` asks for more samples
};

/// @brief Checks the options; `benchmark` calls this first.
/// @throws std::invalid_argument naming the field and its value when a count is below its
/// minimum (warmup < 0, repetitions < 1, calls_per_repetition < 1, max_repetitions <
/// repetitions) or `min_time` is negative
void validate(const benchmark_options& options);

/// @brief Measures host wall time with `std::chrono::steady_clock`.
class host_timer {
public:
    /// @brief Starts timing now.
    host_timer() noexcept : start_(std::chrono::steady_clock::now()) {}
    /// @brief Starts again from now.
    void restart() noexcept { start_ = std::chrono::steady_clock::now(); }
    /// @brief Time since construction or the last restart.
    [[nodiscard]] std::chrono::duration<double, std::milli> elapsed() const noexcept
    {
        return std::chrono::steady_clock::now() - start_;
    }

private:
    std::chrono::steady_clock::time_point start_;
};

/// @brief Times work on a stream with a pair of CUDA events (device time, not host time).
class event_timer {
public:
    /// @brief Creates the two events on the current device, to be recorded on @p stream (named:
    /// recording is stream-ordered work).
    /// @throws gpu::cuda_error when CUDA is unavailable
    explicit event_timer(stream_ref stream) : stream_(stream) {}
    /// @brief Records the start event on the stream.
    void start() { start_.record(stream_); }
    /// @brief Records the stop event on the stream.
    void stop() { stop_.record(stream_); }
    /// @brief Waits for the stop event and returns the time between the two.
    [[nodiscard]] event_duration elapsed() const { return gpu::elapsed(start_, stop_); }

private:
    stream_ref stream_;
    event start_;
    event stop_;
};

/// @brief Runs @p work `warmup` times untimed, then samples it with the host clock.
/// @tparam Work a callable taking no arguments
/// @return statistics in milliseconds per call
template <class Work>
[[nodiscard]] statistics benchmark(Work&& work, const benchmark_options& options = {})
{
    validate(options);
    for (int i = 0; i < options.warmup; ++i) {
        work();
    }
    std::vector<double> samples;
    double measured = 0.0;
    while (static_cast<int>(samples.size()) < options.repetitions ||
           (measured < options.min_time.count() &&
            static_cast<int>(samples.size()) < options.max_repetitions)) {
        const host_timer timer;
        for (int call = 0; call < options.calls_per_repetition; ++call) {
            work();
        }
        const double total = timer.elapsed().count();
        measured += total;
        samples.push_back(total / options.calls_per_repetition);
    }
    return summarize(samples);
}

/// @brief Runs @p work (which queues device work on @p stream) `warmup` times, then samples it
/// with CUDA events recorded around `calls_per_repetition` back-to-back calls.
///
/// Only the device time between the events counts: host overhead shows only where it starves
/// the GPU. Handle creation, plan searches and lazy module loading belong in the warm-up.
/// @tparam Work a callable taking no arguments that queues work on @p stream
/// @return statistics in milliseconds per call
template <class Work>
[[nodiscard]] statistics benchmark(stream_ref stream, Work&& work,
                                   const benchmark_options& options = {})
{
    validate(options);
    for (int i = 0; i < options.warmup; ++i) {
        work();
    }
    stream.synchronize();
    event_timer timer(stream);
    std::vector<double> samples;
    double measured = 0.0;
    while (static_cast<int>(samples.size()) < options.repetitions ||
           (measured < options.min_time.count() &&
            static_cast<int>(samples.size()) < options.max_repetitions)) {
        timer.start();
        for (int call = 0; call < options.calls_per_repetition; ++call) {
            work();
        }
        timer.stop();
        const double total = timer.elapsed().count();
        measured += total;
        samples.push_back(total / options.calls_per_repetition);
    }
    return summarize(samples);
}

namespace detail {
/// @brief Throws `std::invalid_argument` naming @p function and the time unless @p milliseconds
/// is positive and finite.
void require_positive_time(const char* function, double milliseconds);
} // namespace detail

/// @brief Throughput in TFLOP/s (10^12 floating-point operations per second).
/// @param flops operations per call (2·m·n·k for a GEMM)
/// @param milliseconds time per call
/// @throws std::invalid_argument when @p milliseconds is not positive
[[nodiscard]] inline double tflops(double flops, double milliseconds)
{
    detail::require_positive_time("gpu::tflops", milliseconds);
    return flops / (milliseconds * 1e-3) / 1e12;
}

/// @brief Throughput in GFLOP/s (10^9 floating-point operations per second).
/// @throws std::invalid_argument when @p milliseconds is not positive
[[nodiscard]] inline double gflops(double flops, double milliseconds)
{
    detail::require_positive_time("gpu::gflops", milliseconds);
    return flops / (milliseconds * 1e-3) / 1e9;
}

/// @brief Bandwidth in GB/s (10^9 bytes per second).
/// @param bytes bytes moved per call (read plus written)
/// @param milliseconds time per call
/// @throws std::invalid_argument when @p milliseconds is not positive
[[nodiscard]] inline double gbps(double bytes, double milliseconds)
{
    detail::require_positive_time("gpu::gbps", milliseconds);
    return bytes / (milliseconds * 1e-3) / 1e9;
}

} // namespace gpu
