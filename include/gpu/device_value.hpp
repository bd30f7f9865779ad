/// @file device_value.hpp
/// @brief `read_device_value`: one value of device memory, read on demand.
#pragma once

#include <gpu/error.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <stdexcept>
#include <type_traits>

namespace gpu {

/// @brief Reads one value of device memory: copies the @p T at @p source to the host on
/// @p stream and waits for it. What reading a device-resident scalar on demand takes (a step
/// count, a flag, a loss). It synchronises @p stream, so it is not for use inside a capture.
/// @throws std::invalid_argument for a null @p source
/// @throws gpu::cuda_error from the copy or the synchronisation
template <class T>
[[nodiscard]] T read_device_value(const T* source, stream_ref stream)
{
    static_assert(std::is_trivially_copyable_v<T>,
                  "read_device_value reads trivially copyable types");
    if (source == nullptr) {
        throw std::invalid_argument("gpu::read_device_value: null source");
    }
    T value{};
    GPU_CUDA_CHECK(
        cudaMemcpyAsync(&value, source, sizeof value, cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    return value;
}

} // namespace gpu
