// The out-of-line part of streams: creation on a named or the current device, which validates
// the priority and names the request in its errors. Every other stream operation is a one-call
// wrapper, inline in stream.hpp.
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
    int current = -1;
    const cudaError_t got = cudaGetDevice(&current);
    if (got != cudaSuccess) {
        throw_creation_error(got, flags, priority, "cudaGetDevice", where);
    }
    handle_.reset(create(current, flags, priority, where));
    device_ = current;
}

stream::stream(gpu::device dev, stream_flags flags, int priority, std::source_location where)
{
    handle_.reset(create(dev.id(), flags, priority, where));
    device_ = dev.id();
}

cudaStream_t stream::create(int device, stream_flags flags, int priority,
                            std::source_location where)
{
    // A stream belongs to the device current when it is made, and the priority range is that
    // device's: both run with it current, and the caller's device comes back after.
    const scoped_device on(detail::device_from_cuda(device), std::nothrow);
    if (on.status() != cudaSuccess) {
        throw_creation_error(on.status(), flags, priority, "cudaSetDevice", where);
    }
    // CUDA clamps an out-of-range priority silently; say so instead.
    stream_priority_range range;
    const cudaError_t queried = cudaDeviceGetStreamPriorityRange(&range.least, &range.greatest);
    if (queried != cudaSuccess) {
        throw_creation_error(queried, flags, priority, "cudaDeviceGetStreamPriorityRange", where);
    }
    if (priority > range.least || priority < range.greatest) {
        throw std::invalid_argument("gpu::stream: priority " + std::to_string(priority) +
                                    " is outside device " + std::to_string(device) + "'s range [" +
                                    std::to_string(range.greatest) + " (highest), " +
                                    std::to_string(range.least) + " (lowest)]");
    }
    cudaStream_t handle = nullptr;
    const cudaError_t created =
        cudaStreamCreateWithPriority(&handle, static_cast<unsigned>(flags), priority);
    if (created != cudaSuccess) {
        throw_creation_error(created, flags, priority, "cudaStreamCreateWithPriority", where);
    }
    return handle;
}

} // namespace gpu
