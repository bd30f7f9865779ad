// The pieces of the nn readers' error messages (see text.hpp).
#include "text.hpp"

#include <cstdio>

namespace gpu::nn::detail {

std::string printable(std::string_view text)
{
    constexpr std::size_t limit = 100;
    std::size_t cut = text.size();
    if (cut > limit) {
        cut = limit;
        while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) {
            --cut; // not inside a character
        }
    }
    std::string out;
    for (const char c : text.substr(0, cut)) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7F) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\x%02X", static_cast<unsigned>(u));
            out += escape;
        } else {
            out += c;
        }
    }
    if (cut < text.size()) {
        out += "... (";
        out += std::to_string(text.size());
        out += " bytes)";
    }
    return out;
}

std::string dims_text(std::span<const std::size_t> dims)
{
    std::string text = "[";
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (i > 0) {
            text += ", ";
        }
        text += std::to_string(dims[i]);
    }
    text += ']';
    return text;
}

std::string hex(std::uint32_t value, int digits)
{
    char text[16];
    std::snprintf(text, sizeof text, "0x%0*X", digits, static_cast<unsigned>(value));
    return text;
}

} // namespace gpu::nn::detail
