/// @file unique_handle.hpp
/// @brief The one place where cudagap's owners implement moving and destroying a handle.
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace gpu::detail {

/// @brief Move-only owner of a handle that a stateless `Deleter` destroys.
///
/// Every owning type of cudagap (stream, event, buffers, library handles, descriptors) holds one
/// of these instead of writing its own move operations: hand-written moves that list fields one
/// by one are where wrapper libraries have leaked before. The null state is a value-initialised
/// `Handle` (`nullptr` for the CUDA handle types, `Handle{}` for aggregates).
///
/// @tparam Handle a regular, equality-comparable type whose `Handle{}` means "nothing owned"
/// @tparam Deleter a default-constructible type with `void operator()(Handle) const noexcept`
template <class Handle, class Deleter>
class unique_handle {
    static_assert(std::is_nothrow_invocable_v<const Deleter&, Handle>,
                  "the deleter must be callable with the handle and noexcept");

public:
    /// @brief The raw handle type.
    using handle_type = Handle;

    /// @brief Owns nothing.
    constexpr unique_handle() noexcept = default;

    /// @brief Takes ownership of @p handle.
    constexpr explicit unique_handle(Handle handle) noexcept : handle_(handle) {}

    unique_handle(const unique_handle&) = delete;
    unique_handle& operator=(const unique_handle&) = delete;

    /// @brief Takes the handle of @p other.
    /// @post `other` owns nothing.
    constexpr unique_handle(unique_handle&& other) noexcept
        : handle_(std::exchange(other.handle_, Handle{}))
    {}

    /// @brief Destroys the current handle and takes the handle of @p other.
    /// @post `other` owns nothing. Self-assignment keeps the handle.
    constexpr unique_handle& operator=(unique_handle&& other) noexcept
    {
        unique_handle taken(std::move(other));
        swap(taken);
        return *this;
    }

    /// @brief Destroys the handle, if any.
    ~unique_handle() { reset(); }

    /// @brief The raw handle, still owned.
    [[nodiscard]] constexpr Handle get() const noexcept { return handle_; }

    /// @brief Gives up ownership without destroying.
    /// @post owns nothing.
    [[nodiscard]] constexpr Handle release() noexcept { return std::exchange(handle_, Handle{}); }

    /// @brief Destroys the current handle (if any) and owns @p handle instead.
    constexpr void reset(Handle handle = Handle{}) noexcept
    {
        Handle old = std::exchange(handle_, handle);
        if (!(old == Handle{})) {
            Deleter{}(old);
        }
    }

    /// @brief Exchanges the owned handles.
    constexpr void swap(unique_handle& other) noexcept { std::swap(handle_, other.handle_); }

    /// @brief Whether a handle is owned.
    [[nodiscard]] constexpr explicit operator bool() const noexcept
    {
        return !(handle_ == Handle{});
    }

private:
    Handle handle_{};
};

/// @brief Throws the `std::logic_error` for using an owner that holds nothing: moved from,
/// released, or adopted from a null handle. Every owner's refusal is this one message:
/// `<function>: the <owner> is empty (moved from or released; it holds no <holds>)`, e.g.
/// `gpu::blas::gemm: the gpu::blas::handle is empty (moved from or released; it holds no
/// cuBLAS handle)`, or `<owner> is empty (...)` when the owner's own check speaks for it.
/// @param function what was called: the owner's member, or a function given the owner
/// @param owner the owner's type, e.g. `gpu::stream`
/// @param holds what it would hold, e.g. `cuDNN handle`
[[noreturn]] inline void throw_empty_owner(std::string_view function, std::string_view owner,
                                           std::string_view holds)
{
    std::string message(function);
    if (function != owner) {
        message += ": the ";
        message += owner;
    }
    message += " is empty (moved from or released; it holds no ";
    message += holds;
    message += ")";
    throw std::logic_error(message);
}

} // namespace gpu::detail
