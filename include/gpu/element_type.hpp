/// @file element_type.hpp
/// @brief `gpu::element_type`: the floating-point formats of device data (FP32, FP64, FP16,
/// BF16) as a value, for the functions that take untyped memory (`gpu::check_finite`), and the
/// one table of what cudagap says of each format (name, enumerator name, size). The other
/// precision enums (`gpu::preferred_precision`, `gpu::dnn::data_type`) map onto it through one
/// `gpu::detail::element_type_mapping` table each, which gives them their names and sizes.
///
/// @code
/// const gpu::non_finite_report r = gpu::check_finite(ptr, count, gpu::element_type::fp16, stream);
/// std::printf("%s: %s\n", gpu::to_string(gpu::element_type::fp16).data(), r.to_string().c_str());
/// gpu::enumerator_name(gpu::element_type::bf16); // "bf16", as command lines and JSON spell it
/// @endcode
#pragma once

#include <gpu/detail/enum_names.hpp>

#include <array>
#include <cstddef>
#include <optional>
#include <span>
#include <string_view>

namespace gpu {

/// @brief A floating-point element format. The order is fixed (the compiled parts of the
/// library pass it as an integer).
enum class element_type {
    fp32, ///< IEEE single precision (`float`)
    fp64, ///< IEEE double precision (`double`)
    fp16, ///< IEEE half precision (`__half`)
    bf16, ///< bfloat16 (`__nv_bfloat16`): FP32's range in 16 bits
};

namespace detail {

/// @brief What cudagap says of one element type: a row of `element_types`.
struct element_type_facts {
    element_type value{};               ///< the element type
    std::string_view name{};            ///< its name in messages and reports: `FP16`
    std::string_view enumerator_name{}; ///< its enumerator's spelling: `fp16`
    std::size_t size = 0;               ///< bytes per element
};

/// @brief The one table of the element types, in the enumeration's order.
inline constexpr element_type_facts element_types[] = {
    {element_type::fp32, "FP32", "fp32", 4},
    {element_type::fp64, "FP64", "fp64", 8},
    {element_type::fp16, "FP16", "fp16", 2},
    {element_type::bf16, "BF16", "bf16", 2},
};

/// @brief The row of @p type; null for a value outside the enumeration.
[[nodiscard]] constexpr const element_type_facts* facts_of(element_type type) noexcept
{
    return row_of(element_types, type);
}

} // namespace detail

/// @brief `FP32`, `FP64`, `FP16` or `BF16`; `unknown` for a value outside the enumeration.
[[nodiscard]] constexpr std::string_view to_string(element_type type) noexcept
{
    return detail::name_of(detail::element_types, type);
}

/// @brief `fp32`, `fp64`, `fp16` or `bf16`: the enumerator's spelling, which command lines,
/// JSON and the other precision enums' `to_string` use; `unknown` outside the enumeration.
[[nodiscard]] constexpr std::string_view enumerator_name(element_type type) noexcept
{
    const detail::element_type_facts* facts = detail::facts_of(type);
    return facts != nullptr ? facts->enumerator_name : std::string_view("unknown");
}

/// @brief Bytes per element: 4, 8, 2 or 2; 0 for a value outside the enumeration.
[[nodiscard]] constexpr std::size_t element_size(element_type type) noexcept
{
    const detail::element_type_facts* facts = detail::facts_of(type);
    return facts != nullptr ? facts->size : 0;
}

namespace detail {

/// @brief One row of the table that maps another precision enum (`gpu::preferred_precision`,
/// `gpu::dnn::data_type`) onto the element types. Its name is the element type's enumerator
/// name, so that such a table serves `name_of`, `is_named` and `value_of` as it is.
template <class Enum>
struct element_type_mapping {
    Enum value{};                                  ///< the other enum's enumerator
    element_type type{};                           ///< the element type it stands for
    std::string_view name = enumerator_name(type); ///< its name: `fp16`
};

/// @brief The element type that @p table maps @p value onto; empty for a value it does not hold.
template <class Enum, std::size_t N>
[[nodiscard]] constexpr std::optional<element_type>
mapped_element_type(const element_type_mapping<Enum> (&table)[N], Enum value) noexcept
{
    const element_type_mapping<Enum>* row = row_of(table, value);
    return row != nullptr ? std::optional<element_type>(row->type) : std::nullopt;
}

/// @brief The value that @p table maps onto @p type; empty when no row holds @p type.
template <class Enum, std::size_t N>
[[nodiscard]] constexpr std::optional<Enum>
mapped_value(const element_type_mapping<Enum> (&table)[N], element_type type) noexcept
{
    const element_type_mapping<Enum>* row =
        find_row(table, [type](const element_type_mapping<Enum>& candidate) {
            return candidate.type == type;
        });
    return row != nullptr ? std::optional<Enum>(row->value) : std::nullopt;
}

/// @brief Throws `std::invalid_argument`: `<function>: FP64 is not a <enum_type>; FP32, FP16 or
/// BF16 are` (the element types of @p accepted), or, for a value outside the enumeration,
/// `element_type value 9 is none of FP32, FP64, FP16 or BF16`.
[[noreturn]] void throw_unmapped_element_type(std::string_view function, std::string_view enum_type,
                                              element_type type,
                                              std::span<const element_type> accepted);

/// @brief The element type @p value stands for.
/// @throws std::invalid_argument as `throw_unnamed_enumerator` when @p table does not hold it
template <class Enum, std::size_t N>
[[nodiscard]] element_type to_element_type(const element_type_mapping<Enum> (&table)[N], Enum value,
                                           std::string_view function, std::string_view enum_type)
{
    if (const std::optional<element_type> type = mapped_element_type(table, value)) {
        return *type;
    }
    throw_unnamed_enumerator(function, enum_type, static_cast<int>(value));
}

/// @brief The value of @p table that stands for @p type.
/// @throws std::invalid_argument as `throw_unmapped_element_type` when no row holds @p type
template <class Enum, std::size_t N>
[[nodiscard]] Enum from_element_type(const element_type_mapping<Enum> (&table)[N],
                                     element_type type, std::string_view function,
                                     std::string_view enum_type)
{
    if (const std::optional<Enum> value = mapped_value(table, type)) {
        return *value;
    }
    std::array<element_type, N> accepted{};
    for (std::size_t i = 0; i < N; ++i) {
        accepted[i] = table[i].type;
    }
    throw_unmapped_element_type(function, enum_type, type, accepted);
}

} // namespace detail
} // namespace gpu
