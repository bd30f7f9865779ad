/// @file memory.hpp
/// @brief Device memory (`device_buffer<T>`, stream-ordered), page-locked host memory
/// (`pinned_buffer<T>`), the byte counters of what cudagap has allocated, and the memory pool.
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <source_location>
#include <span>
#include <type_traits>
#include <vector>

namespace gpu {

/// @brief What `device_buffer` has allocated in this process, in bytes, on all devices.
///
/// These count only cudagap's own allocations (PyTorch's `memory_allocated` idea); the device's
/// view, which includes other processes, the driver and the pool's cache, is `device::memory()`.
struct allocation_stats {
    std::size_t current_bytes = 0;      ///< held by live buffers now
    std::size_t peak_bytes = 0;         ///< the most held at once since start or the last reset
    std::size_t live_allocations = 0;   ///< buffers alive now
    std::size_t total_allocations = 0;  ///< allocations made since start
};

/// @brief The counters of cudagap's device allocations. Thread-safe, never throws.
[[nodiscard]] allocation_stats allocation_statistics() noexcept;

/// @brief Restarts the peak from the current byte count.
void reset_peak_allocation() noexcept;

/// @brief The state of a device's default memory pool, which `device_buffer` allocates from.
struct pool_info {
    bool supported = false;            ///< the device supports memory pools
    std::size_t reserved_bytes = 0;    ///< device memory the pool holds (what nvidia-smi counts)
    std::size_t used_bytes = 0;        ///< of which handed out to live allocations
    std::size_t reserved_peak_bytes = 0; ///< high-water mark of `reserved_bytes`
    std::size_t release_threshold_bytes = 0; ///< the pool keeps up to this much when idle

    /// @brief Memory the pool holds but nobody uses: what `trim_memory_pool` gives back.
    [[nodiscard]] constexpr std::size_t cached_bytes() const noexcept
    {
        return reserved_bytes - used_bytes;
    }
};

/// @brief Reads the default memory pool of @p dev.
/// @return `supported == false` and zeros when the device has no memory pools
[[nodiscard]] pool_info memory_pool_info(device dev);

/// @brief Returns the unused memory of @p dev's default pool to the device, keeping at most
/// @p keep_bytes; synchronises the device first so that freed blocks are really free (the
/// `torch.cuda.empty_cache()` of cudagap). Does nothing on devices without memory pools.
void trim_memory_pool(device dev, std::size_t keep_bytes = 0);

namespace detail {

/// @brief One device allocation as `device_buffer` owns it; all of its state, so that moving the
/// buffer is moving this value.
struct allocation {
    void* pointer = nullptr;       ///< device address
    std::size_t bytes = 0;         ///< size in bytes
    cudaStream_t stream = nullptr; ///< the stream it is ordered on (freed there)
    bool pooled = false;           ///< from `cudaMallocAsync` (else `cudaMalloc`)

    friend bool operator==(const allocation&, const allocation&) = default;
};

/// @brief Allocates @p bytes on the current device, ordered on @p stream; counts the bytes.
///
/// 0 bytes allocate nothing and make no CUDA call, but the result still names @p stream, so that
/// an empty buffer's work (none) and its successors stay on the stream it was made for.
/// A pooled allocation that fails is retried once, after waiting for the device (frees queued
/// on other streams return their blocks) and trimming the pool it came from (its cached,
/// unused memory goes back to the device): unless the stream is being captured into a graph.
/// @throws gpu::out_of_memory with requested, free and total bytes when the device is full
/// (the numbers are read after the trim)
[[nodiscard]] allocation allocate(std::size_t bytes, stream_ref stream, std::source_location where);

/// @brief Frees an allocation on its stream; failures are reported, never thrown.
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
    void* pointer = nullptr;  ///< host address
    std::size_t bytes = 0;    ///< size in bytes

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

/// @brief An owning, typed, stream-ordered array in device memory. Move-only.
///
/// Allocated with `cudaMallocAsync` from the device's current memory pool (its default pool
/// unless `cudaDeviceSetMemPool` chose another) where the device
/// supports memory pools (every GPU CUDA 13 runs on, except some integrated ones), with plain
/// `cudaMalloc` otherwise. The memory is uninitialised. The buffer is freed on the stream it
/// was allocated on, so it must not outlive that stream (or call `set_stream` first). That stream
/// is also where cudagap's functions that take the buffer run unless told otherwise (see
/// `stream_ref` for the whole rule). The pool keeps freed memory for reuse (like PyTorch's caching allocator); `trim_memory_pool`
/// returns it to the device.
///
/// @tparam T a trivially copyable element type (`float`, `__half`, ...)
template <class T>
class device_buffer {
    static_assert(std::is_trivially_copyable_v<T>, "device_buffer holds trivially copyable types");

public:
    /// @brief The element type.
    using value_type = T;

    /// @brief An empty buffer: no memory, size 0.
    device_buffer() noexcept = default;

