/// @file memory_resource.hpp
/// @brief Memory resources: what cudagap asks for memory, following libcu++'s `cuda::mr`
/// concepts. The property tags (`device_accessible`, `host_accessible`), the `memory_resource`
/// concept, and `resource_ref`, the non-owning, type-erased reference that containers store.
///
/// A resource is an object with stream-ordered `allocate(stream, bytes, alignment)` and
/// `deallocate(stream, pointer, bytes, alignment)`, compared with `==` (two resources are equal
/// when memory from one may be freed through the other), whose properties are declared by
/// `get_property` friends: the shape of CCCL's `cuda::mr::resource` (CCCL 3.1 and later) and of
/// RMM's resources, written with cudagap's `gpu::stream_ref`:
///
/// @code
/// struct arena {
///     void* allocate(gpu::stream_ref stream, std::size_t bytes, std::size_t alignment);
///     void deallocate(gpu::stream_ref stream, void* p, std::size_t bytes,
///                     std::size_t alignment) noexcept;
///     friend bool operator==(const arena&, const arena&) = default;
///     friend void get_property(const arena&, gpu::device_accessible) noexcept {}
/// };
/// arena mine;
/// gpu::device_resource_ref ref = mine;   // what device_buffer will take
/// @endcode
///
/// Resources written for CCCL are cudagap resources as they are, with no wrapper: a stream
/// parameter of type `cuda::stream_ref` (or any type made from a `cudaStream_t`) is passed
/// cudagap's stream, CCCL 3.0's `allocate_async(bytes, alignment, stream)` is called where a
/// resource has it, and a resource with only synchronous `allocate(bytes, alignment)` (CCCL
/// 3.0's `cuda::mr::resource`) or `allocate_sync` is used after its stream has finished the
/// work on the memory. Their `cuda::mr` properties count once `<gpu/cccl_resource.hpp>` is
/// included (this header needs no CCCL).
#pragma once

#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <concepts>
#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>

namespace gpu {

/// @brief Property: the memory can be read and written by kernels on the device.
struct device_accessible {};

/// @brief Property: the memory can be read and written by the host.
struct host_accessible {};

/// @brief The alignment a resource gives when asked for none: 256 bytes, what `cudaMalloc`,
/// `cudaMallocAsync` and `cudaMallocHost` guarantee (CCCL's `default_cuda_malloc_alignment`).
inline constexpr std::size_t default_alignment = 256;

/// @brief Declares that resource type @p R has property @p P without a `get_property` of its
/// own: specialise it (`template <> inline constexpr bool gpu::enable_property<theirs,
/// gpu::device_accessible> = true;`) for a type you cannot change. `<gpu/cccl_resource.hpp>`
/// specialises it for resources with the matching `cuda::mr` property.
template <class R, class P>
inline constexpr bool enable_property = false;

/// @brief Whether resource type @p R has property @p P: it declares
/// `get_property(const R&, P)` (a friend, found by argument-dependent lookup, as in CCCL), or
/// `enable_property<R, P>` says so.
template <class R, class P>
concept has_property = requires(const R& resource)
{
    get_property(resource, P{});
}
|| enable_property<std::remove_cv_t<R>, P>;

namespace detail {

/// @brief What a resource's stream parameter is given: converts to `gpu::stream_ref`, to a raw
/// `cudaStream_t`, or to any other class made from one (CCCL's `cuda::stream_ref`), so that one
/// call serves resources written against any of them without this header naming CCCL.
struct stream_argument {
    cudaStream_t handle = nullptr; ///< the stream

