/// @file cccl_resource.hpp
/// @brief cudagap's resources and CCCL's `cuda::mr` resources, both ways: CCCL's properties
/// count as cudagap's (a resource with `get_property(r, cuda::mr::device_accessible)` goes
/// into a `gpu::device_resource_ref`), and `gpu::as_cccl` shows a cudagap resource to CCCL as
/// a `cuda::mr::async_resource` (CUB's and Thrust's temporary storage, CCCL containers).
///
/// A CCCL resource needs no wrapper to be a cudagap resource (`<gpu/memory_resource.hpp>`
/// calls whichever of CCCL's shapes it has); only its properties need CCCL's types, hence this
/// header. It includes `<cuda/memory_resource>` (CCCL 3.0 ships it in the toolkit's
/// `include/cccl`, which `cudagap::core` puts on the include path) and enables it with
/// `LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE`: include this header before any other that
/// includes it, or define that macro for the whole project.
#pragma once

#ifndef LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#define LIBCUDACXX_ENABLE_EXPERIMENTAL_MEMORY_RESOURCE
#endif

#include <gpu/memory_resource.hpp>
#include <gpu/stream.hpp>

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <concepts>
#include <cstddef>

namespace gpu {

/// @brief A resource with CCCL's `cuda::mr::device_accessible` is `device_accessible`.
template <class R>
requires cuda::has_property<R, cuda::mr::device_accessible>
inline constexpr bool enable_property<R, device_accessible> = true;

/// @brief A resource with CCCL's `cuda::mr::host_accessible` is `host_accessible`.
template <class R>
requires cuda::has_property<R, cuda::mr::host_accessible>
inline constexpr bool enable_property<R, host_accessible> = true;

/// @brief A cudagap resource as CCCL 3.0 sees one: `allocate_async`/`deallocate_async` on a
/// `cuda::stream_ref`, synchronous `allocate`/`deallocate` (on the legacy default stream,
/// waited for), equality, and CCCL's properties for cudagap's. Copyable, two pointers; the
/// resource must outlive it and its allocations.
/// @tparam Properties cudagap's properties it has (`device_accessible`, `host_accessible`)
template <class... Properties>
class cccl_resource {
public:
    /// @brief Shows @p resource to CCCL.
    explicit cccl_resource(resource_ref<Properties...> resource) noexcept : resource_(resource) {}

    /// @brief Stream-ordered allocation on @p stream.
    [[nodiscard]] void* allocate_async(std::size_t bytes, std::size_t alignment,
                                       cuda::stream_ref stream)
    {
        return resource_.allocate(stream_ref(stream.get()), bytes, alignment);
    }
    /// @brief Stream-ordered free on @p stream.
    void deallocate_async(void* pointer, std::size_t bytes, std::size_t alignment,
                          cuda::stream_ref stream) noexcept
    {
        resource_.deallocate(stream_ref(stream.get()), pointer, bytes, alignment);
    }
    /// @brief Memory usable on every stream when this returns.
    [[nodiscard]] void* allocate(std::size_t bytes, std::size_t alignment)
    {
        void* pointer = resource_.allocate(legacy_default_stream, bytes, alignment);
        legacy_default_stream.synchronize();
        return pointer;
    }
    /// @brief Frees memory no work uses any more.
    void deallocate(void* pointer, std::size_t bytes, std::size_t alignment) noexcept
    {
        resource_.deallocate(legacy_default_stream, pointer, bytes, alignment);
    }

    /// @brief The cudagap resource.
    [[nodiscard]] resource_ref<Properties...> resource() const noexcept { return resource_; }

    /// @brief Equal when the cudagap resources are.
    friend bool operator==(const cccl_resource& a, const cccl_resource& b)
    {
        return a.resource_ == b.resource_;
    }
    /// @brief Unequal when the cudagap resources are (CCCL 3.0 asks for both operators).
    friend bool operator!=(const cccl_resource& a, const cccl_resource& b) { return !(a == b); }

    /// @brief CCCL's `device_accessible`, when it is `device_accessible`.
    friend void get_property(const cccl_resource&, cuda::mr::device_accessible) noexcept
        requires(std::same_as<Properties, device_accessible> || ...)
    {}
    /// @brief CCCL's `host_accessible`, when it is `host_accessible`.
    friend void get_property(const cccl_resource&, cuda::mr::host_accessible) noexcept
        requires(std::same_as<Properties, host_accessible> || ...)
    {}

private:
    resource_ref<Properties...> resource_;
};

/// @brief @p resource (a cudagap device resource) as a CCCL async resource.
[[nodiscard]] inline cccl_resource<device_accessible> as_cccl(device_resource_ref resource) noexcept
{
    return cccl_resource<device_accessible>(resource);
}

} // namespace gpu
