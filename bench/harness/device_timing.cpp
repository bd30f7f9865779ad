// Device work timed with CUDA events: batch, single calls warm or cold, graph replays
// (device_timing.hpp).
#include "device_timing.hpp"

#include <gpu/capture.hpp>
#include <gpu/error.hpp>
#include <gpu/event.hpp>
#include <gpu/graph.hpp>
#include <gpu/memory.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpu::bench {

namespace {

// The flush on a device: one buffer from the stream's pool, written with cudaMemsetAsync.
class device_flush_target final : public flush_target {
public:
    explicit device_flush_target(stream_ref stream) : stream_(stream) {}

    void allocate(std::size_t bytes) override
    {
        buffer_ = device_buffer<std::byte>(bytes, stream_);
    }

    void write(unsigned char value) override
    {
        GPU_CUDA_CHECK(cudaMemsetAsync(buffer_.data(), value, buffer_.size(), stream_.get()));
    }

private:
    stream_ref stream_;
    device_buffer<std::byte> buffer_;
};

void require_work(std::span<const device_call> works, int calls, const char* function)
{
    if (works.empty()) {
        throw std::invalid_argument(std::string("gpu::bench::device_timer::") + function +
                                    ": no work to time");
    }
    if (calls < 1) {
        throw std::invalid_argument(std::string("gpu::bench::device_timer::") + function +
                                    ": calls is " + std::to_string(calls) +
                                    "; it must be at least 1");
    }
}

// The median of each work's host times per call, into its series.
void set_host_times(std::vector<series>& out, const std::vector<std::vector<double>>& host)
{
    for (std::size_t k = 0; k < out.size(); ++k) {
        if (!host[k].empty()) {
            out[k].host_ms = summarize(host[k]).median_ms;
        }
    }
}

} // namespace

std::string_view to_string(cache_state cache) noexcept
{
    return cache == cache_state::cold ? "cold" : "warm";
}

std::size_t flush_bytes(int l2_cache_bytes)
{
    if (l2_cache_bytes <= 0) {
        throw std::invalid_argument(
            "gpu::bench::flush_bytes: the device reports an L2 of " +
            std::to_string(l2_cache_bytes) +
            " bytes, so a flush cannot be sized; time this device warm only");
    }
    return 2 * static_cast<std::size_t>(l2_cache_bytes);
}

l2_flush::l2_flush(int l2_cache_bytes, std::unique_ptr<flush_target> target)
    : bytes_(flush_bytes(l2_cache_bytes)), target_(std::move(target))
{
    if (!target_) {
        throw std::invalid_argument("gpu::bench::l2_flush: the flush target is null");
    }
    target_->allocate(bytes_);
}

l2_flush l2_flush::on_device(const device_properties& props, stream_ref stream)
{
    return for_device(props, std::make_unique<device_flush_target>(stream));
}

void l2_flush::flush()
{
    // 1, 2, ... 255, 1, ...: never the same value twice in a row, never the zero a fresh
    // allocation may already hold.
    target_->write(static_cast<unsigned char>(flushes_ % 255 + 1));
    ++flushes_;
}

struct device_timer::events {
    event start;
    event stop;

    // Runs `issue` between the two events on `stream`: device milliseconds per call; the host
    // milliseconds per call it took to issue the work go to `host`.
    template <class Issue>
    double time(stream_ref stream, const Issue& issue, int calls, std::vector<double>& host)
    {
        start.record(stream);
        const host_timer timer;
        issue();
        host.push_back(timer.elapsed().count() / calls);
        stop.record(stream);
        return elapsed(start, stop).count() / calls;
    }
};

namespace {
stopping_rule validated(const stopping_rule& rule)
{
    validate(rule);
    return rule;
}
} // namespace

device_timer::device_timer(stream_ref stream, const stopping_rule& rule)
    // The rule is checked before the events are made: a bad rule is named without a GPU.
    : stream_(stream), rule_(validated(rule)), events_(std::make_unique<events>())
{}

device_timer::~device_timer() = default;

int device_timer::calls_for(const device_call& work, double target_ms, int max_calls)
{
    work();
    stream_.synchronize();
    std::vector<double> host;
    const double one = events_->time(stream_, work, 1, host);
    if (!(one > 0.0)) {
        return max_calls;
    }
    return static_cast<int>(std::clamp(target_ms / one, 1.0, static_cast<double>(max_calls)));
}

std::vector<series> device_timer::batch(std::span<const device_call> works, int calls, int warmup)
{
    require_work(works, calls, "batch");
    for (const device_call& work : works) {
        for (int i = 0; i < warmup; ++i) {
            work();
        }
    }
    stream_.synchronize();
    std::vector<std::vector<double>> host(works.size());
    std::vector<take_sample> takes;
    for (std::size_t k = 0; k < works.size(); ++k) {
        takes.emplace_back([this, &works, &host, k, calls] {
            return events_->time(
                stream_,
                [&] {
                    for (int call = 0; call < calls; ++call) {
                        works[k]();
                    }
                },
                calls, host[k]);
        });
    }
    std::vector<series> out = sample_alternating(rule_, takes, calls);
    set_host_times(out, host);
    return out;
}

std::vector<series> device_timer::single_calls(std::span<const device_call> works,
                                               cache_state cache)
{
    require_work(works, 1, "single_calls");
    if (cache == cache_state::cold && !flush_) {
        flush_ =
            std::make_unique<l2_flush>(l2_flush::on_device(current_device().properties(), stream_));
    }
    for (const device_call& work : works) {
        work();
    }
    std::vector<std::vector<double>> host(works.size());
    std::vector<take_sample> takes;
    for (std::size_t k = 0; k < works.size(); ++k) {
        takes.emplace_back([this, &works, &host, k, cache] {
            if (cache == cache_state::cold) {
                flush_->flush();
            }
            // The flush, and anything before, ends before the window opens: each sample starts
            // on an idle stream, cold or warm alike.
            stream_.synchronize();
            return events_->time(stream_, works[k], 1, host[k]);
        });
    }
    std::vector<series> out = sample_alternating(rule_, takes, 1);
    set_host_times(out, host);
    return out;
}

std::vector<series> device_timer::graph(std::span<const device_call> works, int calls)
{
    require_work(works, calls, "graph");
    std::vector<graph_exec> execs;
    execs.reserve(works.size());
    for (const device_call& work : works) {
        const gpu::graph captured = capture(stream_, [&](stream_ref) {
            for (int call = 0; call < calls; ++call) {
                work();
            }
        });
        execs.emplace_back(captured);
        execs.back().upload(stream_);
        execs.back().launch(stream_); // the warm-up replay
    }
    stream_.synchronize();
    std::vector<std::vector<double>> host(works.size());
    std::vector<take_sample> takes;
    for (std::size_t k = 0; k < works.size(); ++k) {
        takes.emplace_back([this, &execs, &host, k, calls] {
            return events_->time(
                stream_, [&] { execs[k].launch(stream_); }, calls, host[k]);
        });
    }
    std::vector<series> out = sample_alternating(rule_, takes, calls);
    set_host_times(out, host);
    return out;
}

series per_call(const series& s, int calls)
{
    if (calls < 1) {
        throw std::invalid_argument("gpu::bench::per_call: calls is " + std::to_string(calls) +
                                    "; it must be at least 1");
    }
    series out = s;
    std::vector<double> samples = s.stats.samples_ms;
    for (double& v : samples) {
        v /= calls;
    }
    out.stats = summarize(samples);
    if (out.host_ms) {
        *out.host_ms /= calls;
    }
    out.calls_per_sample = calls;
    return out;
}

} // namespace gpu::bench
