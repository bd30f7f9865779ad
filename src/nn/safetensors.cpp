// Reading safetensors checkpoints: the header's JSON against the format's schema, then the
// layout of the data (see include/gpu/nn/safetensors.hpp and docs/checkpoints.md).
#include "file_io.hpp"
#include "json.hpp"
#include "text.hpp"
#include "safetensors_layout.hpp"

#include <gpu/nn/safetensors.hpp>

#include <algorithm>
#include <array>
#include <bit>
#include <set>
#include <utility>

namespace gpu::nn {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this reader hands out the bytes as they are");
static_assert(sizeof(std::size_t) >= sizeof(std::uint64_t),
              "shapes and offsets are 64-bit in the format and kept in std::size_t");

struct dtype_name {
    dtype type;
    std::string_view name;
    std::size_t size;
};

constexpr std::array<dtype_name, 17> dtype_names{{
    {dtype::boolean, "BOOL", 1},
    {dtype::u8, "U8", 1},
    {dtype::i8, "I8", 1},
    {dtype::f8_e5m2, "F8_E5M2", 1},
    {dtype::f8_e4m3, "F8_E4M3", 1},
    {dtype::f8_e8m0, "F8_E8M0", 1},
    {dtype::i16, "I16", 2},
    {dtype::u16, "U16", 2},
    {dtype::f16, "F16", 2},
    {dtype::bf16, "BF16", 2},
    {dtype::i32, "I32", 4},
    {dtype::u32, "U32", 4},
    {dtype::f32, "F32", 4},
    {dtype::f64, "F64", 8},
    {dtype::i64, "I64", 8},
    {dtype::u64, "U64", 8},
    {dtype::c64, "C64", 8},
}};

[[nodiscard]] const dtype_name* find_dtype(dtype type) noexcept
{
    const auto it = std::ranges::find(dtype_names, type, &dtype_name::type);
    return it == dtype_names.end() ? nullptr : &*it;
}

// The entries of a header, in the order the JSON gives them.
struct parsed_header {
    safetensors_metadata metadata;
    std::vector<detail::header_entry> tensors;
};

void read_metadata(detail::json_reader& json, safetensors_metadata& metadata)
{
    json.set_field("__metadata__");
    json.read_object([&](std::string key) {
        json.set_field("__metadata__ '" + detail::printable(key) + "'");
        std::string value = json.read_string(); // the format allows strings only
        if (!metadata.emplace(std::move(key), std::move(value)).second) {
            json.fail("this key appears twice");
        }
    });
}

void read_dtype(detail::json_reader& json, detail::header_entry& entry)
{
    const std::string name = json.read_string();
    const std::optional<dtype> type = parse_dtype(name);
    if (!type) {
        std::string known;
        for (const dtype_name& d : dtype_names) {
            known += known.empty() ? "" : ", ";
            known += d.name;
        }
        json.fail("unknown dtype '" + detail::printable(name) + "' (cudagap reads " + known +
                  "; not the sub-byte F4, F6_E2M3 and F6_E3M2)");
    }
    entry.type = *type;
}

void read_offsets(detail::json_reader& json, detail::header_entry& entry)
{
    std::vector<std::uint64_t> offsets;
    json.read_array([&] {
        if (offsets.size() == 2) {
            json.fail("data_offsets holds more than 2 numbers");
        }
        offsets.push_back(json.read_unsigned());
    });
    if (offsets.size() != 2) {
        json.fail("data_offsets holds " + std::to_string(offsets.size()) +
                  " numbers, not 2 ([begin, end])");
    }
    entry.begin = offsets[0];
    entry.end = offsets[1];
}

// One tensor's object: exactly dtype, shape and data_offsets, once each.
detail::header_entry read_entry(detail::json_reader& json, std::string name)
{
    detail::header_entry entry;
    entry.name = std::move(name);
    const std::string field = "tensor '" + detail::printable(entry.name) + "'";
    std::set<std::string, std::less<>> seen;
    json.set_field(field);
    json.read_object([&](std::string key) {
        json.set_field(field + " " + detail::printable(key));
        if (!seen.insert(key).second) {
            json.fail("this field appears twice");
        }
        if (key == "dtype") {
            read_dtype(json, entry);
        } else if (key == "shape") {
            json.read_array(
                [&] { entry.shape.push_back(static_cast<std::size_t>(json.read_unsigned())); });
        } else if (key == "data_offsets") {
            read_offsets(json, entry);
        } else {
            json.fail("unknown field (a tensor has dtype, shape and data_offsets)");
        }
    });
    json.set_field(field);
    for (const char* required : {"dtype", "shape", "data_offsets"}) {
        if (!seen.contains(required)) {
            json.fail(std::string("missing ") + required);
        }
    }
    return entry;
}

parsed_header parse_header(std::string_view text, const std::string& source)
{
    if (text.empty() || text.front() != '{') {
        throw format_error(source, "header",
                           "does not start with '{' (the JSON object of the tensors)");
    }
    detail::json_reader json(text, source);
    parsed_header header;
    bool has_metadata = false;
    std::set<std::string, std::less<>> names;
    json.read_object([&](std::string key) {
        if (key == "__metadata__") {
            json.set_field("__metadata__");
            if (std::exchange(has_metadata, true)) {
                json.fail("__metadata__ appears twice");
            }
            read_metadata(json, header.metadata);
        } else {
            if (!names.insert(key).second) {
                json.set_field("tensor '" + detail::printable(key) + "'");
                json.fail("this tensor name appears twice");
            }
            header.tensors.push_back(read_entry(json, std::move(key)));
        }
        json.set_field("header");
    });
    if (!json.at_end()) {
        json.fail("text after the JSON object (only spaces may pad it)");
    }
    return header;
}

// The header's length, checked against the file and the limit.
std::uint64_t read_header_length(std::span<const std::byte> bytes, const std::string& source)
{
    if (bytes.size() < 8) {
        throw format_error(
            source, "header length",
            "the file holds " + std::to_string(bytes.size()) +
                " bytes; the 8-byte length of the header is missing (truncated file)");
    }
    std::uint64_t length = 0;
    for (std::size_t i = 0; i < 8; ++i) {
        length |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
    }
    if (length > safetensors_max_header_bytes) {
        throw format_error(source, "header length",
                           std::to_string(length) + " bytes, over the limit of " +
                               std::to_string(safetensors_max_header_bytes) +
                               " (not a safetensors file?)");
    }
    if (length > bytes.size() - 8) {
        throw format_error(source, "header length",
                           std::to_string(length) + " bytes, but only " +
                               std::to_string(bytes.size() - 8) + " follow it (truncated file)");
    }
    return length;
}

std::string describe(dtype type, const std::vector<std::size_t>& shape)
{
    return std::string(to_string(type)) + " " + detail::dims_text(shape);
}

} // namespace

