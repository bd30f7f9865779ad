/// @file expects.hpp
/// @brief `GPU_EXPECTS`: the one way cudagap writes a precondition, in the spirit of RMM's
/// `RMM_EXPECTS`.
///
/// @code
/// GPU_EXPECTS(priority >= range.greatest, std::invalid_argument,
///             "gpu::stream: priority ", priority, " is outside this device's range");
/// GPU_EXPECTS(handle_, std::logic_error, function, ": the handle is empty (moved from)");
/// @endcode
///
/// The rule it serves (docs/architecture.md, "Errors"): a bad argument is
/// `std::invalid_argument` naming the offending values, an empty or moved-from object used is
/// `std::logic_error`. The message is composed only when the condition fails, so a check costs
/// one comparison on the fast path.
#pragma once

#include <string>
#include <string_view>
#include <type_traits>

namespace gpu::detail {

/// @brief Appends text to a message.
inline void append_to_message(std::string& text, std::string_view piece)
{
    text += piece;
}

/// @brief Appends one character to a message.
inline void append_to_message(std::string& text, char piece)
{
    text += piece;
}

/// @brief Appends a number to a message in decimal (`std::to_string`).
template <class Number>
requires(std::is_arithmetic_v<Number> && !std::is_same_v<Number, bool> &&
         !std::is_same_v<Number, char>) void append_to_message(std::string& text, Number piece)
{
    text += std::to_string(piece);
}

/// @brief Joins the pieces of a message: text as it is, numbers in decimal.
template <class... Pieces>
[[nodiscard]] std::string message_of(const Pieces&... pieces)
{
    std::string text;
    (append_to_message(text, pieces), ...);
    return text;
}

/// @brief Throws `Exception` with the message joined from @p pieces; what `GPU_EXPECTS` calls
/// when its condition fails (out of line, so the check itself stays small).
/// @tparam Exception an exception type constructible from a `std::string`
template <class Exception, class... Pieces>
[[noreturn, gnu::cold, gnu::noinline]] void fail(const Pieces&... pieces)
{
    throw Exception(message_of(pieces...));
}

} // namespace gpu::detail

/// @brief Throws `exception` (e.g. `std::invalid_argument`, `std::logic_error`) with the
/// message joined from the remaining arguments (text, characters and numbers) unless
/// `condition` holds. The message pieces are evaluated only when it does not. An expression of
/// type `void`, so that it also fits where an expression is expected.
#define GPU_EXPECTS(condition, exception, ...)                                                     \
    (static_cast<bool>(condition) ? static_cast<void>(0)                                           \
                                  : ::gpu::detail::fail<exception>(__VA_ARGS__))
