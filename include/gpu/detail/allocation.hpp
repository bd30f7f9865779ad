/// @file allocation.hpp
/// @brief The allocation records and functions under `device_buffer` and `pinned_buffer`.
#pragma once

#include <gpu/error.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <source_location>

namespace gpu {

namespace detail {

/// @brief One device allocation as `device_buffer` owns it; all of its state, so that moving the
/// buffer is moving this value.
struct allocation {
    void* pointer = nullptr;       ///< device address
    std::size_t bytes = 0;         ///< size in bytes
    cudaStream_t stream = nullptr; ///< the stream it is ordered on (freed there)
    bool pooled = false;           ///< from `cudaMallocAsync` (else `cudaMalloc`)
    int device = -1;               ///< the device it lives on (-1: nothing allocated)

    friend bool operator==(const allocation&, const allocation&) = default;
};

/// @brief Allocates @p bytes on @p stream's device, ordered on @p stream; counts the bytes.
///
/// The device is the stream's (`cudaStreamGetDevice`; the current device for the legacy default
/// stream), never "whatever is current": the allocation, its retry and its free run with that
/// device current through `gpu::scoped_device`, and the caller's device is restored.
/// 0 bytes allocate nothing and make no CUDA call, but the result still names @p stream, so that
/// an empty buffer's work (none) and its successors stay on the stream it was made for.
/// A pooled allocation that fails is retried once, after waiting for the device (frees queued
/// on other streams return their blocks) and trimming the pool it came from (its cached,
/// unused memory goes back to the device): unless the stream is being captured into a graph.
/// @throws gpu::out_of_memory with requested, free and total bytes when the device is full
/// (the numbers are read after the trim)
[[nodiscard]] allocation allocate(std::size_t bytes, stream_ref stream, std::source_location where);

/// @brief Frees an allocation on its stream, with its device current; failures are reported,
/// never thrown.
void deallocate(const allocation& block) noexcept;

/// @brief Stops counting an allocation whose ownership left cudagap (`release()`).
void forget_allocation(const allocation& block) noexcept;

/// @brief Frees through `deallocate`.
struct allocation_deleter {
    void operator()(const allocation& block) const noexcept { deallocate(block); }
};

/// @brief Throws `std::invalid_argument` naming the operation and both element counts.
[[noreturn]] void throw_size_mismatch(const char* operation, std::size_t buffer_elements,
                                      std::size_t other_elements);

/// @brief Throws `std::invalid_argument` for a size whose byte count overflows.
[[noreturn]] void throw_size_overflow(const char* operation, std::size_t elements,
                                      std::size_t element_size);

/// @brief `count * size`, or the overflow error.
[[nodiscard]] inline std::size_t checked_bytes(const char* operation, std::size_t count,
                                               std::size_t size)
{
    if (size != 0 && count > static_cast<std::size_t>(-1) / size) {
        throw_size_overflow(operation, count, size);
    }
    return count * size;
}

/// @brief Page-locks @p bytes of host memory for `pinned_buffer`.
/// @throws gpu::cuda_error when CUDA is unavailable or the host cannot lock that much; a failed
/// lock is `cudaErrorMemoryAllocation` with a hint about host memory, never a
/// `gpu::out_of_memory` (whose numbers are the device's)
[[nodiscard]] void* allocate_pinned(std::size_t bytes, std::source_location where);

/// @brief Throws the error for a page-locked allocation of @p requested_bytes that failed with
/// @p status (what `allocate_pinned` does on failure).
[[noreturn]] void throw_pinned_allocation_failure(cudaError_t status, const char* api,
                                                  std::size_t requested_bytes,
                                                  std::source_location where);

/// @brief Page-locked host memory as `pinned_buffer` owns it.
struct pinned_allocation {
    void* pointer = nullptr; ///< host address
    std::size_t bytes = 0;   ///< size in bytes

    friend bool operator==(const pinned_allocation&, const pinned_allocation&) = default;
};

/// @brief Frees page-locked memory; failures are reported, never thrown.
struct pinned_deleter {
    void operator()(const pinned_allocation& block) const noexcept
    {
        report_destroy_failure("cudaFreeHost", cudaFreeHost(block.pointer));
    }
};

} // namespace detail

} // namespace gpu
