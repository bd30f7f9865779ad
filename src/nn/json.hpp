// Private to cudagap_nn: the strict reader of the JSON subset that a safetensors header uses
// (objects, arrays, strings with every escape, non-negative integers), and the string escaping
// its writer needs. Not installed; the fuzzers reach it through parse_safetensors.
//
// Why our own: the core has no JSON parser and nlohmann-json is optional in cudagap (only the
// cudagap::json component needs it), so a checkpoint reader built on it would make a required
// piece of nn depend on an optional package. The subset is small, and a reader driven by the
// format's schema recurses no deeper than the format nests (three levels), so no input can
// exhaust the stack.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>

namespace gpu::nn::detail {

/// Whether @p text is well-formed UTF-8 (no overlong forms, surrogates or code points past
/// U+10FFFF), as a safetensors header must be.
[[nodiscard]] bool is_utf8(std::string_view text) noexcept;

/// Appends @p text to @p out as a JSON string: quoted, with `"`, `\` and control characters
/// escaped, other bytes as they are.
void append_json_string(std::string& out, std::string_view text);

/// Reads JSON text front to back. Every syntax error is a gpu::nn::format_error naming the
/// source, the field being read (set by the caller: "header", "tensor 'x' shape") and the
/// byte of the header where it happened.
class json_reader {
public:
    json_reader(std::string_view text, std::string source) noexcept
        : text_(text), source_(std::move(source))
    {}

    /// What errors name as the bad field from now on.
    void set_field(std::string field) { field_ = std::move(field); }

    /// Throws the format_error for @p problem at the current position.
    [[noreturn]] void fail(const std::string& problem) const;

    /// Whether only whitespace is left.
    [[nodiscard]] bool at_end() noexcept;

    /// Consumes @p c (after whitespace) when it comes next; says whether it did.
    bool consume(char c) noexcept;

    /// Consumes @p c (after whitespace), or fails naming what came instead.
    void expect(char c);

    /// A string, unescaped to UTF-8.
    [[nodiscard]] std::string read_string();

    /// A non-negative integer that fits 64 bits (no sign, fraction, exponent or leading zero).
    [[nodiscard]] std::uint64_t read_unsigned();

    /// An object: calls @p member(key) for each key, with the reader just after its ':' (the
    /// member reads the value). Keys repeat as they come: the caller decides.
    template <class Member>
    void read_object(Member&& member)
    {
        expect('{');
        if (consume('}')) {
            return;
        }
        do {
            if (!next_is('"')) {
                fail("expected a string key");
            }
            std::string key = read_string();
            expect(':');
            member(std::move(key));
        } while (consume(','));
        expect('}');
    }

    /// An array: calls @p element() for each element (which reads it).
    template <class Element>
    void read_array(Element&& element)
    {
        expect('[');
        if (consume(']')) {
            return;
        }
        do {
            element();
        } while (consume(','));
        expect(']');
    }

private:
    void skip_whitespace() noexcept;
    [[nodiscard]] bool next_is(char c) noexcept;
    void read_escape(std::string& out);
    [[nodiscard]] std::uint32_t read_hex4();
    [[nodiscard]] std::string next_description() const;

    std::string_view text_;
    std::string source_;
    std::string field_ = "header";
    std::size_t position_ = 0;
};

} // namespace gpu::nn::detail
