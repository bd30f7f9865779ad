// Writing safetensors checkpoints: the header, the data after it, and the atomic write of both.
#include "safetensors_write.hpp"

#include "file_io.hpp"
#include "json.hpp"
#include "text.hpp"
#include "safetensors_layout.hpp"

#include <gpu/nn/safetensors.hpp>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <set>

namespace gpu::nn {
namespace {

[[noreturn]] void refuse(const std::string& what)
{
    throw std::invalid_argument("gpu::nn::write_safetensors: " + what);
}

// A tensor the reader would accept, or a refusal naming it; returns its byte count.
std::uint64_t checked_bytes(const tensor_view& tensor, std::set<std::string_view>& names)
{
    const std::string field = "tensor '" + detail::printable(tensor.name) + "': ";
    if (tensor.name == "__metadata__") {
        refuse(field + "the name is reserved for the metadata");
    }
    if (!detail::is_utf8(tensor.name)) {
        refuse(field + "the name is not UTF-8");
    }
    if (!names.insert(tensor.name).second) {
        refuse(field + "two tensors have this name");
    }
    if (element_size(tensor.type) == 0) {
        refuse(field + "dtype " + std::to_string(static_cast<int>(tensor.type)) +
               " is not a named enumerator");
    }
    const std::optional<std::uint64_t> bytes = detail::byte_count(tensor.type, tensor.shape);
    if (!bytes) {
        refuse(field + std::string(to_string(tensor.type)) + " " + detail::dims_text(tensor.shape) +
               " holds more than 2^64 - 1 bytes");
    }
    if (tensor.data.size() != *bytes) {
        refuse(field + std::string(to_string(tensor.type)) + " " + detail::dims_text(tensor.shape) +
               " needs " + std::to_string(*bytes) + " bytes, the data holds " +
               std::to_string(tensor.data.size()));
    }
    return *bytes;
}

void append_metadata(std::string& header, const safetensors_metadata& metadata)
{
    detail::append_json_string(header, "__metadata__");
    header += ":{";
    bool first = true;
    for (const auto& [key, value] : metadata) {
        if (!detail::is_utf8(key) || !detail::is_utf8(value)) {
            refuse("metadata '" + detail::printable(key) + "': not UTF-8");
        }
        header += first ? "" : ",";
        first = false;
        detail::append_json_string(header, key);
        header += ':';
        detail::append_json_string(header, value);
    }
    header += '}';
}

// The header's JSON, padded with spaces to a multiple of 8 bytes (so that the data starts
// aligned, as the reference writer does); the data's total size in @p data_bytes.
std::string make_header(std::span<const tensor_view> tensors, const safetensors_metadata& metadata,
                        std::uint64_t& data_bytes)
{
    std::string header = "{";
    if (!metadata.empty()) {
        append_metadata(header, metadata);
    }
    std::set<std::string_view> names;
    std::uint64_t offset = 0;
    for (const tensor_view& tensor : tensors) {
        const std::uint64_t bytes = checked_bytes(tensor, names);
        if (bytes > std::numeric_limits<std::uint64_t>::max() - offset) {
            refuse("the tensors hold more than 2^64 - 1 bytes together");
        }
        header += header.size() > 1 ? "," : "";
        detail::append_json_string(header, tensor.name);
        header += ":{\"dtype\":\"" + std::string(to_string(tensor.type)) + "\",\"shape\":[";
        for (std::size_t i = 0; i < tensor.shape.size(); ++i) {
            header += i == 0 ? "" : ",";
            header += std::to_string(tensor.shape[i]);
        }
        header += "],\"data_offsets\":[" + std::to_string(offset) + "," +
                  std::to_string(offset + bytes) + "]}";
        offset += bytes;
    }
    header += '}';
    header.append((8 - header.size() % 8) % 8, ' ');
    if (header.size() > safetensors_max_header_bytes) {
        refuse("the header would take " + std::to_string(header.size()) +
               " bytes, over the format's limit of " +
               std::to_string(safetensors_max_header_bytes));
    }
    data_bytes = offset;
    return header;
}

std::array<std::byte, 8> little_endian(std::uint64_t value)
{
    std::array<std::byte, 8> bytes{};
    for (std::size_t i = 0; i < 8; ++i) {
        bytes[i] = static_cast<std::byte>(value >> (8 * i));
    }
    return bytes;
}

} // namespace

std::vector<std::byte> serialize_safetensors(std::span<const tensor_view> tensors,
                                             const safetensors_metadata& metadata)
{
    std::uint64_t data_bytes = 0;
    const std::string header = make_header(tensors, metadata, data_bytes);
    std::vector<std::byte> out;
    out.reserve(8 + header.size() + data_bytes);
    const std::array<std::byte, 8> length = little_endian(header.size());
    out.insert(out.end(), length.begin(), length.end());
    const auto header_bytes = std::as_bytes(std::span(header));
    out.insert(out.end(), header_bytes.begin(), header_bytes.end());
    for (const tensor_view& tensor : tensors) {
        out.insert(out.end(), tensor.data.begin(), tensor.data.end());
    }
    return out;
}

void write_safetensors(const std::filesystem::path& path, std::span<const tensor_view> tensors,
                       const safetensors_metadata& metadata)
{
    detail::stage_safetensors(path, tensors, metadata)->commit();
}

namespace detail {

std::unique_ptr<atomic_writer> stage_safetensors(const std::filesystem::path& path,
                                                 std::span<const tensor_view> tensors,
                                                 const safetensors_metadata& metadata)
{
    std::uint64_t data_bytes = 0;
    const std::string header =
        make_header(tensors, metadata, data_bytes); // refuses before any file exists
    auto file = std::make_unique<atomic_writer>(path, "gpu::nn::write_safetensors");
    file->write(little_endian(header.size()));
    file->write(std::as_bytes(std::span(header)));
    for (const tensor_view& tensor : tensors) {
        file->write(tensor.data); // straight from the caller's memory: no copy of the checkpoint
    }
    file->finish();
    return file;
}

} // namespace detail

} // namespace gpu::nn
