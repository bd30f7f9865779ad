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
#include <cstdint>
#include <limits>
#include <source_location>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

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

/// @brief The state of a memory pool (by default the device's default pool, which
/// `device_buffer` allocates from).
struct pool_info {
    bool supported = false;              ///< the device supports memory pools
    std::size_t reserved_bytes = 0;      ///< device memory the pool holds (what nvidia-smi counts)
    std::size_t used_bytes = 0;          ///< of which handed out to live allocations
    std::size_t reserved_peak_bytes = 0; ///< high-water mark of `reserved_bytes`
    std::size_t release_threshold_bytes = 0; ///< the pool keeps up to this much when idle

    /// @brief Memory the pool holds but nobody uses: what `trim_memory_pool` gives back.
    [[nodiscard]] constexpr std::size_t cached_bytes() const noexcept
    {
        return reserved_bytes - used_bytes;
    }
};

/// @brief A non-owning reference to a CUDA memory pool (`cudaMemPool_t`): its release
/// threshold, its counters, and trimming. Cheap to copy; the pool belongs to its device.
///
/// `device_buffer` allocates with `cudaMallocAsync`, which draws from the *current* pool of the
/// stream's device (`current(dev)`; the device's default pool unless `cudaDeviceSetMemPool` chose
/// another). A freed block goes back to the pool, not to the driver; what the pool then does
/// with its unused memory is this setting, which cudagap never changes behind your back:
///
/// - **release threshold** (`set_release_threshold`): at every synchronisation (of a stream, an
///   event or the device) the pool returns to the driver whatever unused memory it holds above
///   this many bytes. CUDA's default for a device's default pool is 0: memory freed before a
///   synchronisation is returned at it, so other processes (and `nvidia-smi`) see it free
///   again, but the next allocation of that size maps fresh memory from the driver, which costs
///   about what `cudaMalloc` costs. `keep_all` keeps everything until you trim: allocations
///   after the first are a few microseconds (what bench/alloc measures), at the price of memory
///   that stays reserved by this process.
/// - **trimming** (`trim_to`, or `trim_memory_pool`, which synchronises first): returns unused
///   memory now, down to a given amount. cudagap trims on its own in one place only: a pooled
///   allocation that fails waits for the device, trims the pool to 0 and retries once, so that
///   "out of memory" means out of memory.
///
/// PyTorch's caching allocator is `keep_all` with no knob: it caches every freed block in the
/// process and gives memory back only on `torch.cuda.empty_cache()` or when a `cudaMalloc`
/// fails (it then frees cached blocks and retries). Set `keep_all` for the same behaviour, e.g.
/// for a training loop that allocates and frees the same sizes at every step, and leave the
/// default where the GPU is shared and memory should go back between phases.
///
/// @code
/// gpu::memory_pool pool = gpu::memory_pool::current(gpu::current_device());
/// pool.set_release_threshold(gpu::memory_pool::keep_all);   // cache like PyTorch
/// // ... allocate and free ...
/// std::printf("%zu bytes cached\n", pool.reserved_bytes() - pool.used_bytes());
/// @endcode
class memory_pool {
public:
    /// @brief A release threshold that keeps every freed byte in the pool until it is trimmed.
    static constexpr std::size_t keep_all = std::numeric_limits<std::size_t>::max();

    /// @brief Refers to a pool created elsewhere (`cudaMemPoolCreate`, a library's pool).
    /// @throws std::invalid_argument when @p pool is null
    explicit memory_pool(cudaMemPool_t pool) : handle_(pool)
    {
        if (pool == nullptr) {
            throw std::invalid_argument("gpu::memory_pool: a null cudaMemPool_t names no pool");
        }
    }

    /// @brief The pool `cudaMallocAsync`, and so `device_buffer`, draws from on @p dev
    /// (`cudaDeviceGetMemPool`).
    /// @throws gpu::cuda_error when CUDA is unavailable or @p dev has no memory pools
    /// (`device_properties::memory_pools_supported`)
    [[nodiscard]] static memory_pool current(device dev)
    {
        cudaMemPool_t pool = nullptr;
        GPU_CUDA_CHECK(cudaDeviceGetMemPool(&pool, dev.id()));
        return memory_pool(pool);
    }

