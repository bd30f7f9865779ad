/// @file enum_names.hpp
/// @brief `gpu::detail::enum_name`: one table of (value, name) pairs per enum, which serves its
/// `to_string`, its parsing where it has any, and the check that a value is one it names.
///
/// @code
/// constexpr gpu::detail::enum_name<tensor_layout> layout_names[] = {
///     {tensor_layout::nchw, "nchw"}, {tensor_layout::nhwc, "nhwc"}};
/// std::string_view to_string(tensor_layout l) noexcept
/// {
///     return detail::name_of(layout_names, l);
/// }
/// @endcode
///
/// An integer cast to an enum may hold a value no enumerator has: `name_of` then answers
/// `unknown` and `is_named` answers false, so the name and the check cannot disagree.
#pragma once

#include <cstddef>
#include <optional>
#include <string_view>

namespace gpu::detail {

/// @brief One row of an enum's table: a value and the name `to_string` gives it.
template <class Enum>
struct enum_name {
    Enum value{};            ///< the enumerator
    std::string_view name{}; ///< its name
};

/// @brief The name of `value` in `table`; `unknown` for a value the table does not hold.
template <class Enum, std::size_t N>
[[nodiscard]] constexpr std::string_view name_of(const enum_name<Enum> (&table)[N],
                                                 Enum value) noexcept
{
    for (const enum_name<Enum>& row : table) {
        if (row.value == value) {
            return row.name;
        }
    }
    return "unknown";
}

/// @brief Whether `table` names `value`: false for an integer cast to the enum that no
/// enumerator has.
template <class Enum, std::size_t N>
[[nodiscard]] constexpr bool is_named(const enum_name<Enum> (&table)[N], Enum value) noexcept
{
    for (const enum_name<Enum>& row : table) {
        if (row.value == value) {
            return true;
        }
    }
    return false;
}

/// @brief The value `table` names `name`; empty for a name it does not hold.
template <class Enum, std::size_t N>
[[nodiscard]] constexpr std::optional<Enum> value_of(const enum_name<Enum> (&table)[N],
                                                     std::string_view name) noexcept
{
    for (const enum_name<Enum>& row : table) {
        if (row.name == name) {
            return row.value;
        }
    }
    return std::nullopt;
}

} // namespace gpu::detail