    /// @brief The stream as the parameter type @p S the resource declares.
    template <class S>
    requires(std::same_as<S, cudaStream_t> ||
             (std::is_class_v<S> && std::is_constructible_v<S, cudaStream_t>)) constexpr
    operator S() const noexcept(std::is_nothrow_constructible_v<S, cudaStream_t>)
    {
        return S(handle);
    }
};

/// @brief cudagap's shape, and CCCL 3.1's and RMM's: `allocate(stream, bytes, alignment)`.
template <class R>
concept stream_first_resource = requires(R& r, stream_argument s, void* p, std::size_t n,
                                         std::size_t a)
{
    {
        r.allocate(s, n, a)
        } -> std::same_as<void*>;
    r.deallocate(s, p, n, a);
};

/// @brief CCCL 3.0's `cuda::mr::async_resource`: `allocate_async(bytes, alignment, stream)`.
template <class R>
concept async_suffix_resource = requires(R& r, stream_argument s, void* p, std::size_t n,
                                         std::size_t a)
{
    {
        r.allocate_async(n, a, s)
        } -> std::same_as<void*>;
    r.deallocate_async(p, n, a, s);
};

/// @brief CCCL 3.0's synchronous `cuda::mr::resource`: `allocate(bytes, alignment)`.
template <class R>
concept synchronous_resource = requires(R& r, void* p, std::size_t n, std::size_t a)
{
    {
        r.allocate(n, a)
        } -> std::same_as<void*>;
    r.deallocate(p, n, a);
};

/// @brief CCCL 3.1's `cuda::mr::synchronous_resource`: `allocate_sync(bytes, alignment)`.
template <class R>
concept sync_suffix_resource = requires(R& r, void* p, std::size_t n, std::size_t a)
{
    {
        r.allocate_sync(n, a)
        } -> std::same_as<void*>;
    r.deallocate_sync(p, n, a);
};

} // namespace detail

/// @brief A memory resource cudagap can allocate from: equality-comparable, with one of the
/// allocation shapes of the file's description (cudagap's and CCCL 3.1's stream-first
/// `allocate`, CCCL 3.0's `allocate_async`, or a synchronous `allocate`/`allocate_sync`).
template <class R>
concept memory_resource = std::equality_comparable<R> &&
    (detail::stream_first_resource<R> || detail::async_suffix_resource<R> ||
     detail::synchronous_resource<R> || detail::sync_suffix_resource<R>);

/// @brief A memory resource with every property in @p Properties.
template <class R, class... Properties>
concept memory_resource_with = memory_resource<R> &&(has_property<R, Properties>&&...);

namespace detail {

/// @brief Throws `std::invalid_argument` naming @p who: @p alignment is not a power of two or is
/// above @p most.
[[noreturn]] void throw_bad_alignment(const char* who, std::size_t alignment, std::size_t most);

/// @brief Checks an alignment a resource was asked for (see `throw_bad_alignment`).
inline void check_alignment(const char* who, std::size_t alignment, std::size_t most)
{
    if (alignment == 0 || (alignment & (alignment - 1)) != 0 || alignment > most) {
        throw_bad_alignment(who, alignment, most);
    }
}

/// @brief Throws `gpu::out_of_memory` for a foreign resource's `std::bad_alloc`, so that every
/// allocation failure reads the same (`gpu::oom_retry_adaptor` and callers catch one type).
[[noreturn]] void throw_foreign_bad_alloc(const std::bad_alloc& failure, std::size_t bytes);

/// @brief Waits for @p stream before a synchronous resource frees memory that work queued there
/// may still use; a failure is reported, never thrown.
void synchronize_before_free(stream_ref stream) noexcept;

/// @brief Allocates from @p r whatever its shape (see `memory_resource`).
template <memory_resource R>
void* allocate_with(R& r, stream_ref stream, std::size_t bytes, std::size_t alignment)
{
    if constexpr (stream_first_resource<R>) {
        return r.allocate(stream_argument{stream.get()}, bytes, alignment);
    } else {
        try {
            if constexpr (async_suffix_resource<R>) {
                return r.allocate_async(bytes, alignment, stream_argument{stream.get()});
            } else if constexpr (synchronous_resource<R>) {
                return r.allocate(bytes, alignment);
            } else {
                return r.allocate_sync(bytes, alignment);
            }
        } catch (const std::bad_alloc& failure) {
            throw_foreign_bad_alloc(failure, bytes);
        }
    }
}

/// @brief Frees through @p r whatever its shape; a synchronous resource frees after @p stream
/// has finished the work queued on it. Never throws.
template <memory_resource R>
void deallocate_with(R& r, stream_ref stream, void* pointer, std::size_t bytes,
                     std::size_t alignment) noexcept
{
    if constexpr (stream_first_resource<R>) {
        r.deallocate(stream_argument{stream.get()}, pointer, bytes, alignment);
    } else if constexpr (async_suffix_resource<R>) {
        r.deallocate_async(pointer, bytes, alignment, stream_argument{stream.get()});
    } else {
        if (pointer != nullptr) {
            synchronize_before_free(stream);
        }
        if constexpr (synchronous_resource<R>) {
            r.deallocate(pointer, bytes, alignment);
        } else {
            r.deallocate_sync(pointer, bytes, alignment);
        }
    }
}

/// @brief The calls `resource_ref` makes, one table per resource type.
struct resource_vtable {
    /// @brief `allocate_with` on the resource.
    void* (*allocate)(void* object, stream_ref stream, std::size_t bytes,
                      std::size_t alignment) = nullptr;
    /// @brief `deallocate_with` on the resource.
    void (*deallocate)(void* object, stream_ref stream, void* pointer, std::size_t bytes,
                       std::size_t alignment) noexcept = nullptr;
    /// @brief `==` of two resources of the type.
    bool (*equal)(const void* a, const void* b) = nullptr;
};

/// @brief The table of resource type @p R.
template <class R>
inline constexpr resource_vtable vtable_for{
    [](void* object, stream_ref stream, std::size_t bytes, std::size_t alignment) -> void* {
        return allocate_with(*static_cast<R*>(object), stream, bytes, alignment);
    },
    [](void* object, stream_ref stream, void* pointer, std::size_t bytes,
       std::size_t alignment) noexcept {
        deallocate_with(*static_cast<R*>(object), stream, pointer, bytes, alignment);
    },
    [](const void* a, const void* b) -> bool {
        return *static_cast<const R*>(a) == *static_cast<const R*>(b);
    }};

template <class T>
inline constexpr bool is_resource_ref = false;

/// @brief Whether @p P is one of @p Ps.
template <class P, class... Ps>
inline constexpr bool one_of = (std::same_as<P, Ps> || ...);

} // namespace detail

/// @brief A non-owning reference to a memory resource with the properties @p Properties: two
/// pointers (16 bytes: the resource and its type's table), copied by value, one indirect call
/// per allocation and per free. What containers store, so that `device_buffer<T>` stays one
/// type whatever resource it allocates from (a template parameter would make every function
/// taking a buffer a template). CCCL's `cuda::mr::resource_ref` is the same idea.
///
/// The resource must outlive the reference and every allocation made through it. A reference
/// converts to one that asks for fewer properties. It is itself a resource, so an adaptor can
/// be stacked on a resource it does not own.
/// @tparam Properties what the resource must have, e.g. `device_accessible`
template <class... Properties>
class resource_ref {
public:
    /// @brief Refers to @p resource, which must have every property in @p Properties.
    template <class R>
    requires(!detail::is_resource_ref<std::remove_cv_t<R>> && !std::is_const_v<R> &&
             memory_resource_with<R, Properties...>) resource_ref(R& resource)
    noexcept // NOLINT(google-explicit-constructor): as cuda::mr's
        : object_(std::addressof(resource)), vtable_(&detail::vtable_for<R>)
    {}

