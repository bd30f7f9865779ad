// The parser of numbers in text from outside the program (see parse.hpp).
#include "parse.hpp"

#include <limits>

namespace gpu::detail {

std::optional<int> parse_decimal(std::string_view text) noexcept
{
    if (text.empty()) {
        return std::nullopt;
    }
    int value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        const int digit = c - '0';
        // std::stoi would accept a sign, spaces and trailing text, and throw std::out_of_range.
        if (value > (std::numeric_limits<int>::max() - digit) / 10) {
            return std::nullopt;
        }
        value = value * 10 + digit;
    }
    return value;
}

} // namespace gpu::detail
