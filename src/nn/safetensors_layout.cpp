// The layout rules of safetensors data (see safetensors_layout.hpp).
#include "safetensors_layout.hpp"

#include "text.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/nn/format_error.hpp>

#include <algorithm>
#include <limits>
#include <utility>

namespace gpu::nn::detail {
namespace {

std::string offsets_text(const header_entry& entry)
{
    return gpu::detail::message_of("[", entry.begin, ", ", entry.end, "]");
}

std::string tensor_field(const header_entry& entry, const char* part)
{
    return "tensor '" + printable(entry.name) + "' " + part;
}

// One entry on its own: offsets in order, inside the data, and as long as dtype and shape say.
void check_entry(const header_entry& entry, std::uint64_t data_size, const std::string& source)
{
    const std::optional<std::uint64_t> bytes = byte_count(entry.type, entry.shape);
    if (!bytes) {
        throw format_error(source, tensor_field(entry, "shape"),
                           std::string(to_string(entry.type)) + " " + dims_text(entry.shape) +
                               " holds more than 2^64 - 1 bytes");
    }
    const std::string offsets = offsets_text(entry);
    if (entry.begin > entry.end) {
        throw format_error(source, tensor_field(entry, "data_offsets"),
                           offsets + " end before they begin");
    }
    if (entry.end > data_size) {
        throw format_error(source, tensor_field(entry, "data_offsets"),
                           offsets + " go past the end of the data, which holds " +
                               std::to_string(data_size) +
                               " bytes after the header (truncated file?)");
    }
    if (entry.end - entry.begin != *bytes) {
        throw format_error(source, tensor_field(entry, "data_offsets"),
                           offsets + " hold " + std::to_string(entry.end - entry.begin) +
                               " bytes, but " + std::string(to_string(entry.type)) + " " +
                               dims_text(entry.shape) + " needs " + std::to_string(*bytes));
    }
}

} // namespace

std::optional<std::uint64_t> byte_count(dtype type, const std::vector<std::size_t>& shape) noexcept
{
    const std::uint64_t size = element_size(type);
    if (size == 0) {
        return std::nullopt;
    }
    if (std::ranges::find(shape, std::size_t{0}) != shape.end()) {
        return 0;
    }
    std::uint64_t bytes = size;
    for (const std::size_t dim : shape) {
        if (dim > std::numeric_limits<std::uint64_t>::max() / bytes) {
            return std::nullopt;
        }
        bytes *= dim;
    }
    return bytes;
}

void check_layout(std::vector<header_entry>& entries, std::uint64_t data_size,
                  const std::string& source)
{
    for (const header_entry& entry : entries) {
        check_entry(entry, data_size, source);
    }
    std::ranges::stable_sort(entries, {},
                             [](const header_entry& e) { return std::pair(e.begin, e.end); });
    std::uint64_t next = 0; // where the next tensor must begin
    const header_entry* previous = nullptr;
    for (const header_entry& entry : entries) {
        if (entry.begin < next) {
            throw format_error(source, tensor_field(entry, "data_offsets"),
                               offsets_text(entry) + " overlap tensor '" +
                                   printable(previous->name) + "' " + offsets_text(*previous));
        }
        if (entry.begin > next) {
            throw format_error(source, tensor_field(entry, "data_offsets"),
                               offsets_text(entry) + " leave bytes [" + std::to_string(next) +
                                   ", " + std::to_string(entry.begin) + ") to no tensor" +
                                   (previous != nullptr
                                        ? " after tensor '" + printable(previous->name) + "'"
                                        : std::string(" at the start of the data")));
        }
        next = entry.end;
        previous = &entry;
    }
    if (next != data_size) {
        throw format_error(source, "data",
                           std::to_string(data_size) +
                               " bytes follow the header, but the tensors end at byte " +
                               std::to_string(next) + ": the rest belongs to no tensor");
    }
}

} // namespace gpu::nn::detail