    /// @brief The same resource, asking for fewer properties.
    template <class... Others>
    requires(detail::one_of<Properties, Others...>&&...)
        resource_ref(const resource_ref<Others...>& other)
    noexcept // NOLINT: a widening conversion
        : object_(other.object_), vtable_(other.vtable_)
    {}

    /// @brief Allocates @p bytes ordered on @p stream (usable by work queued there after this
    /// call). 0 bytes give a null pointer.
    /// @throws gpu::out_of_memory when the resource has no room, std::invalid_argument for an
    /// alignment it cannot give, gpu::cuda_error for other failures
    [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                                 std::size_t alignment = default_alignment) const
    {
        return vtable_->allocate(object_, stream, bytes, alignment);
    }

    /// @brief Frees @p pointer (from `allocate` with the same @p bytes and @p alignment on
    /// this or an equal resource) after the work queued on @p stream. Never throws.
    void deallocate(stream_ref stream, void* pointer, std::size_t bytes,
                    std::size_t alignment = default_alignment) const noexcept
    {
        vtable_->deallocate(object_, stream, pointer, bytes, alignment);
    }

    /// @brief Equal when both refer to resources of one type that compare equal.
    friend bool operator==(const resource_ref& a, const resource_ref& b)
    {
        return a.vtable_ == b.vtable_ && a.vtable_->equal(a.object_, b.object_);
    }

    /// @brief The reference has the properties it asks for.
    template <class P>
    requires detail::one_of<P, Properties...>
    friend void get_property(const resource_ref&, P) noexcept {}

private:
    template <class...>
    friend class resource_ref;

    void* object_;
    const detail::resource_vtable* vtable_;
};

/// @brief A reference to device-accessible memory: what `device_buffer` takes.
using device_resource_ref = resource_ref<device_accessible>;

/// @brief A reference to host-accessible memory (pinned host memory is both).
using host_resource_ref = resource_ref<host_accessible>;

namespace detail {
template <class... P>
inline constexpr bool is_resource_ref<resource_ref<P...>> = true;

/// @brief Throws the `std::logic_error` of allocating from `no_resource()`.
[[noreturn]] void throw_no_resource(std::size_t bytes);

/// @brief The resource of an owner that holds nothing (empty, moved from): 0 bytes give a
/// null pointer, anything more is a `std::logic_error`, and freeing frees nothing. So that an
/// owner's record holds a `resource_ref`, not an optional one, and its empty state is
/// `Handle{}` for `detail::unique_handle`.
class null_resource {
public:
    /// @brief A null pointer for 0 bytes.
    /// @throws std::logic_error for more
    void* allocate(stream_ref, std::size_t bytes, std::size_t)
    {
        if (bytes != 0) {
            throw_no_resource(bytes);
        }
        return nullptr;
    }
    /// @brief Frees nothing.
    void deallocate(stream_ref, void*, std::size_t, std::size_t) noexcept {}
    /// @brief All are equal.
    friend bool operator==(const null_resource&, const null_resource&) noexcept = default;
    /// @brief Stands in for device memory.
    friend void get_property(const null_resource&, device_accessible) noexcept {}
    /// @brief Stands in for host memory.
    friend void get_property(const null_resource&, host_accessible) noexcept {}
};

/// @brief The one `null_resource`, stateless.
inline null_resource null_resource_instance;

/// @brief A reference to it, for the records of owners that hold nothing.
[[nodiscard]] inline resource_ref<device_accessible, host_accessible> no_resource() noexcept
{
    return null_resource_instance;
}
} // namespace detail

} // namespace gpu
