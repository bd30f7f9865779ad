// The compiled parts of the adaptors: their errors, and the reclaim step of the out-of-memory
// retry (wait for the device, trim its pool).
#include <gpu/memory_tag.hpp>
#include <gpu/resource_adaptors.hpp>

#include <cuda_runtime_api.h>

#include <string>

namespace gpu {
namespace detail {

void throw_limit_reached(std::size_t requested_bytes, std::size_t used_bytes,
                         std::size_t limit_bytes, int device)
{
    throw out_of_memory("gpu::limiting_adaptor::allocate: the limit of " +
                            format_bytes(limit_bytes) + " would be passed (" +
                            format_bytes(used_bytes) + " handed out)",
                        requested_bytes, limit_bytes - used_bytes, limit_bytes, device,
                        allocation_site_or(std::source_location::current()));
}

void throw_after_retry(const out_of_memory& failed, std::string_view how)
{
    throw out_of_memory(failed.api() + ", retried after " + std::string(how),
                        failed.requested_bytes(), failed.free_bytes(), failed.total_bytes(),
                        failed.device(), failed.where());
}

} // namespace detail

bool synchronize_and_trim::operator()(stream_ref stream) const
{
    // The failed allocation left its status as the last error: clear it, so that the calls
    // below report their own.
    static_cast<void>(cudaGetLastError());
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream.get(), &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone) {
        static_cast<void>(cudaGetLastError());
        return false; // synchronising would invalidate the capture
    }
    // On the resource's device; the caller's current device comes back with the guard.
    const int id = device_.id();
    const scoped_device on(device_, std::nothrow);
    cudaMemPool_t pool = pool_;
    cudaError_t synced = cudaErrorInvalidDevice;
    // Frees queued with cudaFreeAsync count as used for cudaMemPoolTrimTo until the host has
    // seen them complete: synchronise first.
    const bool ok = on.status() == cudaSuccess &&
                    (synced = cudaDeviceSynchronize()) == cudaSuccess &&
                    (pool != nullptr || cudaDeviceGetMemPool(&pool, id) == cudaSuccess) &&
                    cudaMemPoolTrimTo(pool, 0) == cudaSuccess;
    if (is_sticky(synced)) {
        detail::throw_error(synced, "cudaDeviceSynchronize (before retrying an allocation)",
                            std::source_location::current());
    }
    if (!ok) {
        static_cast<void>(cudaGetLastError());
    }
    return ok;
}

} // namespace gpu