std::string_view to_string(dtype type) noexcept
{
    const dtype_name* d = find_dtype(type);
    return d != nullptr ? d->name : "unknown";
}

std::optional<dtype> parse_dtype(std::string_view name) noexcept
{
    const auto it = std::ranges::find(dtype_names, name, &dtype_name::name);
    return it == dtype_names.end() ? std::nullopt : std::optional(it->type);
}

std::size_t element_size(dtype type) noexcept
{
    const dtype_name* d = find_dtype(type);
    return d != nullptr ? d->size : 0;
}

dtype to_dtype(gpu::element_type type)
{
    switch (type) {
    case gpu::element_type::fp32: return dtype::f32;
    case gpu::element_type::fp64: return dtype::f64;
    case gpu::element_type::fp16: return dtype::f16;
    case gpu::element_type::bf16: return dtype::bf16;
    }
    throw std::invalid_argument("gpu::nn::to_dtype: element_type " +
                                std::to_string(static_cast<int>(type)) +
                                " is not a named enumerator");
}

const tensor_view* safetensors_file::find(std::string_view name) const noexcept
{
    const auto it = index_.find(name);
    return it == index_.end() ? nullptr : &tensors_[it->second];
}

const tensor_view& safetensors_file::at(std::string_view name) const
{
    if (const tensor_view* tensor = find(name)) {
        return *tensor;
    }
    std::string held;
    for (std::size_t i = 0; i < tensors_.size() && i < 8; ++i) {
        held += i == 0 ? "'" : ", '";
        held += detail::printable(tensors_[i].name);
        held += '\'';
    }
    held += tensors_.size() > 8 ? ", ..." : "";
    throw format_error(source_, "tensor '" + detail::printable(name) + "'",
                       "no such tensor (the file holds " + std::to_string(tensors_.size()) +
                           " tensors" + (held.empty() ? "" : ": " + held) + ")");
}

const tensor_view& safetensors_file::expect(std::string_view name, dtype type,
                                            const std::vector<std::size_t>& shape) const
{
    const tensor_view& tensor = at(name);
    if (tensor.type != type || tensor.shape != shape) {
        throw format_error(source_, "tensor '" + detail::printable(name) + "'",
                           "expected " + describe(type, shape) + ", found " +
                               describe(tensor.type, tensor.shape));
    }
    return tensor;
}

safetensors_file parse_safetensors(std::vector<std::byte> bytes, std::string source)
{
    const std::uint64_t header_length = read_header_length(bytes, source);
    const std::string_view text(reinterpret_cast<const char*>(bytes.data()) + 8, header_length);
    parsed_header header = parse_header(text, source);
    const std::span<const std::byte> data =
        std::span<const std::byte>(bytes).subspan(8 + header_length);
    detail::check_layout(header.tensors, data.size(), source);

    safetensors_file file;
    file.source_ = std::move(source);
    file.metadata_ = std::move(header.metadata);
    file.tensors_.reserve(header.tensors.size());
    for (detail::header_entry& entry : header.tensors) {
        file.index_.emplace(entry.name, file.tensors_.size());
        file.tensors_.push_back({.name = std::move(entry.name),
                                 .type = entry.type,
                                 .shape = std::move(entry.shape),
                                 .data = data.subspan(entry.begin, entry.end - entry.begin)});
    }
    file.bytes_ = std::move(bytes); // the buffer moves, so the views into it stay valid
    return file;
}

safetensors_file read_safetensors(const std::filesystem::path& path)
{
    return parse_safetensors(detail::read_whole_file(path, "gpu::nn::read_safetensors"),
                             path.string());
}

} // namespace gpu::nn