    /// @brief Allocates @p count elements on the current device, ordered on @p stream (also
    /// when @p count is 0: the empty buffer still reports @p stream, so functions that default
    /// to the buffer's stream use it).
    /// @throws gpu::out_of_memory when the device cannot hold them, even after waiting once for
    /// frees still pending on other streams and returning the pool's cached memory to the
    /// device (the process can go on)
    /// @throws std::invalid_argument when the byte count overflows
    /// @throws gpu::cuda_error when CUDA is unavailable
    explicit device_buffer(std::size_t count, stream_ref stream = {},
                           std::source_location where = std::source_location::current())
        : block_(detail::allocate(detail::checked_bytes("gpu::device_buffer", count, sizeof(T)),
                                  stream, where))
    {
    }

    /// @brief Allocates a buffer the size of @p host and copies it in; returns when the copy is
    /// complete.
    [[nodiscard]] static device_buffer from_host(std::span<const T> host, stream_ref stream = {})
    {
        device_buffer buffer(host.size(), stream);
        buffer.copy_from_host(host);
        return buffer;
    }

    /// @brief The number of elements.
    [[nodiscard]] std::size_t size() const noexcept { return block_.get().bytes / sizeof(T); }
    /// @brief The number of bytes.
    [[nodiscard]] std::size_t size_bytes() const noexcept { return block_.get().bytes; }
    /// @brief Whether the buffer holds no elements.
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }
    /// @brief The device address (null when empty).
    [[nodiscard]] T* data() noexcept { return static_cast<T*>(block_.get().pointer); }
    /// @brief The device address (null when empty).
    [[nodiscard]] const T* data() const noexcept { return static_cast<const T*>(block_.get().pointer); }
    /// @brief The raw device pointer, same as `data()`.
    [[nodiscard]] T* get() const noexcept { return static_cast<T*>(block_.get().pointer); }
    /// @brief The stream the buffer is ordered on and will be freed on; the stream cudagap's
    /// functions that take this buffer run on unless they are given another one (see
    /// `stream_ref`). The legacy default stream for a default-constructed or moved-from buffer.
    [[nodiscard]] stream_ref stream() const noexcept { return stream_ref(block_.get().stream); }
    /// @brief Whether the memory comes from the stream-ordered pool (`cudaMallocAsync`).
    [[nodiscard]] bool is_pooled() const noexcept { return block_.get().pooled; }

    /// @brief Orders the buffer's eventual free, and the work of functions that default to the
    /// buffer's stream, on @p stream instead (the caller makes sure that the work using the
    /// buffer on the old stream is ordered before).
    void set_stream(stream_ref stream) noexcept
    {
        detail::allocation block = block_.release();
        block.stream = stream.get();
        block_.reset(block);
    }

    /// @brief Copies @p host into the buffer and waits for the copy.
    /// @throws std::invalid_argument when the sizes differ (both are named)
    void copy_from_host(std::span<const T> host)
    {
        copy_from_host_async(host, stream());
        if (!empty()) {
            stream().synchronize();
        }
    }

    /// @brief Queues a copy of @p host into the buffer on @p stream. @p host must stay valid
    /// and unchanged until the stream reaches the copy (use a `pinned_buffer` for overlap).
    /// @throws std::invalid_argument when the sizes differ (both are named)
    void copy_from_host_async(std::span<const T> host, stream_ref stream)
    {
        if (host.size() != size()) {
            detail::throw_size_mismatch("device_buffer::copy_from_host", size(), host.size());
        }
        if (!host.empty()) {
            GPU_CUDA_CHECK(cudaMemcpyAsync(data(), host.data(), size_bytes(),
                                           cudaMemcpyHostToDevice, stream.get()));
        }
    }

    /// @brief Copies the buffer into @p host and waits for the copy.
    /// @throws std::invalid_argument when the sizes differ (both are named)
    void copy_to_host(std::span<T> host) const
    {
        copy_to_host_async(host, stream());
        if (!empty()) {
            stream().synchronize();
        }
    }

    /// @brief Queues a copy of the buffer into @p host on @p stream.
    /// @throws std::invalid_argument when the sizes differ (both are named)
    void copy_to_host_async(std::span<T> host, stream_ref stream) const
    {
        if (host.size() != size()) {
            detail::throw_size_mismatch("device_buffer::copy_to_host", size(), host.size());
        }
        if (!host.empty()) {
            GPU_CUDA_CHECK(cudaMemcpyAsync(host.data(), data(), size_bytes(),
                                           cudaMemcpyDeviceToHost, stream.get()));
        }
    }

    /// @brief The whole buffer as a new host vector (waits for the copy).
    [[nodiscard]] std::vector<T> to_host() const
    {
        std::vector<T> host(size());
        copy_to_host(host);
        return host;
    }

    /// @brief Queues a device-to-device copy of @p source into this buffer on @p stream.
    /// @throws std::invalid_argument when the sizes differ (both are named)
    void copy_from_async(const device_buffer& source, stream_ref stream)
    {
        if (source.size() != size()) {
            detail::throw_size_mismatch("device_buffer::copy_from", size(), source.size());
        }
        if (!empty()) {
            GPU_CUDA_CHECK(cudaMemcpyAsync(data(), source.data(), size_bytes(),
                                           cudaMemcpyDeviceToDevice, stream.get()));
        }
    }

