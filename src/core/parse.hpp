// Private to cudagap_core: the parser of numbers in text that comes from outside the program (a
// CMake list compiled in; the tools' parsers of nvidia-smi's and nvcc's answers build on it).
// Strict and overflow-free: what it cannot read exactly it refuses, so a garbled answer never
// becomes a huge number. Not installed; the fuzzers (tests/fuzz) call it directly.
#pragma once

#include <optional>
#include <string_view>

namespace gpu::detail {

/// The value of @p text when it is one or more decimal digits (no sign, space or other text)
/// and fits an `int`; nothing otherwise.
[[nodiscard]] std::optional<int> parse_decimal(std::string_view text) noexcept;

} // namespace gpu::detail
