/// @file allocation.hpp
/// @brief The allocation records and functions under `device_buffer` and `pinned_buffer`.
#pragma once

#include <gpu/error.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <source_location>

namespace gpu {

namespace detail {

/// @brief One device allocation as `device_buffer` owns it; all of its state, so that moving the
/// buffer is moving this value. The resource it came from frees it: a record knows its own way
/// back, whatever resource allocated it.
struct allocation {
    void* pointer = nullptr;       ///< device address
    std::size_t bytes = 0;         ///< size in bytes
    cudaStream_t stream = nullptr; ///< the stream it is ordered on (freed there)
    /// @brief What allocated it and frees it (`no_resource()` for a record holding nothing).
    device_resource_ref resource = no_resource();
    int device = -1; ///< the device it lives on: the stream's (-1: nothing allocated)

    friend bool operator==(const allocation&, const allocation&) = default;
};

/// @brief Allocates @p bytes on @p stream's device from @p resource, ordered on @p stream, under
/// @p tag; counts the bytes in `allocation_statistics()`.
///
/// The device is the stream's (`stream_ref::device`; the current device for the legacy default
/// stream), never "whatever is current": the allocation and its free run with that device
/// current through `gpu::scoped_device`, and the caller's device is restored. Without a
/// resource, the device's default (`default_device_resource`: the ledger over the
/// out-of-memory retry over the device's pool). Without a tag, the calling thread's
/// (`current_memory_tag`). The allocation runs inside a `memory_tag_scope` of the tag and
/// @p where, so that the ledger records the tag and an error names the caller.
/// 0 bytes allocate nothing and make no CUDA call, but the result still names @p stream (and
/// the resource given, if any), so that an empty buffer's work (none) and its successors stay
/// on the stream it was made for. Nothing is retried here: a retry is the resource's choice
/// (`gpu::oom_retry_adaptor`, part of the default).
/// @throws gpu::out_of_memory (with requested, free and total bytes, and who holds the device)
/// when the resource has no room
[[nodiscard]] allocation allocate(std::size_t bytes, stream_ref stream,
                                  std::optional<device_resource_ref> resource,
                                  std::optional<memory_tag> tag, std::source_location where);

/// @brief Whether @p block came from its device's default resource on a device with memory
/// pools (`device_buffer::is_pooled`).
[[nodiscard]] bool from_default_pool(const allocation& block) noexcept;

/// @brief Frees an allocation through its resource on its stream, with its device current;
/// failures are reported, never thrown.
void deallocate(const allocation& block) noexcept;

/// @brief Stops counting an allocation whose ownership left cudagap (`release()`), in the
/// statistics and in the process's ledger.
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

/// @brief Page-locks @p bytes of host memory from @p resource for `pinned_buffer`, under the
/// thread's tag (a `memory_tag_scope` naming @p where). 0 bytes give a null pointer.
/// @throws gpu::cuda_error when CUDA is unavailable or the host cannot lock that much; a failed
/// lock is `cudaErrorMemoryAllocation` with a hint about host memory, never a
/// `gpu::out_of_memory` (whose numbers are the device's)
[[nodiscard]] void* allocate_pinned(std::size_t bytes, host_resource_ref resource,
                                    std::source_location where);

/// @brief Throws the error for a page-locked allocation of @p requested_bytes that failed with
/// @p status (what `pinned_host_resource` does on failure).
[[noreturn]] void throw_pinned_allocation_failure(cudaError_t status, const char* api,
                                                  std::size_t requested_bytes,
                                                  std::source_location where);

/// @brief Page-locked host memory as `pinned_buffer` owns it.
struct pinned_allocation {
    void* pointer = nullptr; ///< host address
    std::size_t bytes = 0;   ///< size in bytes
    /// @brief What allocated it and frees it (`no_resource()` for a record holding nothing).
    host_resource_ref resource = no_resource();

    friend bool operator==(const pinned_allocation&, const pinned_allocation&) = default;
};

/// @brief Frees page-locked memory through its resource; failures are reported, never thrown.
struct pinned_deleter {
    void operator()(const pinned_allocation& block) const noexcept
    {
        // Pinned resources are not stream-ordered: the stream is ignored.
        block.resource.deallocate(legacy_default_stream, block.pointer, block.bytes);
    }
};

} // namespace detail

} // namespace gpu
