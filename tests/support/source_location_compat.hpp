// std::source_location for clang++ before 15 on libstdc++ 12, whose <source_location> needs
// __builtin_source_location (clang 15 and later): without it no cudagap header compiles there.
//
// Force-included (-include) by the clang-only builds of the tests: the designated-initializer
// check (tests/headers) and the fuzz build (tests/fuzz). Those compile every cudagap source they
// use with this same definition; never link them with objects built against the real one (the
// layouts differ). With a newer clang, or with g++, this header does nothing.
#pragma once

#include <version>

#if defined(__clang__) && !defined(__cpp_lib_source_location)
#include <cstdint>
#include <source_location> // empty here; included now so that a later include adds nothing

namespace std { // NOLINT(cert-dcl58-cpp): the standard type this library lacks

struct source_location {
    // constexpr, not consteval as in the standard: clang 14 refuses a consteval call in a
    // default argument of a template ("cannot take address of consteval function"), which is
    // how cudagap's functions take their caller's location.
    static constexpr source_location current(const char* file = __builtin_FILE(),
                                             const char* function = __builtin_FUNCTION(),
                                             uint_least32_t line = __builtin_LINE(),
                                             uint_least32_t column = __builtin_COLUMN()) noexcept
    {
        source_location here;
        here.file_ = file;
        here.function_ = function;
        here.line_ = line;
        here.column_ = column;
        return here;
    }

    constexpr source_location() noexcept = default;
    [[nodiscard]] constexpr uint_least32_t line() const noexcept { return line_; }
    [[nodiscard]] constexpr uint_least32_t column() const noexcept { return column_; }
    [[nodiscard]] constexpr const char* file_name() const noexcept { return file_; }
    [[nodiscard]] constexpr const char* function_name() const noexcept { return function_; }

private:
    const char* file_ = "";
    const char* function_ = "";
    uint_least32_t line_ = 0;
    uint_least32_t column_ = 0;
};

} // namespace std
#endif
