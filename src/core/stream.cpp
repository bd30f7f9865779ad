// The out-of-line parts of streams: creation, and waiting on events (which lets stream.hpp
// stay below event.hpp in the layering).
#include <gpu/event.hpp>
#include <gpu/stream.hpp>

#include <stdexcept>
#include <string>

namespace gpu {

void stream_ref::wait(event_ref event) const
{
    GPU_CUDA_CHECK(cudaStreamWaitEvent(handle_, event.get(), 0));
}

stream_priority_range stream_priorities()
{
    stream_priority_range range;
    GPU_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&range.least, &range.greatest));
    return range;
}

stream::stream(stream_flags flags, int priority)
{
    // CUDA clamps an out-of-range priority silently; say so instead.
    const stream_priority_range range = stream_priorities();
    if (priority > range.least || priority < range.greatest) {
        throw std::invalid_argument("gpu::stream: priority " + std::to_string(priority) +
                                    " is outside this device's range [" +
                                    std::to_string(range.greatest) + " (highest), " +
                                    std::to_string(range.least) + " (lowest)]");
    }
    cudaStream_t handle = nullptr;
    GPU_CUDA_CHECK(cudaStreamCreateWithPriority(&handle, static_cast<unsigned>(flags), priority));
    handle_.reset(handle);
}

stream_ref stream::ref() const
{
    if (!handle_) {
        throw std::logic_error("gpu::stream: used after it was moved from or released (it holds "
                               "no stream; a null handle would silently mean the default stream)");
    }
    return stream_ref(handle_.get());
}

void stream::wait(event_ref event) const { ref().wait(event); }

int stream::priority() const
{
    int value = 0;
    GPU_CUDA_CHECK(cudaStreamGetPriority(ref().get(), &value));
    return value;
}

stream_flags stream::flags() const
{
    unsigned value = 0;
    GPU_CUDA_CHECK(cudaStreamGetFlags(ref().get(), &value));
    return static_cast<stream_flags>(value & cudaStreamNonBlocking);
}

} // namespace gpu
