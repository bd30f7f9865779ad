// The per-call debug checks of every library wrapper: the refusal of a synchronising call during a
// capture, in one wording, and what synchronous_checks and check_numerics do after a call.
#include <gpu/call_checks.hpp>
#include <gpu/capture.hpp>
#include <gpu/error.hpp>

#include <cuda_runtime_api.h>

#include <source_location>
#include <stdexcept>
#include <string>

namespace gpu::detail {

namespace {

[[noreturn]] void throw_capture_refusal(std::string_view operation, std::string_view synchronises,
                                        std::string_view instead)
{
    std::string message(operation);
    message += ": the stream is being captured into a CUDA graph, and ";
    message += synchronises;
    message += ", which would invalidate the capture: ";
    message += instead;
    throw std::logic_error(message);
}

} // namespace

void refuse_while_capturing(stream_ref stream, std::string_view operation,
                            std::string_view synchronises, std::string_view instead)
{
    if (is_capturing(stream)) {
        throw_capture_refusal(operation, synchronises, instead);
    }
}

checked_call::checked_call(call_checks checks, stream_ref stream, std::string_view operation,
                           std::optional<int> device)
    : checks_(checks), stream_(stream), operation_(operation), device_(device)
{
    // Both switches off: no CUDA call at all, so a call without checks costs nothing here.
    if (!checks_.any() || !is_capturing(stream_)) {
        return;
    }
    const std::string option = checks_.synchronous_checks ? "synchronous_checks" : "check_numerics";
    throw_capture_refusal(operation_, option + " synchronises it after the call",
                          "use a profile without " + option +
                              " while capturing (gpu::profile::production() or defaults()), or "
                              "turn it off on the handle or plan");
}

void checked_call::synchronise() const
{
    // A failure already known when the work was queued, then one of the work as it ran: both
    // are reported here, at the call that queued the work.
    const cudaError_t queued = cudaGetLastError();
    if (queued != cudaSuccess) {
        const std::string api = std::string(operation_) + ": the work it queued (cudaGetLastError)";
        throw_error(queued, api.c_str(), std::source_location::current());
    }
    const cudaError_t ran = cudaStreamSynchronize(stream_.get());
    if (ran != cudaSuccess) {
        const std::string api =
            std::string(operation_) + ": cudaStreamSynchronize after the call (synchronous_checks)";
        throw_error(ran, api.c_str(), std::source_location::current());
    }
}

void checked_call::throw_non_finite(const non_finite_report& report,
                                    const std::string& context) const
{
    throw numerics_error(std::string(operation_) + " (" + context + ")", report, device_);
}

} // namespace gpu::detail
