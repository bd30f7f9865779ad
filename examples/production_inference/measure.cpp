// cudagap-infer's measurements.
#include "measure.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

namespace infer {

double percentile(std::vector<double> samples, double q)
{
    if (samples.empty() || !(q >= 0.0 && q <= 100.0)) {
        throw std::invalid_argument("percentile " + std::to_string(q) + " of " +
                                    std::to_string(samples.size()) +
                                    " samples: needs samples and a percentile in [0, 100]");
    }
    std::sort(samples.begin(), samples.end());
    const double rank = q / 100.0 * static_cast<double>(samples.size() - 1);
    const auto below = static_cast<std::size_t>(std::floor(rank));
    const std::size_t above = std::min(below + 1, samples.size() - 1);
    return samples[below] + (rank - static_cast<double>(below)) * (samples[above] - samples[below]);
}

latency summarize_latency(std::span<const double> samples_ms)
{
    const std::vector<double> all(samples_ms.begin(), samples_ms.end());
    const double sum = std::accumulate(all.begin(), all.end(), 0.0);
    return {percentile(all, 50), percentile(all, 90), percentile(all, 99),
            all.empty() ? 0.0 : sum / static_cast<double>(all.size())};
}

std::vector<float> request_of(const image_set& pool, std::int64_t batch_size)
{
    if (pool.count == 0 || batch_size < 1) {
        throw std::invalid_argument("request_of: a batch of " + std::to_string(batch_size) +
                                    " from " + std::to_string(pool.count) + " images");
    }
    std::vector<float> request(static_cast<std::size_t>(batch_size) * image_elements);
    for (std::size_t row = 0; row < static_cast<std::size_t>(batch_size); ++row) {
        const auto from =
            pool.pixels.begin() + static_cast<std::ptrdiff_t>((row % pool.count) * image_elements);
        std::copy(from, from + static_cast<std::ptrdiff_t>(image_elements),
                  request.begin() + static_cast<std::ptrdiff_t>(row * image_elements));
    }
    return request;
}

timing time_requests(server& model, const image_set& pool, run_mode mode, std::int64_t batch_size,
                     std::int64_t warmup, std::int64_t requests,
                     const std::function<void(std::int64_t)>& progress)
{
    using clock = std::chrono::steady_clock;
    const std::vector<float> request = request_of(pool, batch_size);
    for (std::int64_t i = 0; i < warmup; ++i) {
        static_cast<void>(model.predict(request, mode));
    }
    std::vector<double> samples(static_cast<std::size_t>(requests));
    const std::uint64_t passes_before = model.forward_passes();
    const auto start = clock::now();
    for (std::int64_t i = 0; i < requests; ++i) {
        const auto begin = clock::now();
        static_cast<void>(model.predict(request, mode));
        samples[static_cast<std::size_t>(i)] =
            std::chrono::duration<double, std::milli>(clock::now() - begin).count();
        if (progress &&
            (i + 1 == requests || (i + 1) % std::max<std::int64_t>(1, requests / 50) == 0)) {
            progress(i + 1);
        }
    }
    const double seconds = std::chrono::duration<double>(clock::now() - start).count();
    timing result{mode,
                  batch_size,
                  bucket_for(batch_size, model.buckets()),
                  static_cast<std::int64_t>(model.forward_passes() - passes_before) / requests,
                  requests,
                  summarize_latency(samples),
                  0.0};
    result.images_per_second = static_cast<double>(batch_size * requests) / seconds;
    return result;
}

double test_accuracy(server& model, const image_set& set, run_mode mode)
{
    const std::vector<float> logits = model.predict_batch(set.pixels, model.buckets().back(), mode);
    return accuracy(predicted_classes(logits), set.labels);
}

} // namespace infer
