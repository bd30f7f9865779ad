/// @file peer_copy.hpp
/// @brief `copy_peer_async`: a stream-ordered copy between device buffers on two devices.
#pragma once

#include <gpu/detail/allocation.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/error.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

namespace gpu {

/// @brief Queues a copy of @p source (on its device) into @p destination (on its device) on
/// @p stream (`cudaMemcpyPeerAsync`). Each buffer's recorded device is used, whatever device is
/// current.
///
/// The copy goes straight over NVLink or PCIe when the devices have peer access
/// (`device::can_access_peer`; enabling it with `device::enable_peer_access` is what lets the
/// driver use the direct path), and is staged through host memory otherwise: it is correct
/// either way. Both buffers must stay alive until @p stream has reached the copy; order work on
/// other streams that reads or writes them with events. Two buffers on one device are copied too.
/// @throws std::invalid_argument when the sizes differ (both are named; nothing is copied)
/// @throws gpu::cuda_error when CUDA refuses the copy
template <class T>
void copy_peer_async(device_buffer<T>& destination, const device_buffer<T>& source,
                     stream_ref stream)
{
    if (destination.size() != source.size()) {
        detail::throw_size_mismatch("gpu::copy_peer_async", destination.size(), source.size());
    }
    if (destination.empty()) {
        return;
    }
    GPU_CUDA_CHECK(cudaMemcpyPeerAsync(destination.data(), destination.device().id(), source.data(),
                                       source.device().id(), source.size_bytes(), stream.get()));
}

} // namespace gpu
