// Statistics and throughput helpers for gpu::benchmark.
#include <gpu/detail/expects.hpp>
#include <gpu/timing.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace gpu {

void detail::require_positive_time(const char* function, double milliseconds)
{
    GPU_EXPECTS(milliseconds > 0.0 && std::isfinite(milliseconds), std::invalid_argument, function,
                ": the time must be positive and finite, got ", milliseconds, " ms");
}

namespace {
// The mean of @p sorted (ascending, finite, not negative), within [min, max]: a sum of huge
// samples that overflows is redone on samples scaled into [0, 1], and rounding (three samples
// of 0.1 sum to 0.30000000000000004) never takes the mean past the extremes.
double mean_of(const std::vector<double>& sorted)
{
    const auto n = static_cast<double>(sorted.size());
    double mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / n;
    if (!std::isfinite(mean)) {
        const double scale = sorted.back();
        double scaled = 0.0;
        for (const double sample : sorted) {
            scaled += sample / scale;
        }
        mean = scaled / n * scale;
    }
    return std::clamp(mean, sorted.front(), sorted.back());
}

// The sample standard deviation of @p sorted (at least two samples) around @p mean; squares that
// overflow are redone on deviations scaled by the range.
double standard_deviation(const std::vector<double>& sorted, double mean)
{
    const auto degrees = static_cast<double>(sorted.size() - 1);
    double squares = 0.0;
    for (const double sample : sorted) {
        squares += (sample - mean) * (sample - mean);
    }
    if (std::isfinite(squares)) {
        return std::sqrt(squares / degrees);
    }
    const double range = sorted.back() - sorted.front();
    double scaled = 0.0;
    for (const double sample : sorted) {
        scaled += ((sample - mean) / range) * ((sample - mean) / range);
    }
    return std::sqrt(scaled / degrees) * range;
}

} // namespace

statistics summarize(std::span<const double> samples_ms)
{
    GPU_EXPECTS(!samples_ms.empty(), std::invalid_argument,
                "gpu::summarize: no samples to summarize");
    for (std::size_t i = 0; i < samples_ms.size(); ++i) {
        GPU_EXPECTS(std::isfinite(samples_ms[i]) && samples_ms[i] >= 0.0, std::invalid_argument,
                    "gpu::summarize: sample ", i, " is ", samples_ms[i],
                    " ms; samples must be finite and not negative");
    }
    statistics stats;
    stats.samples_ms.assign(samples_ms.begin(), samples_ms.end());
    std::vector<double> sorted = stats.samples_ms;
    std::sort(sorted.begin(), sorted.end());
    const std::size_t n = sorted.size();
    stats.count = n;
    stats.min_ms = sorted.front();
    stats.max_ms = sorted.back();
    // std::midpoint: (a + b) / 2 overflows to infinity for two samples near DBL_MAX.
    stats.median_ms = n % 2 == 1 ? sorted[n / 2] : std::midpoint(sorted[n / 2 - 1], sorted[n / 2]);
    stats.mean_ms = mean_of(sorted);
    if (n > 1) {
        stats.stddev_ms = standard_deviation(sorted, stats.mean_ms);
    }
    return stats;
}

void validate(const benchmark_options& options)
{
    const auto reject = [](const std::string& field, const std::string& value,
                           const std::string& rule) {
        throw std::invalid_argument("gpu::benchmark_options: " + field + " is " + value + "; " +
                                    rule);
    };
    if (options.warmup < 0) {
        reject("warmup", std::to_string(options.warmup), "it must be 0 or more");
    }
    if (options.repetitions < 1) {
        reject("repetitions", std::to_string(options.repetitions), "it must be at least 1");
    }
    if (options.calls_per_repetition < 1) {
        reject("calls_per_repetition", std::to_string(options.calls_per_repetition),
               "it must be at least 1");
    }
    if (options.max_repetitions < options.repetitions) {
        reject("max_repetitions", std::to_string(options.max_repetitions),
               "it must be at least repetitions, which is " + std::to_string(options.repetitions));
    }
    if (options.min_time.count() < 0.0) {
        reject("min_time", std::to_string(options.min_time.count()) + " ms",
               "it must not be negative");
    }
}

} // namespace gpu
