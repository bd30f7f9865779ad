// Private to cudagap_nn: the pieces of its error messages that the readers share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace gpu::nn::detail {

/// @p text for an error message: control characters as `\xNN`, cut (at a character boundary)
/// after 100 bytes, so that a hostile name cannot flood or garble the message.
[[nodiscard]] std::string printable(std::string_view text);

/// `[60000, 28, 28]`; `[]` for none.
[[nodiscard]] std::string dims_text(std::span<const std::size_t> dims);

/// @p value in hexadecimal with at least @p digits digits: `0x00000803`.
[[nodiscard]] std::string hex(std::uint32_t value, int digits);

} // namespace gpu::nn::detail
