// What the cuDNN wrapper's fuzzers share: int values biased to where cuDNN's 32-bit arithmetic
// breaks, enumerators that are now and then none of the named ones, and a saturating product.
#pragma once

#include "fuzz_support.hpp"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fuzz::dnn {

/// An int chosen by the first byte: small (0..9, most often), a signed byte, near 2^30, near
/// INT_MAX, near 46341 (whose square passes INT_MAX) or 65536, or any 32 bits.
[[nodiscard]] inline int take_int(input& in) noexcept
{
    const auto mode = in.take<std::uint8_t>();
    const auto low = in.take<std::uint8_t>();
    const int offset = static_cast<std::int8_t>(low);
    switch (mode % 8) {
    case 0:
    case 1:
    case 2: return low % 10;
    case 3: return offset;
    case 4: return (1 << 30) + offset;
    case 5: return INT_MAX - low;
    case 6: return ((mode & 0x80) != 0 ? 65536 : 46341) + offset;
    default: return in.take<std::int32_t>();
    }
}

/// @p count values of `take_int`.
[[nodiscard]] inline std::vector<int> take_ints(input& in, std::size_t count)
{
    std::vector<int> values(count);
    for (int& value : values) {
        value = take_int(in);
    }
    return values;
}

/// One of an enum's @p named enumerators (0 .. named - 1), or rarely an unnamed raw value (a
/// byte cast to the enum, which the library must refuse rather than map to a default).
template <class Enum>
[[nodiscard]] Enum take_enum(input& in, int named) noexcept
{
    const auto byte = in.take<std::uint8_t>();
    return static_cast<Enum>(byte < 248 ? byte % named : static_cast<std::int8_t>(byte));
}

/// The product of @p values in 128 bits, or -1 once it passes INT_MAX (or a value is not
/// positive): what cuDNN's int element counts can hold.
[[nodiscard]] inline long long int_product(const std::vector<int>& values) noexcept
{
    __int128 product = 1;
    for (const int value : values) {
        if (value <= 0) {
            return -1;
        }
        product *= value;
        if (product > INT_MAX) {
            return -1;
        }
    }
    return static_cast<long long>(product);
}

} // namespace fuzz::dnn
