// std::source_location for clang++ before 15 on libstdc++ 12, whose <source_location> needs
// __builtin_source_location (clang 15 and later): without it no cudagap header compiles there.
//
// Force-included (-include) by the clang-only builds of the tests: the designated-initializer
// check and the fuzz targets. Those compile every cudagap source they use with this same
// definition; never link them with objects built against the real one (the layouts differ).
// Where the library has std::source_location this header only includes it.
#pragma once

#include <version>
#if __has_include(<source_location>)
#include <source_location>
#endif

#if !defined(__cpp_lib_source_location)
namespace std { // NOLINT(cert-dcl58-cpp): stands in for the missing standard type

/// @brief The call site, from the compiler builtins clang 14 has.
struct source_location {
    /// @brief The location of the caller (of the call whose default argument this is).
    static constexpr source_location current(const char* file = __builtin_FILE(),
                                             const char* function = __builtin_FUNCTION(),
                                             unsigned line = __builtin_LINE(),
                                             unsigned column = __builtin_COLUMN()) noexcept
    {
        source_location here;
        here.file_ = file;
        here.function_ = function;
        here.line_ = line;
        here.column_ = column;
        return here;
    }

    constexpr source_location() noexcept = default;
    [[nodiscard]] constexpr const char* file_name() const noexcept { return file_; }
    [[nodiscard]] constexpr const char* function_name() const noexcept { return function_; }
    [[nodiscard]] constexpr unsigned line() const noexcept { return line_; }
    [[nodiscard]] constexpr unsigned column() const noexcept { return column_; }

private:
    const char* file_ = "";
    const char* function_ = "";
    unsigned line_ = 0;
    unsigned column_ = 0;
};

} // namespace std
#endif
