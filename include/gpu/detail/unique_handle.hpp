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

/// @brief The members every owner of one handle shares: adopting a handle made elsewhere,
/// reading, releasing and testing it; moving and destroying are its `unique_handle`'s, so an
/// owner declares none of them and is move-only.
///
/// An owner derives from it (CRTP), befriends it, and has a private constructor from
/// (`adopt_t`, `Handle`) for `from_native_handle`. A constructor that creates the handle
/// `reset`s it as soon as it exists, so that a later failure in that constructor destroys it.
///
/// @code
/// class filter_descriptor
///     : public gpu::detail::handle_owner<filter_descriptor, cudnnFilterDescriptor_t, deleter> {
///     friend handle_owner;
///     filter_descriptor(adopt_t, cudnnFilterDescriptor_t raw) noexcept : handle_owner(raw) {}
/// ...
/// @endcode
/// @tparam Owner the deriving owner
/// @tparam Handle the raw handle type, as `unique_handle`'s
/// @tparam Deleter what destroys it, as `unique_handle`'s
template <class Owner, class Handle, class Deleter>
class handle_owner {
public:
    /// @brief Adopts a handle created elsewhere; it will be destroyed with the owner.
    [[nodiscard]] static Owner from_native_handle(Handle raw) noexcept { return Owner(adopt, raw); }

    /// @brief The raw handle, still owned (null after a move).
    [[nodiscard]] Handle get() const noexcept { return handle_.get(); }
    /// @brief Gives up ownership; the caller must destroy the handle.
    /// @post this object holds nothing.
    [[nodiscard]] Handle release() noexcept { return handle_.release(); }
    /// @brief Whether a handle is held (false after a move or `release`).
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

protected:
    /// @brief Chooses the owner's adopting constructor.
    struct adopt_t {
        explicit adopt_t() = default;
    };
    /// @brief The value that chooses it.
    static constexpr adopt_t adopt{};

    /// @brief Holds nothing (yet: the owner's constructor `reset`s it to the handle it makes).
    handle_owner() noexcept = default;
    /// @brief Owns @p raw.
    explicit handle_owner(Handle raw) noexcept : handle_(raw) {}
    /// @brief Destroys the handle held, if any, and owns @p raw instead.
    void reset(Handle raw) noexcept { handle_.reset(raw); }

private:
    unique_handle<Handle, Deleter> handle_;
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
