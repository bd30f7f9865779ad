// The IDX reader (see include/gpu/nn/idx.hpp): magic, dimensions and data, read through one
// byte stream whether the file is raw or gzip, and checked against each other.
#include "byte_stream.hpp"
#include "file_io.hpp"
#include "text.hpp"

#include <gpu/detail/enum_names.hpp>
#include <gpu/nn/idx.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <limits>
#include <utility>

namespace gpu::nn {
namespace {

using detail::dims_text;
using detail::hex;

constexpr std::array<idx_type, 6> idx_types{idx_type::u8,  idx_type::i8,  idx_type::i16,
                                            idx_type::i32, idx_type::f32, idx_type::f64};

std::uint32_t big_endian(std::span<const std::byte, 4> bytes) noexcept
{
    std::uint32_t value = 0;
    for (const std::byte b : bytes) {
        value = (value << 8) | static_cast<std::uint32_t>(b);
    }
    return value;
}

// Exactly @p out.size() bytes of the header, or a format_error saying the file ends first.
void read_header_part(detail::byte_stream& in, std::span<std::byte> out, const std::string& source,
                      const char* field, const std::string& needed)
{
    const std::size_t got = in.read(out);
    if (got < out.size()) {
        throw format_error(source, field,
                           "the file ends after " + std::to_string(got) + " of the " +
                               std::to_string(out.size()) + " bytes of " + needed +
                               " (truncated file)");
    }
}

// The element type and the number of dimensions, from the magic number.
std::pair<idx_type, std::size_t> read_magic(detail::byte_stream& in, const std::string& source)
{
    std::array<std::byte, 4> magic{};
    read_header_part(in, magic, source, "magic", "the magic number");
    const std::uint32_t value = big_endian(magic);
    if (magic[0] != std::byte{0} || magic[1] != std::byte{0}) {
        throw format_error(source, "magic",
                           hex(value, 8) +
                               ": an IDX file starts with two zero bytes (MNIST's images start "
                               "0x00000803, its labels 0x00000801): not an IDX file?");
    }
    const auto type = static_cast<idx_type>(magic[2]);
    if (std::ranges::find(idx_types, type) == idx_types.end()) {
        throw format_error(
            source, "magic",
            hex(value, 8) + ": unknown element type " +
                hex(static_cast<std::uint32_t>(magic[2]), 2) +
                " (IDX has 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64)");
    }
    return {type, static_cast<std::size_t>(magic[3])};
}

std::vector<std::size_t> read_dims(detail::byte_stream& in, std::size_t count,
                                   const std::string& source)
{
    std::vector<std::byte> bytes(4 * count);
    read_header_part(in, bytes, source, "dims",
                     "the " + std::to_string(count) + " dimensions the magic number names");
    std::vector<std::size_t> dims(count);
    for (std::size_t i = 0; i < count; ++i) {
        dims[i] = big_endian(std::span<const std::byte, 4>(bytes.data() + 4 * i, 4));
    }
    return dims;
}

// The data's size in bytes, checked for overflow and against the limit.
std::size_t data_bytes(idx_type type, const std::vector<std::size_t>& dims, std::uint64_t max_bytes,
                       const std::string& source)
{
    std::uint64_t bytes = element_size(type);
    if (std::ranges::find(dims, std::size_t{0}) != dims.end()) {
        return 0;
    }
    for (const std::size_t dim : dims) {
        if (dim > std::numeric_limits<std::uint64_t>::max() / bytes) {
            throw format_error(source, "dims",
                               dims_text(dims) + " of " + std::string(to_string(type)) +
                                   " hold more than 2^64 - 1 bytes");
        }
        bytes *= dim;
    }
    if (bytes > max_bytes || bytes > std::numeric_limits<std::size_t>::max()) {
        throw format_error(source, "dims",
                           dims_text(dims) + " of " + std::string(to_string(type)) + " hold " +
                               std::to_string(bytes) + " bytes, over the limit of " +
                               std::to_string(max_bytes) + " (max_bytes)");
    }
    return static_cast<std::size_t>(bytes);
}

// The data, grown as it arrives (never more than twice what the stream really holds, whatever
// the dimensions claim), then checked to end where they say.
std::vector<std::byte> read_data(detail::byte_stream& in, std::size_t total,
                                 const std::vector<std::size_t>& dims, const std::string& source)
{
    std::vector<std::byte> data;
    std::size_t have = 0;
    while (have < total) {
        const std::size_t want = std::min(total - have, std::max<std::size_t>(have, 1 << 16));
        data.resize(have + want);
        const std::size_t got = in.read(std::span(data).subspan(have, want));
        have += got;
        if (got < want) {
            throw format_error(source, "data",
                               "dims " + dims_text(dims) + " need " + std::to_string(total) +
                                   " bytes of data, the file holds " + std::to_string(have) +
                                   " (truncated file)");
        }
    }
    std::array<std::byte, 1> extra{};
    if (in.read(extra) != 0) {
        throw format_error(source, "data",
                           "the file holds more than the " + std::to_string(total) +
                               " bytes of data that dims " + dims_text(dims) + " need");
    }
    return data;
}

// IDX is big-endian: put each element in this machine's order.
void to_native_order(std::vector<std::byte>& data, std::size_t size) noexcept
{
    if constexpr (std::endian::native == std::endian::little) {
        for (std::size_t i = 0; size > 1 && i + size <= data.size(); i += size) {
            std::reverse(data.begin() + static_cast<std::ptrdiff_t>(i),
                         data.begin() + static_cast<std::ptrdiff_t>(i + size));
        }
    }
}

// The magic number of @p array, for messages.
std::string magic_of(const idx_array& array)
{
    return hex((static_cast<std::uint32_t>(array.type) << 8) |
                   static_cast<std::uint32_t>(array.dims.size()),
               8);
}

} // namespace

constexpr gpu::detail::enum_name<idx_type> idx_type_names[] = {
    {idx_type::u8, "u8"},   {idx_type::i8, "i8"},   {idx_type::i16, "i16"},
    {idx_type::i32, "i32"}, {idx_type::f32, "f32"}, {idx_type::f64, "f64"}};
std::string_view to_string(idx_type type) noexcept
{
    return gpu::detail::name_of(idx_type_names, type);
}

std::size_t element_size(idx_type type) noexcept
{
    switch (type) {
    case idx_type::u8:
    case idx_type::i8: return 1;
    case idx_type::i16: return 2;
    case idx_type::i32:
    case idx_type::f32: return 4;
    case idx_type::f64: return 8;
    }
    return 0;
}

bool idx_reads_gzip() noexcept
{
    return detail::have_zlib();
}

idx_array parse_idx(std::span<const std::byte> bytes, std::string_view source,
                    std::uint64_t max_bytes)
{
    const std::string name(source);
    const std::unique_ptr<detail::byte_stream> in =
        detail::is_gzip(bytes) ? detail::gzip_stream(bytes, name) : detail::raw_stream(bytes);
    idx_array array;
    const auto [type, dim_count] = read_magic(*in, name);
    array.type = type;
    array.dims = read_dims(*in, dim_count, name);
    const std::size_t total = data_bytes(type, array.dims, max_bytes, name);
    array.data = read_data(*in, total, array.dims, name);
    to_native_order(array.data, element_size(type));
    return array;
}

idx_array read_idx(const std::filesystem::path& path, std::uint64_t max_bytes)
{
    const std::vector<std::byte> bytes = detail::read_whole_file(path, "gpu::nn::read_idx");
    return parse_idx(bytes, path.string(), max_bytes);
}

idx_images read_idx_images(const std::filesystem::path& path)
{
    idx_array array = read_idx(path);
    if (array.type != idx_type::u8 || array.dims.size() != 3) {
        throw format_error(path.string(), "magic",
                           magic_of(array) + " (" + std::string(to_string(array.type)) + " in " +
                               std::to_string(array.dims.size()) +
                               " dimensions), not 0x00000803 (u8 images [n, rows, cols])");
    }
    idx_images images{.count = array.dims[0], .rows = array.dims[1], .cols = array.dims[2]};
    const auto* first = reinterpret_cast<const std::uint8_t*>(array.data.data());
    images.pixels.assign(first, first + array.data.size());
    return images;
}

std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path)
{
    idx_array array = read_idx(path);
    if (array.type != idx_type::u8 || array.dims.size() != 1) {
        throw format_error(path.string(), "magic",
                           magic_of(array) + " (" + std::string(to_string(array.type)) + " in " +
                               std::to_string(array.dims.size()) +
                               " dimensions), not 0x00000801 (u8 labels [n])");
    }
    const auto* first = reinterpret_cast<const std::uint8_t*>(array.data.data());
    return {first, first + array.data.size()};
}

idx_dataset read_idx_dataset(const std::filesystem::path& images_path,
                             const std::filesystem::path& labels_path)
{
    idx_dataset dataset{.images = read_idx_images(images_path),
                        .labels = read_idx_labels(labels_path)};
    if (dataset.labels.size() != dataset.images.count) {
        throw format_error(labels_path.string(), "count",
                           std::to_string(dataset.labels.size()) + " labels, but " +
                               images_path.string() + " holds " +
                               std::to_string(dataset.images.count) + " images");
    }
    return dataset;
}

} // namespace gpu::nn
