// The strict JSON subset of safetensors headers (see json.hpp).
#include "json.hpp"

#include "text.hpp"

#include <gpu/nn/format_error.hpp>

#include <cstdio>
#include <limits>

namespace gpu::nn::detail {
namespace {

[[nodiscard]] bool in_range(unsigned char c, unsigned lo, unsigned hi) noexcept
{
    return c >= lo && c <= hi;
}

// The length of the well-formed UTF-8 sequence starting at text[pos], or 0 when there is none
// (the table of well-formed byte sequences in the Unicode standard, chapter 3).
[[nodiscard]] std::size_t utf8_length_at(std::string_view text, std::size_t pos) noexcept
{
    const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[pos + i]); };
    const auto continuation = [&](std::size_t i) { return in_range(byte(i), 0x80, 0xBF); };
    const unsigned char lead = byte(0);
    const std::size_t left = text.size() - pos;
    if (lead < 0x80) {
        return 1;
    }
    if (in_range(lead, 0xC2, 0xDF)) {
        return left >= 2 && continuation(1) ? 2 : 0;
    }
    if (in_range(lead, 0xE0, 0xEF)) {
        if (left < 3 || !continuation(2)) {
            return 0;
        }
        const unsigned lo = lead == 0xE0 ? 0xA0 : 0x80; // no overlong forms
        const unsigned hi = lead == 0xED ? 0x9F : 0xBF; // no surrogates
        return in_range(byte(1), lo, hi) ? 3 : 0;
    }
    if (in_range(lead, 0xF0, 0xF4)) {
        if (left < 4 || !continuation(2) || !continuation(3)) {
            return 0;
        }
        const unsigned lo = lead == 0xF0 ? 0x90 : 0x80; // no overlong forms
        const unsigned hi = lead == 0xF4 ? 0x8F : 0xBF; // nothing past U+10FFFF
        return in_range(byte(1), lo, hi) ? 4 : 0;
    }
    return 0;
}

void append_utf8(std::string& out, std::uint32_t code_point)
{
    if (code_point < 0x80) {
        out += static_cast<char>(code_point);
    } else if (code_point < 0x800) {
        out += static_cast<char>(0xC0 | (code_point >> 6));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else if (code_point < 0x10000) {
        out += static_cast<char>(0xE0 | (code_point >> 12));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (code_point >> 18));
        out += static_cast<char>(0x80 | ((code_point >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((code_point >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (code_point & 0x3F));
    }
}

[[nodiscard]] std::string hex_byte(unsigned char c)
{
    return hex(c, 2);
}

} // namespace

bool is_utf8(std::string_view text) noexcept
{
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t length = utf8_length_at(text, pos);
        if (length == 0) {
            return false;
        }
        pos += length;
    }
    return true;
}

void append_json_string(std::string& out, std::string_view text)
{
    out += '"';
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\u%04X", static_cast<unsigned>(u));
            out += escape;
        } else {
            out += c;
        }
    }
    out += '"';
}

void json_reader::fail(const std::string& problem) const
{
    throw format_error(source_, field_,
                       problem + " at byte " + std::to_string(position_) + " of the header");
}

void json_reader::skip_whitespace() noexcept
{
    while (position_ < text_.size()) {
        const char c = text_[position_];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            return;
        }
        ++position_;
    }
}

bool json_reader::at_end() noexcept
{
    skip_whitespace();
    return position_ == text_.size();
}

bool json_reader::next_is(char c) noexcept
{
    skip_whitespace();
    return position_ < text_.size() && text_[position_] == c;
}

bool json_reader::consume(char c) noexcept
{
    if (!next_is(c)) {
        return false;
    }
    ++position_;
    return true;
}

std::string json_reader::next_description() const
{
    if (position_ >= text_.size()) {
        return "the end of the header";
    }
    const auto u = static_cast<unsigned char>(text_[position_]);
    if (u >= 0x20 && u < 0x7F) {
        return std::string{'\'', text_[position_], '\''};
    }
    return "byte " + hex_byte(u);
}

