// What cudagap's fuzzers share: reading typed values from libFuzzer's bytes, and reporting a
// finding (an abort, which libFuzzer records with the input that caused it).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>

namespace fuzz {

/// Reports a finding and aborts: libFuzzer keeps the input as a crash file.
[[noreturn]] inline void finding(const std::string& what)
{
    std::fprintf(stderr, "\n*** cudagap fuzz finding: %s\n", what.c_str());
    std::abort();
}

/// A finding unless @p ok; @p what is built only when needed.
template <class Message>
void require(bool ok, Message&& what)
{
    if (!ok) {
        if constexpr (std::is_invocable_v<Message>) {
            finding(what());
        } else {
            finding(std::string(what));
        }
    }
}

/// Runs @p work and returns whether it returned; `std::invalid_argument` (the library's answer
/// to a bad argument) means it refused. Any other exception is a finding.
template <class Work>
bool accepted(Work&& work, const char* what)
{
    try {
        work();
        return true;
    } catch (const std::invalid_argument&) {
        return false;
    } catch (const std::exception& e) {
        finding(std::string(what) + " threw " + typeid(e).name() +
                " (not std::invalid_argument): " + e.what());
    } catch (...) {
        finding(std::string(what) + " threw something that is not a std::exception");
    }
}

/// libFuzzer's bytes, read front to back; past the end every value is zero.
class input {
public:
    input(const std::uint8_t* data, std::size_t size) noexcept : data_(data), size_(size) {}

    [[nodiscard]] bool empty() const noexcept { return position_ >= size_; }

    /// The next sizeof(T) bytes as a T (an integer or bool).
    template <class T>
    [[nodiscard]] T take() noexcept
    {
        static_assert(std::is_integral_v<T>);
        using U =
            std::make_unsigned_t<std::conditional_t<std::is_same_v<T, bool>, unsigned char, T>>;
        U value = 0;
        for (std::size_t i = 0; i < sizeof(T); ++i) {
            value = static_cast<U>((static_cast<std::uint64_t>(value) << 8) | byte());
        }
        if constexpr (std::is_same_v<T, bool>) {
            return (value & 1U) != 0;
        } else {
            return static_cast<T>(value);
        }
    }

    /// A 64-bit value biased to where arithmetic breaks: small numbers, numbers near 2^31 and
    /// 2^32, near 2^62 and the ends of the range, or any 64 bits, chosen by the first byte.
    [[nodiscard]] std::int64_t take_edgy() noexcept
    {
        const std::uint8_t mode = byte();
        const auto offset = static_cast<std::int64_t>(static_cast<std::int8_t>(byte()));
        switch (mode % 8) {
        case 0:
        case 1:
        case 2: return offset; // -128 .. 127
        case 3: return (std::int64_t{1} << 31) + offset;
        case 4: return (std::int64_t{1} << 32) + offset;
        case 5: return (std::int64_t{1} << 62) + offset;
        case 6:
            return offset < 0 ? std::numeric_limits<std::int64_t>::min() - (offset + 1)
                              : std::numeric_limits<std::int64_t>::max() - offset;
        default: return take<std::int64_t>();
        }
    }

    /// Up to @p max_length bytes (the length is the next byte, or two when @p max_length > 255).
    [[nodiscard]] std::string take_string(std::size_t max_length = 255)
    {
        std::size_t length = max_length > 255 ? take<std::uint16_t>() : byte();
        length = std::min({length, max_length, size_ - std::min(position_, size_)});
        std::string text(reinterpret_cast<const char*>(data_ + position_), length);
        position_ += length;
        return text;
    }

    /// Every byte not read yet.
    [[nodiscard]] std::string_view rest() noexcept
    {
        const std::size_t start = std::min(position_, size_);
        position_ = size_;
        return {reinterpret_cast<const char*>(data_ + start), size_ - start};
    }

private:
    std::uint8_t byte() noexcept
    {
        return position_ < size_ ? data_[position_++] : std::uint8_t{0};
    }

    const std::uint8_t* data_;
    std::size_t size_;
    std::size_t position_ = 0;
};

} // namespace fuzz
