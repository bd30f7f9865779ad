// Fuzzes gpu::nn::parse_idx (include/gpu/nn/idx.hpp): any bytes, raw or gzip, are an IDX array
// or a gpu::nn::format_error, never a crash, a read out of bounds, a hang or another exception.
// A raw input is also judged by a reference reader written here with 128-bit sizes: parse_idx
// must accept exactly the inputs it accepts, and give the same elements (each one's bytes
// reversed from big-endian). For gzip input, what is accepted must be as long as its dims say.
#include <gpu/nn/idx.hpp>

#include "fuzz_support.hpp"

#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

constexpr std::uint64_t max_bytes = 1 << 20; // keeps each run small; the limit is checked too

// The reference: the elements in host order, or nothing when the raw input is not valid IDX.
std::optional<std::vector<std::byte>> reference(const std::uint8_t* data, std::size_t size)
{
    if (size < 4 || data[0] != 0 || data[1] != 0) {
        return std::nullopt;
    }
    std::size_t element = 0;
    switch (data[2]) {
    case 0x08:
    case 0x09: element = 1; break;
    case 0x0B: element = 2; break;
    case 0x0C:
    case 0x0D: element = 4; break;
    case 0x0E: element = 8; break;
    default: return std::nullopt;
    }
    const std::size_t dims = data[3];
    if (size < 4 + 4 * dims) {
        return std::nullopt;
    }
    unsigned __int128 bytes = element; // 255 dims of 2^32: never wraps before passing the limit
    for (std::size_t i = 0; i < dims; ++i) {
        const std::uint8_t* d = data + 4 + 4 * i;
        bytes *= (std::uint32_t{d[0]} << 24) | (std::uint32_t{d[1]} << 16) |
                 (std::uint32_t{d[2]} << 8) | d[3];
        if (bytes > max_bytes) {
            bytes = max_bytes + 1; // stays past the limit (a later 0 does not bring it back)
        }
    }
    bool has_zero = false;
    for (std::size_t i = 0; i < dims; ++i) {
        has_zero |= data[4 + 4 * i] == 0 && data[5 + 4 * i] == 0 && data[6 + 4 * i] == 0 &&
                    data[7 + 4 * i] == 0;
    }
    const std::size_t header = 4 + 4 * dims;
    const unsigned __int128 expected = has_zero ? 0 : bytes;
    if (expected > max_bytes || expected != size - header) {
        return std::nullopt;
    }
    std::vector<std::byte> out(size - header);
    for (std::size_t i = 0; i < out.size(); ++i) {
        const std::size_t first = i - i % element;
        out[i] = static_cast<std::byte>(data[header + first + (element - 1 - i % element)]);
    }
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
    std::optional<gpu::nn::idx_array> array;
    try {
        array = gpu::nn::parse_idx(bytes, "fuzz", max_bytes);
    } catch (const gpu::nn::format_error&) {
        // refused, as documented
    } catch (const std::exception& e) {
        fuzz::finding(std::string("parse_idx threw something other than format_error: ") +
                      e.what());
    }
    if (array) {
        std::uint64_t count = 1;
        for (const std::size_t dim : array->dims) {
            count *= dim;
        }
        fuzz::require(count * gpu::nn::element_size(array->type) == array->data.size(),
                      "the data's size differs from what the dims say");
    }
    const bool gzip = size >= 2 && data[0] == 0x1F && data[1] == 0x8B;
    if (!gzip) {
        const std::optional<std::vector<std::byte>> expected = reference(data, size);
        fuzz::require(array.has_value() == expected.has_value(),
                      array ? "parse_idx accepted raw input the reference refuses"
                            : "parse_idx refused raw input the reference accepts");
        fuzz::require(!array || array->data == *expected,
                      "the elements differ from the reference's");
    }
    return 0;
}
