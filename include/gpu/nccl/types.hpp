/// @file types.hpp
/// @brief What a collective computes with: `gpu::nccl::reduction` (sum, average, max, min,
/// product) and the element types NCCL moves, mapped to `ncclDataType_t` at compile time
/// (`gpu::nccl::element`, `gpu::nccl::data_type_of`).
///
/// @code
/// static_assert(gpu::nccl::data_type_of<__nv_bfloat16> == ncclBfloat16);
/// gpu::nccl::all_reduce(comm, grads, gpu::nccl::reduction::avg, stream);  // float -> ncclFloat32
/// @endcode
#pragma once

#include <gpu/detail/enum_names.hpp>
#include <gpu/nccl/version.hpp> // NCCL's header, and the oldest release cudagap accepts

#include <cuda_bf16.h> // first: nccl.h declares ncclBfloat16 only when the bf16 types exist
#include <cuda_fp16.h>
#include <nccl.h>

#include <cstdint>
#include <string_view>
#include <type_traits>

namespace gpu::nccl {

/// @brief How a reducing collective (`all_reduce`, `reduce_scatter`) combines the ranks'
/// elements. The order is fixed (the compiled part receives it as an integer).
enum class reduction {
    sum,     ///< the sum over the ranks (`ncclSum`, `torch.distributed.ReduceOp.SUM`)
    avg,     ///< the sum divided by the number of ranks (`ncclAvg`; integers round toward zero)
    max,     ///< the largest value (`ncclMax`)
    min,     ///< the smallest value (`ncclMin`)
    product, ///< the product (`ncclProd`)
};

namespace detail {

/// @brief The names of the reductions, which also tell a named one from an integer cast.
inline constexpr gpu::detail::enum_name<reduction> reduction_names[] = {
    {reduction::sum, "sum"},
    {reduction::avg, "avg"},
    {reduction::max, "max"},
    {reduction::min, "min"},
    {reduction::product, "product"}};

} // namespace detail

/// @brief `sum`, `avg`, `max`, `min` or `product`; `unknown` for a value outside the enumeration.
[[nodiscard]] constexpr std::string_view to_string(reduction op) noexcept
{
    return gpu::detail::name_of(detail::reduction_names, op);
}

namespace detail {

/// @brief A list of types.
template <class... Types>
struct type_list {};

/// @brief The element types NCCL moves, in the order of their `ncclDataType_t` values
/// (`ncclInt8`, 0, to `ncclBfloat16`, 9): a type's position is its data type.
using element_types = type_list<std::int8_t, std::uint8_t, std::int32_t, std::uint32_t,
                                std::int64_t, std::uint64_t, __half, float, double, __nv_bfloat16>;

/// @brief The position of @p T among @p Types; -1 when it is not one of them.
template <class T, class... Types>
[[nodiscard]] consteval int position_in(type_list<Types...>) noexcept
{
    int position = 0;
    const bool found = ((std::is_same_v<T, Types> || (++position, false)) || ...);
    return found ? position : -1;
}

/// @brief @p T's position among `element_types`: its `ncclDataType_t`, or -1.
template <class T>
inline constexpr int element_position = position_in<T>(element_types{});

} // namespace detail

/// @brief An element type that NCCL moves and reduces: `std::int8_t`, `std::uint8_t`,
/// `std::int32_t`, `std::uint32_t`, `std::int64_t`, `std::uint64_t`, `__half`, `float`,
/// `double` and `__nv_bfloat16`. Another type does not compile (no silent reinterpretation).
template <class T>
concept element = (detail::element_position<T> >= 0);

/// @brief The `ncclDataType_t` of @p T, fixed at compile time.
template <element T>
inline constexpr auto data_type_of = static_cast<ncclDataType_t>(detail::element_position<T>);

/// @brief NCCL's name of a data type without its prefix (`Float32`, `Bfloat16`, `Int64`, ...);
/// `unknown` for a value this cudagap does not know.
[[nodiscard]] std::string_view to_string(ncclDataType_t type) noexcept;

} // namespace gpu::nccl
