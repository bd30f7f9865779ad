// Stream capture: the scope that ends a capture on every path, the capture status query, the
// refusal of a stream change that would join a capture, and the hints for the statuses that
// capture produces (which gpu::hint_for gives through capture_hints.hpp).
#include "capture_hints.hpp"

#include <gpu/capture.hpp>
#include <gpu/detail/enum_names.hpp>
#include <gpu/detail/expects.hpp>

#include <stdexcept>
#include <string>

namespace gpu {

namespace {

// What invalidates a capture, named once for the hints that list it.
constexpr const char* not_capturable =
    "a call that synchronises (cudaStreamSynchronize, cudaDeviceSynchronize, "
    "cudaEventSynchronize, cudaStreamQuery, cudaMemcpy or cudaMemset without Async; in cudagap "
    "gpu::stream::synchronize, device_buffer::copy_to_host, to_host, from_host and fill_zero, "
    "gpu::check_finite, a profile's synchronous_checks or check_numerics), an allocation that is "
    "not stream-ordered (cudaMalloc, cudaFree, cudaFreeHost: use cudaMallocAsync and "
    "cudaFreeAsync, or a gpu::device_buffer made on the capturing stream), a copy to or from "
    "pageable host memory (use a gpu::pinned_buffer), work on the legacy default stream, or a "
    "wait on an event recorded outside the capture";

std::string unsupported_hint()
{
    return std::string("this call is not allowed while a stream is being captured into a CUDA "
                       "graph (gpu::is_capturing tells): it is ") +
           not_capturable +
           ". It has invalidated the capture (gpu::capture_scope ends it). Inside a capture "
           "queue only stream-ordered work on the capturing stream (kernels, cudaMemcpyAsync, "
           "cudaMemsetAsync, a gpu::device_buffer made on that stream, library calls on a "
           "handle bound to it) and synchronise after launching the graph. In "
           "gpu::capture_mode::global such a call in another thread fails too: capture with "
           "gpu::capture_mode::per_thread when other threads must go on allocating";
}

std::string invalidated_hint()
{
    return std::string("the capture was invalidated by an earlier call that cannot be captured, "
                       "which failed with its own error (usually "
                       "cudaErrorStreamCaptureUnsupported) that was caught or ignored: ") +
           not_capturable +
           ". Nothing recorded can be used: end the capture (gpu::capture_scope does), move "
           "that call out of the captured work, and capture again";
}

} // namespace

namespace detail {

std::string capture_hint(cudaError_t status)
{
    switch (status) {
    case cudaErrorStreamCaptureUnsupported: return unsupported_hint();
    case cudaErrorStreamCaptureInvalidated: return invalidated_hint();
    case cudaErrorStreamCaptureMerge:
        return "two independent captures would merge: a stream of one capture waited on an "
               "event recorded in another; capture each graph on streams of its own, forking "
               "extra streams from the capturing stream with an event";
    case cudaErrorStreamCaptureUnmatched:
        return "this stream ends a capture it did not begin: end each capture on the stream that "
               "began it (gpu::capture_scope does); streams forked into a capture are joined back "
               "with an event, not ended";
    case cudaErrorStreamCaptureUnjoined:
        return "a stream forked into the capture (it waited on an event recorded on the "
               "capturing stream) has captured work that the capturing stream never waited for: "
               "record an event on that stream after its last work and make the capturing "
               "stream wait on it (gpu::stream::wait) before ending the capture";
    case cudaErrorStreamCaptureIsolation:
        return "a dependency would cross the capture's boundary: captured work waited on an "
               "event recorded outside the capture (before it began, or on a stream that is not "
               "being captured), or outside work waited on captured work; record the events a "
               "capture waits on inside it, and wait for outside work before the capture begins "
               "(or, in raw CUDA, wait with cudaEventWaitExternal, which captures the wait as a "
               "node)";
    case cudaErrorStreamCaptureImplicit:
        return "the legacy default stream would wait on a capturing stream: while a blocking "
               "stream (gpu::stream_flags::blocking, the default) is being captured, nothing may "
               "run on the legacy default stream (gpu::legacy_default_stream, cudaMemcpy or "
               "cudaMemset without a stream, a kernel launched without one, a library handle "
               "left on stream 0); queue that work on the capturing stream, or capture a stream "
               "made with gpu::stream_flags::non_blocking";
    case cudaErrorCapturedEvent:
        return "the event was last recorded during a capture, so it marks a point in a graph, "
               "not in time: querying, synchronising or timing it (cudaEventQuery, "
               "cudaEventSynchronize, cudaEventElapsedTime; gpu::event::is_ready, synchronize, "
               "gpu::elapsed) is refused until it is recorded again outside the capture; to time "
               "a graph, record events around graph_exec::launch";
    case cudaErrorStreamCaptureWrongThread:
        return "a capture begun in gpu::capture_mode::global or per_thread must end in the "
               "thread that began it: keep the gpu::capture_scope in one thread, or begin the "
               "capture with gpu::capture_mode::relaxed";
    case cudaErrorGraphExecUpdateFailure:
        return "the graph differs from the instance in a way cudaGraphExecUpdate cannot apply in "
               "place (the topology, a node's type or its kernel changed): instantiate it again; "
               "gpu::graph_exec::update does that on its own";
    case cudaErrorNotPermitted:
        return "the operation is not permitted in the current state; when a stream is being "
               "captured into a CUDA graph (gpu::is_capturing tells), this is what some calls "
               "that cannot be captured return: move the call out of the captured work and "
               "synchronise after launching the graph";
    default: return {};
    }
}

void refuse_joining_a_capture(stream_ref from, stream_ref to, std::string_view function)
{
    if (!is_capturing(to) || is_capturing(from)) {
        return;
    }
    throw std::logic_error(std::string(function) +
                           ": the new stream is being captured into a CUDA "
                           "graph and the old one is not; moving the workspace would make the "
                           "capture wait for work outside it, which invalidates the capture: bind "
                           "the handle to the capturing stream before the capture begins (run one "
                           "eager step on it first)");
}

} // namespace detail

capture_status capture_status_of(stream_ref stream)
{
    cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
    GPU_CUDA_CHECK(cudaStreamIsCapturing(stream.get(), &status));
    return static_cast<capture_status>(status);
}

constexpr gpu::detail::enum_name<capture_mode> capture_mode_names[] = {
    {capture_mode::global, "global"},
    {capture_mode::per_thread, "per_thread"},
    {capture_mode::relaxed, "relaxed"}};
std::string_view to_string(capture_mode mode) noexcept
{
    return gpu::detail::name_of(capture_mode_names, mode);
}

constexpr gpu::detail::enum_name<capture_status> capture_status_names[] = {
    {capture_status::none, "none"},
    {capture_status::active, "active"},
    {capture_status::invalidated, "invalidated"}};
std::string_view to_string(capture_status status) noexcept
{
    return gpu::detail::name_of(capture_status_names, status);
}

capture_scope::capture_scope(stream_ref stream, capture_mode mode, std::source_location where)
    : stream_(stream), mode_(mode)
{
    // CUDA refuses both spellings of the legacy stream, but only inside the call and with a
    // status that does not say why.
    GPU_EXPECTS(stream.get() != nullptr && stream.get() != cudaStreamLegacy, std::invalid_argument,
                "gpu::capture_scope: the legacy default stream cannot be captured into a graph; "
                "capture a gpu::stream");
    GPU_EXPECTS(detail::is_named(capture_mode_names, mode), std::invalid_argument,
                "gpu::capture_scope: ", static_cast<int>(mode), " is not a gpu::capture_mode");
    const cudaError_t status =
        cudaStreamBeginCapture(stream.get(), static_cast<cudaStreamCaptureMode>(mode));
    if (status != cudaSuccess) {
        const std::string api = "gpu::capture_scope(" + std::string(to_string(mode)) +
                                "): cudaStreamBeginCapture(stream, mode)";
        detail::throw_error(status, api.c_str(), where);
    }
    active_ = true;
}

graph capture_scope::end(std::source_location where)
{
    GPU_EXPECTS(
        active_, std::logic_error,
        "gpu::capture_scope::end: the capture was already ended; end() returns its graph once");
    cudaGraph_t recorded = nullptr;
    const cudaError_t status = cudaStreamEndCapture(stream_.get(), &recorded);
    graph result = graph::from_native_handle(recorded); // owns a partial graph, if any, from here
    active_ = false;
    if (status != cudaSuccess) {
        // An invalidated capture has ended; one ended from the wrong thread has not. Ask rather
        // than guess for the other statuses, so that the destructor tries again only when the
        // stream really is still capturing.
        cudaStreamCaptureStatus still = cudaStreamCaptureStatusNone;
        active_ = cudaStreamIsCapturing(stream_.get(), &still) == cudaSuccess &&
                  still != cudaStreamCaptureStatusNone;
    }
    if (status == cudaErrorStreamCaptureInvalidated) {
        detail::throw_error(status,
                            "gpu::capture_scope::end: cudaStreamEndCapture (the capture was "
                            "invalidated by an earlier call that cannot be captured)",
                            where);
    }
    if (status != cudaSuccess) {
        detail::throw_error(status, "gpu::capture_scope::end: cudaStreamEndCapture", where);
    }
    return result;
}

capture_scope::~capture_scope()
{
    if (!active_) {
        return;
    }
    // Left without end(): an exception or an early return. End the capture so that the stream
    // runs work again, and drop what was recorded. Whatever failed inside the capture has been
    // reported by its own call; the status here (often "invalidated") adds nothing, and a
    // destructor must not throw.
    cudaGraph_t recorded = nullptr;
    const cudaError_t status = cudaStreamEndCapture(stream_.get(), &recorded);
    if (recorded != nullptr) {
        detail::report_destroy_failure("cudaGraphDestroy", cudaGraphDestroy(recorded));
    }
    if (status == cudaErrorStreamCaptureWrongThread) {
        // The one failure that leaves the stream stuck in capture mode: say so, once.
        detail::report_destroy_failure("cudaStreamEndCapture (in ~capture_scope, another thread "
                                       "than the one that began the capture)",
                                       status);
    } else if (status != cudaSuccess && !is_sticky(status)) {
        static_cast<void>(cudaGetLastError());
    }
}

} // namespace gpu
