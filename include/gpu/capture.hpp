/// @file capture.hpp
/// @brief Capturing a stream's work into a CUDA graph: the RAII `capture_scope`, the one-call
/// `capture`, and the query `is_capturing` for code that must not synchronise during a capture.
///
/// Between the start and the end of a capture, work queued on the stream is recorded, not run.
/// What may be queued: kernel launches, `cudaMemcpyAsync`/`cudaMemsetAsync` between device
/// memory or pinned host memory, stream-ordered allocations (`cudaMallocAsync`,
/// `gpu::device_buffer` made on the capturing stream, which becomes an allocation node of the
/// graph), cuBLAS and cuDNN calls on the stream (`gpu::blas::gemm`, `gpu::dnn::convolution`
/// with a profile without `synchronous_checks` and `check_numerics`), event records and waits
/// that fork other streams into the capture and join them back. What breaks a capture: any
/// call that synchronises (`cudaStreamSynchronize`, `gpu::stream::synchronize`,
/// `device_buffer::copy_to_host`, `to_host`, `from_host`, `fill_zero`, `gpu::check_finite`,
/// plain `cudaMemcpy`), an allocation that is not stream-ordered (`cudaMalloc`, `cudaFree`,
/// `cudaMallocHost`), work on the legacy default stream, and waiting on an event recorded
/// outside the capture. The failing call throws a `gpu::cuda_error` whose hint names these, and
/// the capture is then invalidated: `capture_scope::end` says so.
///
/// @code
/// gpu::graph g = gpu::capture(stream, [&](gpu::stream_ref s) {
///     gpu::device_buffer<float> scratch(n, s);   // an allocation node, freed in the graph
///     gpu::blas::gemm(blas, a, b, c);            // blas is a handle bound to s
/// });
/// @endcode
#pragma once

#include <gpu/graph.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <functional>
#include <source_location>
#include <string_view>

namespace gpu {

/// @brief Which CUDA calls a capture forbids in other code while it runs
/// (`cudaStreamCaptureMode`). The forbidden calls are those that might synchronise with the
/// captured work or allocate outside stream order (`cudaMalloc`, a synchronous `cudaMemcpy`):
/// made while a capture they could disturb is running, they fail with
/// `cudaErrorStreamCaptureUnsupported` and invalidate it.
enum class capture_mode {
    /// Forbidden in every thread while this capture runs (unless that thread chose `relaxed`
    /// with `cudaThreadExchangeStreamCaptureMode`). The safest, and the default here as in
    /// PyTorch (`torch.cuda.graph(capture_error_mode="global")`): a `cudaMalloc` in another
    /// thread fails loudly instead of silently racing with the capture.
    global = cudaStreamCaptureModeGlobal,
    /// Forbidden only in the thread that began the capture: for programs whose other threads
    /// keep allocating and synchronising their own streams during the capture.
    per_thread = cudaStreamCaptureModeThreadLocal,
    /// Not forbidden at all; the caller makes sure nothing unsafe runs. Also the only mode
    /// whose capture may end in another thread than the one that began it.
    relaxed = cudaStreamCaptureModeRelaxed,
};

/// @brief Whether a stream is being captured (`cudaStreamCaptureStatus`).
enum class capture_status {
    none = cudaStreamCaptureStatusNone,     ///< not capturing: work runs when queued
    active = cudaStreamCaptureStatusActive, ///< capturing: work is recorded, not run
    /// Was capturing, until a call that cannot be captured invalidated it; the capture must
    /// still be ended (`capture_scope` does) before the stream can run work again.
    invalidated = cudaStreamCaptureStatusInvalidated,
};

/// @brief The capture status of @p stream (`cudaStreamIsCapturing`); never synchronises, so it
/// is what code that might run during a capture asks before it synchronises.
/// @throws gpu::cuda_error when CUDA fails, e.g. `cudaErrorStreamCaptureImplicit` when
/// @p stream is the legacy default stream while a blocking stream is being captured
[[nodiscard]] capture_status capture_status_of(stream_ref stream);

/// @brief Whether @p stream is being captured into a graph: `capture_status_of(stream)` is
/// `active` or `invalidated` (either way, synchronising it now is an error).
/// @throws gpu::cuda_error as `capture_status_of`
[[nodiscard]] inline bool is_capturing(stream_ref stream)
{
    return capture_status_of(stream) != capture_status::none;
}

/// @brief The name of a capture mode, e.g. `global`.
[[nodiscard]] std::string_view to_string(capture_mode mode) noexcept;

/// @brief The name of a capture status, e.g. `invalidated`.
[[nodiscard]] std::string_view to_string(capture_status status) noexcept;

/// @brief Captures the work queued on one stream into a `graph`, from construction to `end()`;
/// ends the capture on every path. Neither copyable nor movable: a scope, like
/// `std::lock_guard`.
///
/// When the scope is left without `end()` (an exception, an early return), the destructor ends
/// the capture and destroys the partial graph, so the stream runs work again afterwards instead
/// of staying in capture mode; it never throws. In `global` and `per_thread` modes the capture
/// must end in the thread that began it: keep the scope in one thread.
///
/// @code
/// gpu::graph g;
/// {
///     gpu::capture_scope scope(stream);
///     step(stream);                  // throws? the capture ends, the stream stays usable
///     g = scope.end();
/// }
/// @endcode
class capture_scope {
public:
    /// @brief Begins capturing @p stream (`cudaStreamBeginCapture`).
    /// @param stream the stream whose work to record; not the legacy default stream, which
    /// CUDA cannot capture (create a `gpu::stream`)
    /// @param mode which unsafe calls the capture forbids in other code (see `capture_mode`)
    /// @param where the caller's source location, for errors
    /// @throws std::invalid_argument when @p stream is the legacy default stream or @p mode is
    /// not a `capture_mode`
    /// @throws gpu::cuda_error when CUDA cannot begin the capture (no driver, a destroyed
    /// stream, a stream that is already capturing)
    explicit capture_scope(stream_ref stream, capture_mode mode = capture_mode::global,
                           std::source_location where = std::source_location::current());

