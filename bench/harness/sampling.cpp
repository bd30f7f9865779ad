// The stopping rule and the sampling loops that apply it (sampling.hpp).
#include "sampling.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <stdexcept>
#include <string>

namespace gpu::bench {

namespace {

std::string number(double value)
{
    std::array<char, 32> text{};
    std::snprintf(text.data(), text.size(), "%g", value);
    return text.data();
}

std::string percent(double fraction)
{
    std::array<char, 32> text{};
    std::snprintf(text.data(), text.size(), fraction < 0.1 ? "%.2f%%" : "%.1f%%", 100 * fraction);
    return text.data();
}

void check_sample(double sample_ms)
{
    if (!std::isfinite(sample_ms) || sample_ms < 0.0) {
        throw std::invalid_argument("gpu::bench::sampler: a sample of " + number(sample_ms) +
                                    " ms; a time must be finite and not negative");
    }
}

} // namespace

std::string_view to_string(stop_reason reason) noexcept
{
    switch (reason) {
    case stop_reason::converged: return "noise target";
    case stop_reason::time_limit: return "time limit";
    case stop_reason::sample_cap: return "sample cap";
    case stop_reason::fixed_count: return "fixed count";
    }
    return "?";
}

void validate(const stopping_rule& rule)
{
    const auto fail = [](const char* field, double value, const char* must) {
        throw std::invalid_argument("gpu::bench::stopping_rule: " + std::string(field) + " is " +
                                    number(value) + "; it must be " + must);
    };
    if (!std::isfinite(rule.max_noise) || rule.max_noise <= 0.0) {
        fail("max_noise", rule.max_noise, "positive, e.g. 0.005 for 0.5%");
    }
    if (rule.min_samples < 1) {
        fail("min_samples", rule.min_samples, "at least 1");
    }
    if (!std::isfinite(rule.time_limit_s) || rule.time_limit_s <= 0.0) {
        fail("time_limit_s", rule.time_limit_s, "positive seconds");
    }
    if (rule.max_samples < rule.min_samples) {
        fail("max_samples", rule.max_samples, "at least min_samples");
    }
}

std::optional<double> relative_stddev(std::span<const double> samples_ms)
{
    if (samples_ms.size() < 2) {
        return std::nullopt;
    }
    double mean = 0.0;
    for (const double s : samples_ms) {
        mean += s;
    }
    mean /= static_cast<double>(samples_ms.size());
    if (!(mean > 0.0)) {
        return std::nullopt;
    }
    double squares = 0.0;
    for (const double s : samples_ms) {
        squares += (s - mean) * (s - mean);
    }
    return std::sqrt(squares / static_cast<double>(samples_ms.size() - 1)) / mean;
}

sampler::sampler(const stopping_rule& rule) : rule_(rule)
{
    validate(rule_);
}

void sampler::add(double sample_ms)
{
    check_sample(sample_ms);
    samples_.push_back(sample_ms);
    const double delta = sample_ms - mean_;
    mean_ += delta / static_cast<double>(samples_.size());
    m2_ += delta * (sample_ms - mean_);
}

std::optional<double> sampler::noise() const noexcept
{
    if (samples_.size() < 2 || !(mean_ > 0.0)) {
        return std::nullopt;
    }
    return std::sqrt(std::max(m2_, 0.0) / static_cast<double>(samples_.size() - 1)) / mean_;
}

bool sampler::converged() const noexcept
{
    const auto needed = static_cast<std::size_t>(std::max(rule_.min_samples, 2));
    const std::optional<double> n = noise();
    return samples_.size() >= needed && n && *n <= rule_.max_noise;
}

bool sampler::done(double elapsed_s) const noexcept
{
    return converged() || elapsed_s >= rule_.time_limit_s ||
           samples_.size() >= static_cast<std::size_t>(rule_.max_samples);
}

stop_reason sampler::reason(double elapsed_s) const noexcept
{
    if (converged()) {
        return stop_reason::converged;
    }
    if (elapsed_s < rule_.time_limit_s &&
        samples_.size() >= static_cast<std::size_t>(rule_.max_samples)) {
        return stop_reason::sample_cap;
    }
    return stop_reason::time_limit;
}

series series::of(const statistics& stats, int calls_per_sample)
{
    series s;
    s.stats = stats;
    s.noise = relative_stddev(stats.samples_ms);
    s.stopped = stop_reason::fixed_count;
    s.calls_per_sample = calls_per_sample;
    return s;
}

std::string noise_label(std::optional<double> noise, stop_reason stopped, std::size_t samples,
                        int min_samples)
{
    const bool noisy = stopped == stop_reason::time_limit || stopped == stop_reason::sample_cap;
    std::string text = noise ? percent(*noise) : std::string("-");
    if (noisy) {
        text = "noisy: " + text;
        if (samples < static_cast<std::size_t>(min_samples)) {
            text +=
                " (" + std::to_string(samples) + " of " + std::to_string(min_samples) + " samples)";
        }
    }
    return text;
}

double steady_seconds()
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

series sample_series(const stopping_rule& rule, const take_sample& take, int calls_per_sample,
                     const seconds_clock& clock)
{
    const std::vector<take_sample> one{take};
    return sample_alternating(rule, one, calls_per_sample, clock).front();
}

std::vector<series> sample_alternating(const stopping_rule& rule,
                                       std::span<const take_sample> takes, int calls_per_sample,
                                       const seconds_clock& clock)
{
    if (takes.empty()) {
        throw std::invalid_argument("gpu::bench::sample_alternating: no work to sample");
    }
    std::vector<sampler> samplers(takes.size(), sampler(rule));
    const double start = clock();
    double elapsed = 0.0;
    const auto all_done = [&] {
        return std::all_of(samplers.begin(), samplers.end(),
                           [](const sampler& s) { return s.converged(); }) ||
               elapsed >= rule.time_limit_s ||
               samplers.front().count() >= static_cast<std::size_t>(rule.max_samples);
    };
    for (std::size_t round = 0; !all_done(); ++round) {
        for (std::size_t i = 0; i < takes.size(); ++i) {
            // Even rounds go forward, odd ones backward: neither work always follows the other.
            const std::size_t k = round % 2 == 0 ? i : takes.size() - 1 - i;
            samplers[k].add(takes[k]());
        }
        elapsed = clock() - start;
    }
    std::vector<series> out;
    out.reserve(samplers.size());
    for (const sampler& s : samplers) {
        series one;
        one.stats = summarize(s.samples());
        one.noise = s.noise();
        one.stopped = s.reason(elapsed);
        one.max_noise = rule.max_noise;
        one.min_samples = rule.min_samples;
        one.calls_per_sample = calls_per_sample;
        one.wall_s = elapsed;
        out.push_back(std::move(one));
    }
    return out;
}

} // namespace gpu::bench