void json_reader::expect(char c)
{
    if (!consume(c)) {
        fail("expected '" + std::string(1, c) + "', found " + next_description());
    }
}

std::uint32_t json_reader::read_hex4()
{
    std::uint32_t value = 0;
    for (int i = 0; i < 4; ++i, ++position_) {
        const char c = position_ < text_.size() ? text_[position_] : '\0';
        const int digit = c >= '0' && c <= '9'   ? c - '0'
                          : c >= 'a' && c <= 'f' ? c - 'a' + 10
                          : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                                 : -1;
        if (digit < 0) {
            fail("\\u needs four hexadecimal digits");
        }
        value = value * 16 + static_cast<std::uint32_t>(digit);
    }
    return value;
}

// After the backslash: one escape, or a \uXXXX (a surrogate pair as one character).
void json_reader::read_escape(std::string& out)
{
    const char c = position_ < text_.size() ? text_[position_++] : '\0';
    switch (c) {
    case '"': out += '"'; return;
    case '\\': out += '\\'; return;
    case '/': out += '/'; return;
    case 'b': out += '\b'; return;
    case 'f': out += '\f'; return;
    case 'n': out += '\n'; return;
    case 'r': out += '\r'; return;
    case 't': out += '\t'; return;
    case 'u': break;
    default: --position_; fail("unknown escape in a string");
    }
    std::uint32_t code_point = read_hex4();
    if (code_point >= 0xDC00 && code_point <= 0xDFFF) {
        fail("a lone low surrogate (\\uDC00-\\uDFFF) in a string");
    }
    if (code_point >= 0xD800 && code_point <= 0xDBFF) {
        if (text_.substr(position_, 2) != "\\u") {
            fail("a high surrogate not followed by a low one in a string");
        }
        position_ += 2;
        const std::uint32_t low = read_hex4();
        if (low < 0xDC00 || low > 0xDFFF) {
            fail("a high surrogate not followed by a low one in a string");
        }
        code_point = 0x10000 + ((code_point - 0xD800) << 10) + (low - 0xDC00);
    }
    append_utf8(out, code_point);
}

std::string json_reader::read_string()
{
    expect('"');
    std::string out;
    while (true) {
        if (position_ >= text_.size()) {
            fail("a string that does not end");
        }
        const auto u = static_cast<unsigned char>(text_[position_]);
        if (u == '"') {
            ++position_;
            return out;
        }
        if (u == '\\') {
            ++position_;
            read_escape(out);
        } else if (u < 0x20) {
            fail("control character " + hex_byte(u) + " in a string (JSON needs it escaped)");
        } else {
            const std::size_t length = utf8_length_at(text_, position_);
            if (length == 0) {
                fail("a string that is not UTF-8");
            }
            out.append(text_.substr(position_, length));
            position_ += length;
        }
    }
}

std::uint64_t json_reader::read_unsigned()
{
    skip_whitespace();
    const std::size_t start = position_;
    const auto digit_at = [&](std::size_t i) {
        return i < text_.size() && text_[i] >= '0' && text_[i] <= '9';
    };
    if (!digit_at(position_)) {
        fail(position_ < text_.size() && text_[position_] == '-'
                 ? "a negative number"
                 : "expected a number, found " + next_description());
    }
    if (text_[position_] == '0' && digit_at(position_ + 1)) {
        fail("a number with a leading zero");
    }
    std::uint64_t value = 0;
    for (; digit_at(position_); ++position_) {
        const auto digit = static_cast<std::uint64_t>(text_[position_] - '0');
        if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
            position_ = start;
            fail("a number larger than 2^64 - 1");
        }
        value = value * 10 + digit;
    }
    if (position_ < text_.size() &&
        (text_[position_] == '.' || text_[position_] == 'e' || text_[position_] == 'E')) {
        fail("a number that is not an integer");
    }
    return value;
}

} // namespace gpu::nn::detail