    /// @brief Ends the capture (`cudaStreamEndCapture`) and returns what it recorded.
    /// @param where the caller's source location, for errors
    /// @throws std::logic_error when the capture was already ended
    /// @throws gpu::cuda_error when the capture was invalidated
    /// (`cudaErrorStreamCaptureInvalidated`: the error says so and its hint names the kinds of
    /// call that invalidate a capture), a stream forked into it was not joined back
    /// (`cudaErrorStreamCaptureUnjoined`), or it ends in another thread than it began
    /// (`cudaErrorStreamCaptureWrongThread`). Except in that last case the stream has left
    /// capture mode, and the partial graph is gone.
    [[nodiscard]] graph end(std::source_location where = std::source_location::current());

    /// @brief The stream being captured.
    [[nodiscard]] stream_ref stream() const noexcept { return stream_; }

    /// @brief The mode the capture was begun with.
    [[nodiscard]] capture_mode mode() const noexcept { return mode_; }

    /// @brief Whether the capture still has to be ended (false after `end()`).
    [[nodiscard]] bool active() const noexcept { return active_; }

    capture_scope(const capture_scope&) = delete;
    capture_scope& operator=(const capture_scope&) = delete;
    capture_scope(capture_scope&&) = delete;
    capture_scope& operator=(capture_scope&&) = delete;

    /// @brief Ends a capture that `end()` did not, and destroys what it recorded; never throws.
    /// @post the stream is not capturing (unless the scope is destroyed in another thread than
    /// the one that began a `global` or `per_thread` capture, which CUDA refuses)
    ~capture_scope();

private:
    stream_ref stream_;
    capture_mode mode_;
    bool active_ = false;
};

/// @brief Captures what @p work queues on @p stream into a graph: a `capture_scope` around
/// `work(stream)`, ended when @p work returns and on every path out of it. What @p work
/// allocates without a tag of its own is counted in the ledger under graph pools.
/// @param stream the stream to capture; @p work queues its work there
/// @param work called once as `work(stream)`
/// @param mode which unsafe calls the capture forbids in other code (see `capture_mode`)
/// @param where the caller's source location, for errors
/// @return the recorded work, to instantiate as a `graph_exec`
/// @throws whatever @p work throws (the capture is then ended and its partial graph destroyed)
/// @throws as `capture_scope` and `capture_scope::end`
template <class Work>
requires std::invocable<Work&, stream_ref>
[[nodiscard]] graph capture(stream_ref stream, Work&& work,
                            capture_mode mode = capture_mode::global,
                            std::source_location where = std::source_location::current())
{
    capture_scope scope(stream, mode, where);
    // What the work allocates becomes the graph's (allocation nodes in its memory): the ledger
    // counts it as graph pools unless an allocation names its own tag.
    const memory_tag_scope tagged(memory_tag::standard(memory_category::graph_pool), where);
    std::invoke(work, stream);
    return scope.end(where);
}

namespace detail {
/// @brief Throws `std::logic_error` when an owner that moves its workspace from stream @p from
/// to stream @p to (the new stream waits on an event recorded on the old one) would make a
/// capturing stream wait for work outside its capture, which invalidates the capture
/// (`cudaErrorStreamCaptureIsolation`). The message names @p function and says to bind the
/// owner to the capturing stream before the capture begins. Two `cudaStreamIsCapturing` calls:
/// what an owner calls when its stream changes, not per call.
/// @throws gpu::cuda_error when a capture status cannot be read
void refuse_joining_a_capture(stream_ref from, stream_ref to, std::string_view function);
} // namespace detail

} // namespace gpu