    /// @brief Queues setting every byte to zero on @p stream.
    void fill_zero_async(stream_ref stream)
    {
        if (!empty()) {
            GPU_CUDA_CHECK(cudaMemsetAsync(data(), 0, size_bytes(), stream.get()));
        }
    }

    /// @brief Sets every byte to zero and waits.
    void fill_zero()
    {
        fill_zero_async(stream());
        if (!empty()) {
            stream().synchronize();
        }
    }

    /// @brief Gives up ownership of the memory and stops counting it. Free the pointer with
    /// `cudaFreeAsync` (or `cudaFree`, which synchronises).
    /// @post the buffer is empty.
    [[nodiscard]] T* release() noexcept
    {
        const detail::allocation block = block_.release();
        detail::forget_allocation(block);
        return static_cast<T*>(block.pointer);
    }

    /// @brief Moving leaves the source empty.
    /// @post `other.empty()` and `other.data() == nullptr`
    device_buffer(device_buffer&& other) noexcept = default;
    /// @brief Frees the owned memory and takes @p other's.
    /// @post `other.empty()` and `other.data() == nullptr`
    device_buffer& operator=(device_buffer&& other) noexcept = default;
    device_buffer(const device_buffer&) = delete;
    device_buffer& operator=(const device_buffer&) = delete;
    /// @brief Frees the memory on its stream.
    ~device_buffer() = default;

private:
    detail::unique_handle<detail::allocation, detail::allocation_deleter> block_;
};

/// @brief An owning array in page-locked (pinned) host memory, which copies to and from the
/// device can overlap with computation. Move-only. Usable as a contiguous range.
/// @tparam T a trivially copyable element type
template <class T>
class pinned_buffer {
    static_assert(std::is_trivially_copyable_v<T>, "pinned_buffer holds trivially copyable types");

public:
    /// @brief The element type.
    using value_type = T;

    /// @brief An empty buffer.
    pinned_buffer() noexcept = default;

    /// @brief Allocates @p count page-locked elements (uninitialised).
    /// @throws gpu::cuda_error when CUDA is unavailable or the host cannot lock the memory (then
    /// with status `cudaErrorMemoryAllocation` and a hint about host memory; not a
    /// `gpu::out_of_memory`, which is about device memory)
    explicit pinned_buffer(std::size_t count, std::source_location where = std::source_location::current())
    {
        const std::size_t bytes = detail::checked_bytes("gpu::pinned_buffer", count, sizeof(T));
        if (bytes == 0) {
            return;
        }
        block_.reset(detail::pinned_allocation{detail::allocate_pinned(bytes, where), bytes});
    }

    /// @brief The number of elements.
    [[nodiscard]] std::size_t size() const noexcept { return block_.get().bytes / sizeof(T); }
    /// @brief Whether it holds no elements.
    [[nodiscard]] bool empty() const noexcept { return size() == 0; }
    /// @brief The host address (null when empty).
    [[nodiscard]] T* data() noexcept { return static_cast<T*>(block_.get().pointer); }
    /// @brief The host address (null when empty).
    [[nodiscard]] const T* data() const noexcept { return static_cast<const T*>(block_.get().pointer); }
    /// @brief Element @p i (unchecked).
    [[nodiscard]] T& operator[](std::size_t i) noexcept { return data()[i]; }
    /// @brief Element @p i (unchecked).
    [[nodiscard]] const T& operator[](std::size_t i) const noexcept { return data()[i]; }
    /// @brief Start of the range.
    [[nodiscard]] T* begin() noexcept { return data(); }
    /// @brief End of the range.
    [[nodiscard]] T* end() noexcept { return data() + size(); }
    /// @brief Start of the range.
    [[nodiscard]] const T* begin() const noexcept { return data(); }
    /// @brief End of the range.
    [[nodiscard]] const T* end() const noexcept { return data() + size(); }
    /// @brief The elements as a span.
    [[nodiscard]] std::span<T> span() noexcept { return {data(), size()}; }
    /// @brief The elements as a span.
    [[nodiscard]] std::span<const T> span() const noexcept { return {data(), size()}; }

    /// @brief Moving leaves the source empty.
    /// @post `other.empty()`
    pinned_buffer(pinned_buffer&& other) noexcept = default;
    /// @brief Frees the owned memory and takes @p other's.
    /// @post `other.empty()`
    pinned_buffer& operator=(pinned_buffer&& other) noexcept = default;
    pinned_buffer(const pinned_buffer&) = delete;
    pinned_buffer& operator=(const pinned_buffer&) = delete;
    /// @brief Frees the memory.
    ~pinned_buffer() = default;

private:
    detail::unique_handle<detail::pinned_allocation, detail::pinned_deleter> block_;
};

} // namespace gpu
