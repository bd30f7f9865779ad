/// @file device_timing.hpp
/// @brief Timing device work as nvbench does: warm or cold (the L2 flushed before each sample,
/// outside the timed window), one call per sample or many timed as one (batch), and the same
/// calls replayed from a CUDA graph; every sampling stopped by the noise rule (sampling.hpp).
///
/// - `batch`: each sample is `calls` back-to-back calls between two CUDA events, per call the
///   mean: the GPU time when the GPU is the bottleneck (nvbench's batch measurement).
/// - `single_calls`: each sample is one call on an idle stream between two events: the GPU time
///   plus what the GPU waits for the host to launch it. Cold: the L2 is flushed first (a write of
///   twice its size) and the flush finishes before the window opens (nvbench's cold
///   measurement); warm: the previous sample's data is still cached.
/// - `graph`: the `calls` calls captured once into a graph (`gpu::capture`), each sample one
///   replay between two events, per call the mean: what the launches cost without their host
///   overhead.
///
/// Each series also records the host time per call spent issuing the work (`series::host_ms`),
/// so that a graph's cheaper launch shows even where the GPU time hides it.
#pragma once

#include "sampling.hpp"

#include <gpu/device.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu::bench {

/// @brief Whether a measurement ran with the caches as the previous call left them or flushed.
enum class cache_state {
    warm, ///< back to back, data cached by the previous call (as most real code runs)
    cold, ///< the L2 flushed before each sample, outside the timed window
};

/// @brief `warm` or `cold`.
[[nodiscard]] std::string_view to_string(cache_state cache) noexcept;

/// @brief The bytes a flush writes for a device whose L2 holds @p l2_cache_bytes: twice that,
/// so that no line the timed work could use survives (the L2's replacement is not strictly LRU).
/// @throws std::invalid_argument when @p l2_cache_bytes is not positive (the device reported no
/// L2, so a flush cannot be sized)
[[nodiscard]] std::size_t flush_bytes(int l2_cache_bytes);

/// @brief Where a flush writes: a buffer allocated once, written whole at each flush.
class flush_target {
public:
    virtual ~flush_target() = default;
    /// @brief Allocates the buffer of @p bytes; called once.
    virtual void allocate(std::size_t bytes) = 0;
    /// @brief Writes @p value to every byte of the buffer.
    virtual void write(unsigned char value) = 0;

    flush_target() = default;
    flush_target(const flush_target&) = delete;
    flush_target& operator=(const flush_target&) = delete;
    flush_target(flush_target&&) = delete;
    flush_target& operator=(flush_target&&) = delete;
};

/// @brief Flushes the L2 by writing a buffer of twice its size: sized and allocated once, at
/// construction, and reused by every flush (an allocation per sample would cost more than the
/// flush and could return the same, cached, memory).
class l2_flush {
public:
    /// @brief Sizes the buffer for @p l2_cache_bytes (`flush_bytes`) and allocates it in
    /// @p target.
    /// @throws std::invalid_argument as `flush_bytes`, or when @p target is null
    l2_flush(int l2_cache_bytes, std::unique_ptr<flush_target> target);

    /// @brief A flush sized from the device properties @p props (twice their `l2_cache_bytes`),
    /// allocated in @p target.
    /// @throws as the constructor
    [[nodiscard]] static l2_flush for_device(const device_properties& props,
                                             std::unique_ptr<flush_target> target)
    {
        return l2_flush(props.l2_cache_bytes, std::move(target));
    }

    /// @brief A flush on @p stream's device: a `gpu::device_buffer` written by
    /// `cudaMemsetAsync` on @p stream, sized from @p props (`for_device`).
    /// @throws std::invalid_argument as `flush_bytes`; gpu::cuda_error when the buffer cannot
    /// be allocated
    [[nodiscard]] static l2_flush on_device(const device_properties& props, stream_ref stream);

    /// @brief Writes the whole buffer, a different byte value each time (so that no write can
    /// be skipped as unchanged). Queued on the target's stream: synchronise before timing.
    void flush();

    /// @brief The bytes each flush writes.
    [[nodiscard]] std::size_t bytes() const noexcept { return bytes_; }

    /// @brief How many flushes were made.
    [[nodiscard]] std::size_t flushes() const noexcept { return flushes_; }

private:
    std::size_t bytes_ = 0;
    std::size_t flushes_ = 0;
    std::unique_ptr<flush_target> target_;
};

/// @brief One call of device work, queued on the timer's stream.
using device_call = std::function<void()>;

/// @brief Samples device work on one stream with CUDA events, each sampling stopped by one
/// rule; works given together are sampled in alternating order (see `sample_alternating`).
class device_timer {
public:
    /// @brief A timer for work queued on @p stream, stopped by @p rule.
    /// @throws std::invalid_argument as `validate(rule)`
    device_timer(stream_ref stream, const stopping_rule& rule);
    ~device_timer();
    device_timer(const device_timer&) = delete;
    device_timer& operator=(const device_timer&) = delete;
    device_timer(device_timer&&) = delete;
    device_timer& operator=(device_timer&&) = delete;

    /// @brief The rule.
    [[nodiscard]] const stopping_rule& rule() const noexcept { return rule_; }

    /// @brief How many back-to-back calls of @p work fill about @p target_ms, from one timed
    /// call after one warm-up call, in [1, @p max_calls].
    [[nodiscard]] int calls_for(const device_call& work, double target_ms, int max_calls = 10000);

    /// @brief Batch samples: @p calls back-to-back calls per sample, after @p warmup calls of
    /// each work. Warm by nature.
    /// @throws std::invalid_argument when @p works is empty or @p calls < 1
    [[nodiscard]] std::vector<series> batch(std::span<const device_call> works, int calls,
                                            int warmup = 3);

    /// @brief One call per sample on an idle stream, warm or cold (the flush is made on first
    /// use for the current device, once, and reused).
    /// @throws std::invalid_argument when @p works is empty, or as `flush_bytes` for a cold
    /// sampling on a device that reports no L2
    [[nodiscard]] std::vector<series> single_calls(std::span<const device_call> works,
                                                   cache_state cache);

    /// @brief @p calls calls of each work captured into one graph, sampled replay by replay.
    /// The works must be capturable (no synchronisation, stream-ordered allocation only).
    /// @throws std::invalid_argument when @p works is empty or @p calls < 1; gpu::cuda_error
    /// when a capture fails
    [[nodiscard]] std::vector<series> graph(std::span<const device_call> works, int calls);

    /// @brief The flush of cold samplings, once one has run; null before.
    [[nodiscard]] const l2_flush* flush() const noexcept { return flush_.get(); }

private:
    struct events;
    stream_ref stream_;
    stopping_rule rule_;
    std::unique_ptr<l2_flush> flush_;
    std::unique_ptr<events> events_;
};

/// @brief Divides every time of @p s by @p calls (a sample that timed @p calls calls, as one),
/// and records @p calls as its calls per sample.
/// @throws std::invalid_argument when @p calls < 1
[[nodiscard]] series per_call(const series& s, int calls);

} // namespace gpu::bench
