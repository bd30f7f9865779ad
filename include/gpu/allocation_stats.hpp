/// @file allocation_stats.hpp
/// @brief The byte counters of what cudagap has allocated on the devices.
#pragma once

#include <cstddef>

namespace gpu {

/// @brief What `device_buffer` has allocated in this process, in bytes, on all devices.
///
/// These count only cudagap's own allocations (PyTorch's `memory_allocated` idea); the device's
/// view, which includes other processes, the driver and the pool's cache, is `device::memory()`.
struct allocation_stats {
    std::size_t current_bytes = 0;     ///< held by live buffers now
    std::size_t peak_bytes = 0;        ///< the most held at once since start or the last reset
    std::size_t live_allocations = 0;  ///< buffers alive now
    std::size_t total_allocations = 0; ///< allocations made since start
};

/// @brief The counters of cudagap's device allocations. Thread-safe, never throws.
[[nodiscard]] allocation_stats allocation_statistics() noexcept;

/// @brief Restarts the peak from the current byte count.
void reset_peak_allocation() noexcept;

} // namespace gpu
