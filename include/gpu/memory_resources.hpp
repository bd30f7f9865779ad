/// @file memory_resources.hpp
/// @brief cudagap's memory resources over the CUDA runtime: `pool_resource` (stream-ordered,
/// from a memory pool), `device_malloc_resource` (`cudaMalloc`), `pinned_host_resource`
/// (`cudaMallocHost`), and `default_device_resource`, the stack a device's buffers allocate from
/// unless told otherwise.
///
/// Each is a small value (a device and a pool handle at most) that satisfies
/// `gpu::memory_resource` and declares its properties; compare two with `==` to know whether
/// memory from one may be freed through the other. The adaptors that count, limit and retry are
/// in `<gpu/resource_adaptors.hpp>`; the one that records in the ledger in
/// `<gpu/ledger_resource.hpp>`.
#pragma once

#include <gpu/device.hpp>
#include <gpu/memory_pool.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>

namespace gpu {

/// @brief Stream-ordered device memory from a CUDA memory pool: `cudaMallocAsync` from the
/// device's current pool, or `cudaMallocFromPoolAsync` from a given one; freed with
/// `cudaFreeAsync` on the stream given. Capturable: inside a stream capture, an allocation and
/// its free become graph nodes.
///
/// An allocation runs with the resource's device current (`gpu::scoped_device`), so that it
/// lands there, and so does the out-of-memory error's reading of free and total memory.
class pool_resource {
public:
    /// @brief The pool `cudaMallocAsync` uses on @p dev at the time of each allocation (its
    /// default pool, unless `cudaDeviceSetMemPool` chose another): what `device_buffer` does.
    explicit pool_resource(gpu::device dev) noexcept : device_(dev) {}

    /// @brief Allocates from @p pool, which lives on @p dev (a pool made with
    /// `cudaMemPoolCreate`, e.g. with its own release threshold). The pool must outlive the
    /// resource and its allocations.
    pool_resource(memory_pool pool, gpu::device dev) noexcept : device_(dev), pool_(pool.get()) {}

    /// @brief Allocates @p bytes ordered on @p stream; 0 bytes give a null pointer and make no
    /// CUDA call.
    /// @throws std::invalid_argument when @p alignment is not a power of two up to 256
    /// @throws gpu::out_of_memory when the pool cannot grow by @p bytes (not retried: stack a
    /// `gpu::oom_retry_adaptor` for that)
    /// @throws gpu::cuda_error for other failures
    [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                                 std::size_t alignment = default_alignment);

    /// @brief Frees @p pointer with `cudaFreeAsync` on @p stream; a failure is reported on
    /// stderr, never thrown. A null pointer frees nothing.
    void deallocate(stream_ref stream, void* pointer, std::size_t bytes,
                    std::size_t alignment = default_alignment) noexcept;

    /// @brief The device it allocates on.
    [[nodiscard]] gpu::device device() const noexcept { return device_; }

    /// @brief The pool given, or nothing for "the device's current pool".
    [[nodiscard]] std::optional<memory_pool> pool() const
    {
        return pool_ == nullptr ? std::nullopt
                                : std::optional<memory_pool>(memory_pool(pool_, device_));
    }

    /// @brief Equal when they allocate from the same pool (or both from the current pool of the
    /// same device).
    friend bool operator==(const pool_resource&, const pool_resource&) = default;

    /// @brief Device memory.
    friend void get_property(const pool_resource&, device_accessible) noexcept {}

private:
    gpu::device device_;
    cudaMemPool_t pool_ = nullptr;
};

/// @brief Device memory from plain `cudaMalloc`, freed with `cudaFree`: for devices without
/// memory pools, and for memory that must not come from a pool. Not stream-ordered: the stream
/// is ignored on allocation, and `cudaFree` waits for the whole device, so neither belongs in
/// a stream capture or a hot loop.
class device_malloc_resource {
public:
    /// @brief Allocates on @p dev.
    explicit device_malloc_resource(gpu::device dev) noexcept : device_(dev) {}

    /// @brief Allocates @p bytes with `cudaMalloc` on the resource's device; 0 bytes give a
    /// null pointer and make no CUDA call.
    /// @throws std::invalid_argument when @p alignment is not a power of two up to 256
    /// @throws gpu::out_of_memory when the device cannot hold them
    /// @throws gpu::cuda_error for other failures
    [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                                 std::size_t alignment = default_alignment);

    /// @brief Frees @p pointer with `cudaFree` (which waits for the device); a failure is
    /// reported on stderr, never thrown.
    void deallocate(stream_ref stream, void* pointer, std::size_t bytes,
                    std::size_t alignment = default_alignment) noexcept;

    /// @brief The device it allocates on.
    [[nodiscard]] gpu::device device() const noexcept { return device_; }

    /// @brief Equal when they allocate on the same device.
    friend bool operator==(const device_malloc_resource&, const device_malloc_resource&) = default;

    /// @brief Device memory.
    friend void get_property(const device_malloc_resource&, device_accessible) noexcept {}

private:
    gpu::device device_;
};

/// @brief Page-locked host memory (`cudaMallocHost`, freed with `cudaFreeHost`), which the
/// host and every device can read and copies overlap with computation. Not stream-ordered:
/// the stream is ignored, and `cudaFreeHost` waits for the device.
class pinned_host_resource {
public:
    /// @brief Allocates @p bytes of pinned memory; 0 bytes give a null pointer.
    /// @throws std::invalid_argument when @p alignment is not a power of two up to 256
    /// @throws gpu::cuda_error when the host cannot lock that much (status
    /// `cudaErrorMemoryAllocation` with a hint about host memory: not a `gpu::out_of_memory`,
    /// whose numbers are a device's) or CUDA is unavailable
    [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                                 std::size_t alignment = default_alignment);

    /// @brief Frees @p pointer with `cudaFreeHost`; a failure is reported, never thrown.
    void deallocate(stream_ref stream, void* pointer, std::size_t bytes,
                    std::size_t alignment = default_alignment) noexcept;

    /// @brief All pinned resources are equal: `cudaFreeHost` frees any of their memory.
    friend bool operator==(const pinned_host_resource&, const pinned_host_resource&) = default;

    /// @brief The host can use it.
    friend void get_property(const pinned_host_resource&, host_accessible) noexcept {}
    /// @brief Devices can use it.
    friend void get_property(const pinned_host_resource&, device_accessible) noexcept {}
};

/// @brief The resource @p dev's buffers allocate from unless told otherwise, made on first use
/// and kept for the process: a `gpu::ledger_resource` (records in `memory_ledger::global()`,
/// under the thread's `memory_tag_scope`) over a `gpu::oom_retry_adaptor` (once out of memory:
/// waits for the device, trims its pool, retries) over a `pool_resource` of @p dev's current
/// pool; on a device without memory pools, the ledger over a `device_malloc_resource`.
/// Thread-safe.
/// @throws gpu::cuda_error when CUDA cannot say whether @p dev has memory pools
[[nodiscard]] device_resource_ref default_device_resource(gpu::device dev);

namespace detail {
/// @brief Whether @p resource is the default resource of device @p device and that allocates
/// from the device's pool (not `cudaMalloc`). Makes no CUDA call: false when the default was
/// never made.
[[nodiscard]] bool is_default_pool_resource(device_resource_ref resource, int device) noexcept;
} // namespace detail

/// @brief The resource pinned buffers allocate from unless told otherwise: a
/// `gpu::ledger_resource` over `pinned_host_resource`, counted under `memory_ledger::host`.
/// Made on first use, kept for the process; needs no device to be made.
[[nodiscard]] host_resource_ref default_pinned_resource();

} // namespace gpu
