// The out-of-line part of streams: creation, which validates the priority and names the request
// in its errors. Every other stream operation is a one-call wrapper, inline in stream.hpp.
#include <gpu/stream.hpp>

#include <stdexcept>
#include <string>

namespace gpu {

namespace {

// What the user asked for, to put before the failing CUDA call: creating a stream runs a
// priority query first, and "cudaDeviceGetStreamPriorityRange failed" alone would not say that
// the failure was about making a stream.
[[noreturn]] void throw_creation_error(cudaError_t status, stream_flags flags, int priority,
                                       const char* call, std::source_location where)
{
    const std::string api = std::string("gpu::stream(") +
                            (flags == stream_flags::non_blocking ? "non_blocking" : "blocking") +
                            ", priority " + std::to_string(priority) + "): " + call;
    detail::throw_error(status, api.c_str(), where);
}

} // namespace

stream::stream(stream_flags flags, int priority, std::source_location where)
{
    // CUDA clamps an out-of-range priority silently; say so instead.
    stream_priority_range range;
    const cudaError_t queried = cudaDeviceGetStreamPriorityRange(&range.least, &range.greatest);
    if (queried != cudaSuccess) {
        throw_creation_error(queried, flags, priority, "cudaDeviceGetStreamPriorityRange", where);
    }
    if (priority > range.least || priority < range.greatest) {
        throw std::invalid_argument("gpu::stream: priority " + std::to_string(priority) +
                                    " is outside this device's range [" +
                                    std::to_string(range.greatest) + " (highest), " +
                                    std::to_string(range.least) + " (lowest)]");
    }
    cudaStream_t handle = nullptr;
    const cudaError_t created =
        cudaStreamCreateWithPriority(&handle, static_cast<unsigned>(flags), priority);
    if (created != cudaSuccess) {
        throw_creation_error(created, flags, priority, "cudaStreamCreateWithPriority", where);
    }
    handle_.reset(handle);
}

} // namespace gpu
