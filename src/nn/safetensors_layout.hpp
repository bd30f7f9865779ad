// Private to cudagap_nn: what the safetensors reader and writer share about the data's layout.
#pragma once

#include <gpu/nn/safetensors.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpu::nn::detail {

/// One tensor as a header describes it.
struct header_entry {
    std::string name;
    dtype type = dtype::f32;
    std::vector<std::size_t> shape;
    std::uint64_t begin = 0; // data_offsets, relative to the data after the header
    std::uint64_t end = 0;
};

/// product(shape) * element_size(type), or nothing when that overflows 64 bits (a shape with a
/// 0 holds no bytes, whatever its other dimensions) or @p type is not named.
[[nodiscard]] std::optional<std::uint64_t>
byte_count(dtype type, const std::vector<std::size_t>& shape) noexcept;

/// Checks that @p entries tile the @p data_size bytes after the header: each one's offsets hold
/// exactly its dtype and shape, inside the data, and sorted by offset they follow one another
/// from 0 to the end without a hole or an overlap (the reference implementation's rule). Sorts
/// @p entries by offset.
/// @throws format_error naming @p source, the tensor and the field otherwise
void check_layout(std::vector<header_entry>& entries, std::uint64_t data_size,
                  const std::string& source);

} // namespace gpu::nn::detail