    /// @brief The device's default pool (`cudaDeviceGetDefaultMemPool`); the same as `current`
    /// unless `cudaDeviceSetMemPool` chose another.
    /// @throws gpu::cuda_error when CUDA is unavailable or @p dev has no memory pools
    [[nodiscard]] static memory_pool device_default(device dev)
    {
        cudaMemPool_t pool = nullptr;
        GPU_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev.id()));
        return memory_pool(pool);
    }

    /// @brief The raw handle.
    [[nodiscard]] cudaMemPool_t get() const noexcept { return handle_; }

    /// @brief How much unused memory the pool keeps at a synchronisation (see the class).
    [[nodiscard]] std::size_t release_threshold() const
    {
        return attribute(cudaMemPoolAttrReleaseThreshold,
                         "cudaMemPoolGetAttribute(ReleaseThreshold)");
    }

    /// @brief Keeps up to @p bytes of unused memory at synchronisations, returning the rest to
    /// the driver; `keep_all` keeps everything (`cudaMemPoolSetAttribute(ReleaseThreshold)`).
    /// Affects every allocation from this pool in the process, from now on.
    void set_release_threshold(std::size_t bytes) const
    {
        std::uint64_t value = bytes;
        GPU_CUDA_CHECK(cudaMemPoolSetAttribute(handle_, cudaMemPoolAttrReleaseThreshold, &value));
    }

    /// @brief Returns unused memory to the driver until the pool holds at most @p keep_bytes
    /// (`cudaMemPoolTrimTo`). Blocks whose `cudaFreeAsync` the host has not yet seen complete
    /// still count as used: synchronise first, or call `trim_memory_pool`, which does.
    void trim_to(std::size_t keep_bytes) const
    {
        GPU_CUDA_CHECK(cudaMemPoolTrimTo(handle_, keep_bytes));
    }

    /// @brief Device memory the pool holds now, used or cached.
    [[nodiscard]] std::size_t reserved_bytes() const
    {
        return attribute(cudaMemPoolAttrReservedMemCurrent,
                         "cudaMemPoolGetAttribute(ReservedMemCurrent)");
    }

    /// @brief Of `reserved_bytes`, what live allocations use.
    [[nodiscard]] std::size_t used_bytes() const
    {
        return attribute(cudaMemPoolAttrUsedMemCurrent, "cudaMemPoolGetAttribute(UsedMemCurrent)");
    }

    /// @brief The high-water mark of `reserved_bytes`.
    [[nodiscard]] std::size_t reserved_peak_bytes() const
    {
        return attribute(cudaMemPoolAttrReservedMemHigh,
                         "cudaMemPoolGetAttribute(ReservedMemHigh)");
    }

    /// @brief The high-water mark of `used_bytes`.
    [[nodiscard]] std::size_t used_peak_bytes() const
    {
        return attribute(cudaMemPoolAttrUsedMemHigh, "cudaMemPoolGetAttribute(UsedMemHigh)");
    }

    /// @brief All counters and the threshold at once.
    [[nodiscard]] pool_info info() const
    {
        return {true, reserved_bytes(), used_bytes(), reserved_peak_bytes(), release_threshold()};
    }

    /// @brief References are equal when they name the same pool.
    friend bool operator==(memory_pool a, memory_pool b) noexcept { return a.handle_ == b.handle_; }

private:
    [[nodiscard]] std::size_t attribute(cudaMemPoolAttr which, const char* api) const
    {
        std::uint64_t value = 0;
        detail::check(cudaMemPoolGetAttribute(handle_, which, &value), api,
                      std::source_location::current());
        return static_cast<std::size_t>(value);
    }

    cudaMemPool_t handle_;
};

/// @brief Reads the default memory pool of @p dev (`memory_pool::device_default(dev).info()`).
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

/// @brief An owning, typed, stream-ordered array in device memory. Move-only.
///
/// Allocated with `cudaMallocAsync` from the device's current memory pool (see `memory_pool`)
/// where the device supports memory pools (every GPU CUDA 13 runs on, except some integrated
/// ones), with plain `cudaMalloc` otherwise. The memory is uninitialised. Every buffer is made
/// on a stream that the caller names (as RMM's `device_buffer` requires one): it is allocated
/// and freed there, so it must not outlive that stream (or call `set_stream` first), and it is
/// where cudagap's functions that take the buffer run unless told otherwise (see `stream_ref`
/// for the whole rule). Freed memory goes back to the pool; whether the pool keeps it for reuse
/// or returns it to the driver at the next synchronisation is the pool's release threshold,
/// which you set (`memory_pool::set_release_threshold`); `trim_memory_pool` returns it now.
///
/// @tparam T a trivially copyable element type (`float`, `__half`, ...)
template <class T>
class device_buffer {
    static_assert(std::is_trivially_copyable_v<T>, "device_buffer holds trivially copyable types");

public:
    /// @brief The element type.
    using value_type = T;

    /// @brief An empty buffer: no memory, size 0, and no stream of its own (`stream()` is the
    /// legacy default stream, but nothing is ever queued for a buffer without elements).
    device_buffer() noexcept = default;

    /// @brief Allocates @p count elements on the current device, ordered on @p stream (also
    /// when @p count is 0: the empty buffer still reports @p stream, so functions that default
    /// to the buffer's stream use it). The stream is required: an allocation is stream-ordered
    /// work, and none falls back to the legacy default stream unnamed.
    /// @throws gpu::out_of_memory when the device cannot hold them, even after waiting once for
    /// frees still pending on other streams and returning the pool's cached memory to the
    /// device (the process can go on)
    /// @throws std::invalid_argument when the byte count overflows
    /// @throws gpu::cuda_error when CUDA is unavailable
    explicit device_buffer(std::size_t count, stream_ref stream,
                           std::source_location where = std::source_location::current())
        : block_(detail::allocate(detail::checked_bytes("gpu::device_buffer", count, sizeof(T)),
                                  stream, where))
    {}

    /// @brief Allocates a buffer the size of @p host on @p stream and copies it in there;
    /// returns when the copy is complete.
    [[nodiscard]] static device_buffer from_host(std::span<const T> host, stream_ref stream)
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
    [[nodiscard]] const T* data() const noexcept
    {
        return static_cast<const T*>(block_.get().pointer);
    }
    /// @brief The raw device pointer, same as `data()`.
    [[nodiscard]] T* get() noexcept { return data(); }
    /// @brief The raw device pointer, same as `data()`: to const, as the buffer is const.
    [[nodiscard]] const T* get() const noexcept { return data(); }
    /// @brief The stream the buffer is ordered on and will be freed on; the stream cudagap's
    /// functions that take this buffer run on unless they are given another one (see
    /// `stream_ref`). The legacy default stream for a default-constructed or moved-from buffer,
    /// which holds no elements, so no work is ever queued there for it.
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
    explicit pinned_buffer(std::size_t count,
                           std::source_location where = std::source_location::current())
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
    [[nodiscard]] const T* data() const noexcept
    {
        return static_cast<const T*>(block_.get().pointer);
    }
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
