/// @file pinned_buffer.hpp
/// @brief `pinned_buffer<T>`: an owning array in page-locked host memory.
#pragma once

#include <gpu/detail/allocation.hpp>
#include <gpu/detail/unique_handle.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/memory_resources.hpp>

#include <cstddef>
#include <source_location>
#include <span>
#include <type_traits>

namespace gpu {

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

    /// @brief Allocates @p count page-locked elements (uninitialised) from the default pinned
    /// resource, which counts them in the ledger's host row (`memory_ledger::host`) under the
    /// thread's tag.
    /// @throws gpu::cuda_error when CUDA is unavailable or the host cannot lock the memory (then
    /// with status `cudaErrorMemoryAllocation` and a hint about host memory; not a
    /// `gpu::out_of_memory`, which is about device memory)
    explicit pinned_buffer(std::size_t count,
                           std::source_location where = std::source_location::current())
        : pinned_buffer(count, default_pinned_resource(), where)
    {}

    /// @brief Allocates @p count elements from @p resource (host-accessible; it must outlive
    /// the buffer and frees the memory). Pinned memory is not stream-ordered: the resource is
    /// called with the legacy default stream, which a stream-ordered one would order on.
    /// @throws what the resource throws (see the constructor above for the default's)
    pinned_buffer(std::size_t count, host_resource_ref resource,
                  std::source_location where = std::source_location::current())
    {
        const std::size_t bytes = detail::checked_bytes("gpu::pinned_buffer", count, sizeof(T));
        if (bytes == 0) {
            return;
        }
        block_.reset(detail::pinned_allocation{detail::allocate_pinned(bytes, resource, where),
                                               bytes, resource});
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
