// cudagap-infer's measurements: per-request latency percentiles and images/s for one batch size
// and mode, and the test accuracy.
#pragma once

#include "model.hpp"
#include "server.hpp"

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace infer {

/// Latency percentiles of one batch size and mode, in milliseconds.
struct latency {
    double p50 = 0.0;
    double p90 = 0.0;
    double p99 = 0.0;
    double mean = 0.0;
};

/// What timing one batch size in one mode gave.
struct timing {
    run_mode mode = run_mode::eager;
    std::int64_t batch_size = 0;
    std::int64_t bucket = 0;   // the largest bucket when the batch is split
    std::int64_t launches = 0; // forward passes per request (more than 1: split)
    std::int64_t requests = 0;
    latency ms;
    double images_per_second = 0.0;
};

/// The @p q-th percentile (0 to 100) of @p samples (not empty), interpolated linearly between the
/// two nearest ranks (NumPy's default).
[[nodiscard]] double percentile(std::vector<double> samples, double q);

/// p50, p90, p99 and the mean of @p samples_ms (not empty).
[[nodiscard]] latency summarize_latency(std::span<const double> samples_ms);

/// A request of @p batch_size images taken in turn from @p pool (repeated when it holds fewer).
[[nodiscard]] std::vector<float> request_of(const image_set& pool, std::int64_t batch_size);

/// Runs @p warmup untimed requests of @p batch_size, then @p requests timed ones, each timed on the
/// host from the input copy to the logits back on the host (what a caller of predict waits).
/// images/s is batch_size * requests over the wall time of the timed loop. @p progress, when set,
/// is called with the requests done so far.
[[nodiscard]] timing time_requests(server& model, const image_set& pool, run_mode mode,
                                   std::int64_t batch_size, std::int64_t warmup,
                                   std::int64_t requests,
                                   const std::function<void(std::int64_t)>& progress);

/// The accuracy of @p mode on @p set (which has labels), predicted a largest bucket at a time.
[[nodiscard]] double test_accuracy(server& model, const image_set& set, run_mode mode);

} // namespace infer
