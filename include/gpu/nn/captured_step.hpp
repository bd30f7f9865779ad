/// @file captured_step.hpp
/// @brief `gpu::nn::captured_step`: a training step run eagerly for warm-up, then captured once
/// into a CUDA graph and replayed with one launch per step; captured again when told that its
/// buffers moved (a new batch size).
///
/// @code
/// gpu::nn::captured_step step(stream, [&](gpu::stream_ref s) {
///     store.zero_grad(s);
///     // ... forward, loss, scaled backward ...
///     optimizer.step(store.master(), store.gradient(), scaler, s);
///     scaler.update(s);
///     store.refresh_working_copy(s);
/// });
/// for (const auto& batch : batches) {
///     x.buffer().copy_from_host_async(batch.pixels, stream);  // same buffer, new data
///     step.run();                 // 1st: eager; 2nd: capture + launch; then: launch
/// }
/// // the last batch is smaller: plan the layers again, make the buffers, then
/// step.invalidate();              // the next run warms up and captures again
/// @endcode
///
/// What the step may do is what a capture allows (docs/graphs.md): kernels, library calls and
/// stream-ordered copies on the stream it is given; no synchronisation, no `plan`, no reading a
/// value back. State that changes per step lives on the device (AdamW's step count, the
/// scaler's scale and flag), so the replays advance it. The addresses the step was captured
/// with are the ones every replay uses: put each batch into the same input buffers before
/// `run`, and after re-planning (which reallocates buffers) call `invalidate`.
#pragma once

#include <gpu/capture.hpp>
#include <gpu/graph.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <functional>

namespace gpu::nn {

/// @brief How a `captured_step` warms up and captures. Plain data.
struct captured_step_options {
    /// Eager runs before the first capture and after each `invalidate`: they let libraries do
    /// their first-use work (cuBLASLt's algorithm choice, lazy module loading) outside the
    /// capture. Each is a real step. 0 captures at the first `run`: only when the same objects
    /// already ran the step eagerly.
    int warmup_steps = 1;
    /// What the capture forbids in other threads (`gpu::capture_mode`).
    capture_mode mode = capture_mode::global;
};

/// @brief One step of work on one stream, replayed from a CUDA graph after its warm-up runs.
/// Neither copyable nor movable (hold it in a `std::unique_ptr` to pass it around).
///
/// Each `run` queues exactly one step on the stream and never synchronises the host: eagerly
/// (the work called) during warm-up, then by launching the graph. The first launch after a
/// warm-up captures the work first (the capture records, it does not run; the launch runs).
/// A re-capture after `invalidate` updates the instance in place when only addresses and sizes
/// changed (`graph_exec::update`), else instantiates it again.
///
/// Host-side decisions made while the work is captured are frozen into the graph: the grad
/// scaler's choice between checking and unscaling, the layers' plans, the hyperparameters
/// passed as kernel arguments (AdamW's `set_options` takes effect at the next capture:
/// `invalidate` after changing them). When the work throws during the capture, the capture is
/// ended (the stream stays usable), nothing of that step runs, the exception propagates and the
/// next `run` captures again; objects the work touched on the host before throwing (a scaler
/// that checked but did not update) are left as a throwing eager step leaves them.
class captured_step {
public:
    /// @brief The work of one step, queued on the stream it is given.
    using work_type = std::function<void(stream_ref)>;

    /// @brief A step of @p work on @p stream, not yet run.
    /// @param stream where every run queues the step, and which is captured; not the legacy
    /// default stream (CUDA cannot capture it)
    /// @param work the step; it must queue its work on the stream it is given
    /// @param options warm-up and capture mode
    /// @throws std::invalid_argument when @p stream is the legacy default stream, @p work is
    /// empty, or `warmup_steps` is negative (value named)
    captured_step(stream_ref stream, work_type work, const captured_step_options& options = {});

    /// @brief Queues one step on the stream: eager while warm-up runs remain, else (capturing
    /// first when needed) one graph launch.
    /// @throws whatever the work throws; gpu::cuda_error when the capture, the instantiation or
    /// the launch fails (an uncapturable call in the work: the error's hint names it)
    void run();

    /// @brief Makes the next runs warm up again (`warmup_steps`) and then capture again: call it
    /// after re-planning for another batch size, reallocating a buffer the step uses, or changing
    /// a hyperparameter that the captured kernels took by value. The current instance is kept
    /// to be updated in place.
    void invalidate() noexcept;

    /// @brief Whether the next `run` launches the graph without capturing first.
    [[nodiscard]] bool captured() const noexcept { return ready_; }
    /// @brief How many captures were made (the first one and each after `invalidate`).
    [[nodiscard]] std::size_t captures() const noexcept { return captures_; }
    /// @brief How many steps ran eagerly (warm-up runs).
    [[nodiscard]] std::size_t eager_runs() const noexcept { return eager_runs_; }
    /// @brief How many steps were launched from the graph.
    [[nodiscard]] std::size_t launches() const noexcept { return launches_; }
    /// @brief How the instance took the last re-capture (in place, or instantiated again, and
    /// why); `in_place` with no reason before any re-capture.
    [[nodiscard]] const graph_update_result& last_update() const noexcept { return last_update_; }
    /// @brief The stream the step runs on.
    [[nodiscard]] stream_ref stream() const noexcept { return stream_; }

    // Neither copied nor moved, like a capture scope: the work refers to objects by reference
    // and the graph to their addresses; make it where it lives, beside them.
    captured_step(const captured_step&) = delete;
    captured_step& operator=(const captured_step&) = delete;
    captured_step(captured_step&&) = delete;
    captured_step& operator=(captured_step&&) = delete;
    /// @brief Destroys the graph (a launch still running completes first).
    ~captured_step() = default;

private:
    void capture();

    stream_ref stream_;
    work_type work_;
    captured_step_options options_;
    graph_exec exec_;
    bool ready_ = false; // exec_ holds the current capture
    int warmups_left_ = 0;
    std::size_t captures_ = 0;
    std::size_t eager_runs_ = 0;
    std::size_t launches_ = 0;
    graph_update_result last_update_{};
};

} // namespace gpu::nn
