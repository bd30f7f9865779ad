/// @file element_type.hpp
/// @brief `gpu::element_type`: the floating-point formats of device data (FP32, FP64, FP16,
/// BF16) as a value, for the functions that take untyped memory (`gpu::check_finite`) and for
/// the library wrappers' own vocabularies to map onto.
///
/// @code
/// const gpu::non_finite_report r = gpu::check_finite(ptr, count, gpu::element_type::fp16, stream);
/// std::printf("%s: %s\n", gpu::to_string(gpu::element_type::fp16).data(), r.to_string().c_str());
/// @endcode
#pragma once

#include <gpu/detail/enum_names.hpp>

#include <cstddef>
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
/// @brief The names of the element types, in the enumeration's order.
inline constexpr enum_name<element_type> element_type_names[] = {{element_type::fp32, "FP32"},
                                                                 {element_type::fp64, "FP64"},
                                                                 {element_type::fp16, "FP16"},
                                                                 {element_type::bf16, "BF16"}};
} // namespace detail

/// @brief `FP32`, `FP64`, `FP16` or `BF16`; `unknown` for a value outside the enumeration.
[[nodiscard]] constexpr std::string_view to_string(element_type type) noexcept
{
    return detail::name_of(detail::element_type_names, type);
}

/// @brief Bytes per element: 4, 8, 2 or 2; 0 for a value outside the enumeration.
[[nodiscard]] constexpr std::size_t element_size(element_type type) noexcept
{
    switch (type) {
    case element_type::fp32: return 4;
    case element_type::fp64: return 8;
    case element_type::fp16:
    case element_type::bf16: return 2;
    }
    return 0;
}

} // namespace gpu
