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
///
/// A table may also hold richer rows, with more facts of each value beside its `value` and its
/// `name` (`gpu::detail::element_type_facts`): the functions read only those two members.
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

/// @brief The enum of a table's rows: the type of their `value`.
template <class Row>
using enum_of = decltype(Row::value);

/// @brief The first row of `table` that `match` accepts; null when none does.
template <class Row, std::size_t N, class Match>
[[nodiscard]] constexpr const Row* find_row(const Row (&table)[N], Match match) noexcept
{
    for (const Row& row : table) {
        if (match(row)) {
            return &row;
        }
    }
    return nullptr;
}

/// @brief The row of `value` in `table`; null for a value the table does not hold.
template <class Row, std::size_t N>
[[nodiscard]] constexpr const Row* row_of(const Row (&table)[N], enum_of<Row> value) noexcept
{
    return find_row(table, [value](const Row& candidate) { return candidate.value == value; });
}

/// @brief The name of `value` in `table`; `unknown` for a value the table does not hold.
template <class Row, std::size_t N>
[[nodiscard]] constexpr std::string_view name_of(const Row (&table)[N], enum_of<Row> value) noexcept
{
    const Row* row = row_of(table, value);
    return row != nullptr ? std::string_view(row->name) : std::string_view("unknown");
}

/// @brief Whether `table` names `value`: false for an integer cast to the enum that no
/// enumerator has.
template <class Row, std::size_t N>
[[nodiscard]] constexpr bool is_named(const Row (&table)[N], enum_of<Row> value) noexcept
{
    return row_of(table, value) != nullptr;
}

/// @brief The value `table` names `name`; empty for a name it does not hold.
template <class Row, std::size_t N>
[[nodiscard]] constexpr std::optional<enum_of<Row>> value_of(const Row (&table)[N],
                                                             std::string_view name) noexcept
{
    const Row* row =
        find_row(table, [name](const Row& candidate) { return candidate.name == name; });
    return row != nullptr ? std::optional<enum_of<Row>>(row->value) : std::nullopt;
}

/// @brief Throws `std::invalid_argument`: `<function>: <enum_type> value <value> is none of the
/// enumerators cudagap names (an integer cast to the enum?)`, for a value `is_named` refuses.
[[noreturn]] void throw_unnamed_enumerator(std::string_view function, std::string_view enum_type,
                                           int value);

} // namespace gpu::detail
