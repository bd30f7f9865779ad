/// @file device_buffer.hpp
/// @brief `device_buffer<T>`: an owning, typed, stream-ordered array in device memory.
#pragma once

#include <gpu/detail/allocation.hpp>
#include <gpu/detail/unique_handle.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <source_location>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace gpu {

/// @brief An owning, typed, stream-ordered array in device memory. Move-only.
///
/// Allocated from a memory resource (`<gpu/memory_resource.hpp>`): by default the device's
/// (`default_device_resource`), which records the allocation in the process's ledger under the
/// buffer's tag (`gpu::memory_ledger`) and allocates with `cudaMallocAsync` from the device's
/// current memory pool (see `memory_pool`) where the device supports memory pools (every GPU
/// CUDA 13 runs on, except some integrated ones), with plain `cudaMalloc` otherwise; or from
/// the resource given, which must outlive the buffer. The memory is uninitialised. Every buffer
/// is made on a stream that the caller names (as RMM's `device_buffer` requires one): it is
/// allocated and freed there, so it must not outlive that stream (or call `set_stream` first),
/// and it is where cudagap's functions that take the buffer run unless told otherwise (see
/// `stream_ref` for the whole rule). Freed memory goes back to the pool; whether the pool keeps
/// it for reuse or returns it to the driver at the next synchronisation is the pool's release
/// threshold, which you set (`memory_pool::set_release_threshold`); `trim_memory_pool` returns
/// it now.
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

    /// @brief Allocates @p count elements on @p stream's device (whatever device is current;
    /// the caller's stays current), ordered on @p stream (also
    /// when @p count is 0: the empty buffer still reports @p stream, so functions that default
    /// to the buffer's stream use it), from the device's default resource, under the calling
    /// thread's tag (`memory_tag_scope`; `user` outside any). The stream is required: an
    /// allocation is stream-ordered work, and none falls back to the legacy default stream
    /// unnamed.
    /// @throws gpu::out_of_memory when the device cannot hold them, even after waiting once for
    /// frees still pending on other streams and returning the pool's cached memory to the
    /// device (the default resource's `oom_retry_adaptor`; the process can go on); its text
    /// names who holds the device's memory
    /// @throws std::invalid_argument when the byte count overflows
    /// @throws gpu::cuda_error when CUDA is unavailable
    explicit device_buffer(std::size_t count, stream_ref stream,
                           std::source_location where = std::source_location::current())
        : block_(detail::allocate(detail::checked_bytes("gpu::device_buffer", count, sizeof(T)),
                                  stream, std::nullopt, std::nullopt, where))
    {}

    /// @brief Allocates as the constructor above, under @p tag (e.g.
    /// `memory_tag::named("kv cache")`) whatever the thread's scope says.
    device_buffer(std::size_t count, stream_ref stream, memory_tag tag,
                  std::source_location where = std::source_location::current())
        : block_(detail::allocate(detail::checked_bytes("gpu::device_buffer", count, sizeof(T)),
                                  stream, std::nullopt, tag, where))
    {}

    /// @brief Allocates @p count elements from @p resource, ordered on @p stream, under @p tag
    /// (none: the thread's). The resource must outlive the buffer; it frees the memory. A
    /// resource that records in the ledger (`gpu::ledger_resource`) records the tag.
    /// @throws gpu::out_of_memory, std::invalid_argument or gpu::cuda_error as the resource does
    /// (a `limiting_adaptor` refuses past its limit), std::invalid_argument when the byte count
    /// overflows
    device_buffer(std::size_t count, stream_ref stream, device_resource_ref resource,
                  std::optional<memory_tag> tag = std::nullopt,
                  std::source_location where = std::source_location::current())
        : block_(detail::allocate(detail::checked_bytes("gpu::device_buffer", count, sizeof(T)),
                                  stream, resource, tag, where))
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
    /// @brief Whether the memory comes from the device's default resource on a device with
    /// memory pools, so from its stream-ordered pool (`cudaMallocAsync`). False for an empty
    /// buffer and for a buffer of a resource given (which may still be a pool's: ask it).
    [[nodiscard]] bool is_pooled() const noexcept
    {
        return detail::from_default_pool(block_.get());
    }
    /// @brief The resource that allocated the memory and will free it: the one given, or the
    /// device's default. An empty buffer made without a resource has none (`allocate` of more
    /// than 0 bytes from it throws `std::logic_error`).
    [[nodiscard]] device_resource_ref resource() const noexcept { return block_.get().resource; }
    /// @brief The device the memory lives on (recorded at allocation). A buffer without elements
    /// has no memory: its stream's device, as CUDA says (`stream_ref::device`).
    /// @throws gpu::cuda_error only for a buffer without elements when CUDA cannot say
    [[nodiscard]] gpu::device device() const
    {
        const int recorded = block_.get().device;
        return recorded >= 0 ? detail::device_from_cuda(recorded) : stream().device();
    }

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

    /// @brief Queues setting every byte to zero on @p stream, with the buffer's device current
    /// (the caller's is restored).
    void fill_zero_async(stream_ref stream)
    {
        if (!empty()) {
            const scoped_device on(device());
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

    /// @brief Gives up ownership of the memory and stops counting it (in the statistics and the
    /// ledger). Free the pointer with `resource().deallocate(stream, pointer, bytes)`: for the
    /// default resource, `cudaFreeAsync` (or `cudaFree`, which synchronises) does it too.
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

} // namespace gpu
