// Fuzzes gpu::nn::parse_safetensors (include/gpu/nn/safetensors.hpp): any bytes are a checked
// checkpoint or a gpu::nn::format_error, never a crash, a read out of bounds or another
// exception. What it accepts is compared with nlohmann-json's reading of the same header (an
// independent parser): the same tensors, dtypes, shapes, offsets and metadata; the views lie in
// the data after the header and tile it; and the checkpoint written back reads the same.
//
// Input: the first byte chooses the mode. Even: the rest is the file. Odd: the next two bytes
// are a data length L, then the header's text, then L bytes of data; the 8-byte header length
// is written for it, so that the fuzzer reaches the JSON without having to get it right.
#include <gpu/nn/safetensors.hpp>

#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"

#include <cstring>
#include <string>
#include <vector>

namespace {

std::vector<std::byte> file_from_input(const std::uint8_t* data, std::size_t size)
{
    fuzz::input in(data, size);
    const auto mode = in.take<std::uint8_t>();
    if ((mode & 1) == 0) {
        const std::string_view rest = in.rest();
        const auto* first = reinterpret_cast<const std::byte*>(rest.data());
        return {first, first + rest.size()};
    }
    const auto data_bytes = static_cast<std::size_t>(in.take<std::uint16_t>());
    const std::string_view rest = in.rest();
    const std::size_t header_bytes = rest.size() - std::min(rest.size(), data_bytes);
    std::vector<std::byte> file(8);
    for (std::size_t i = 0; i < 8; ++i) {
        file[i] = static_cast<std::byte>(static_cast<std::uint64_t>(header_bytes) >> (8 * i));
    }
    const auto* first = reinterpret_cast<const std::byte*>(rest.data());
    file.insert(file.end(), first, first + rest.size());
    return file;
}

// The accepted file against nlohmann-json's reading of its header.
void check_against_json(const gpu::nn::safetensors_file& file, const std::vector<std::byte>& bytes)
{
    std::uint64_t length = 0;
    for (std::size_t i = 0; i < 8; ++i) {
        length |= static_cast<std::uint64_t>(bytes[i]) << (8 * i);
    }
    const std::string header(reinterpret_cast<const char*>(bytes.data()) + 8, length);
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(header);
    } catch (const nlohmann::json::exception& e) {
        fuzz::finding(std::string("accepted a header that nlohmann-json refuses: ") + e.what());
    }
    fuzz::require(doc.is_object(), "accepted a header that is not an object");
    const bool has_metadata = doc.contains("__metadata__");
    fuzz::require(doc.size() == file.tensors().size() + (has_metadata ? 1 : 0),
                  "the number of tensors differs");
    const std::byte* data_start = bytes.data() + 8 + length;
    const std::size_t data_size = bytes.size() - 8 - length;
    std::size_t covered = 0;
    for (const gpu::nn::tensor_view& t : file.tensors()) {
        const nlohmann::json& entry = doc.at(t.name);
        fuzz::require(entry.at("dtype").get<std::string>() == gpu::nn::to_string(t.type),
                      "a dtype differs");
        fuzz::require(entry.at("shape").get<std::vector<std::uint64_t>>() ==
                          std::vector<std::uint64_t>(t.shape.begin(), t.shape.end()),
                      "a shape differs");
        const auto offsets = entry.at("data_offsets").get<std::vector<std::uint64_t>>();
        fuzz::require(offsets.size() == 2 && offsets[0] <= offsets[1] && offsets[1] <= data_size &&
                          offsets[1] - offsets[0] == t.data.size(),
                      "a tensor's offsets differ from its view");
        fuzz::require(t.data.empty() ||
                          std::memcmp(t.data.data(), data_start + offsets[0], t.data.size()) == 0,
                      "a tensor's bytes differ from those its offsets name");
        covered += t.data.size();
    }
    fuzz::require(covered == data_size, "the tensors do not cover the data exactly");
    gpu::nn::safetensors_metadata metadata;
    if (has_metadata) {
        for (const auto& [key, value] : doc.at("__metadata__").items()) {
            metadata.emplace(key, value.get<std::string>());
        }
    }
    fuzz::require(metadata == file.metadata(), "the metadata differs");
}

// Written back and read again, the checkpoint is the same.
void check_round_trip(const gpu::nn::safetensors_file& file)
{
    const std::vector<gpu::nn::tensor_view> tensors(file.tensors().begin(), file.tensors().end());
    const gpu::nn::safetensors_file again = gpu::nn::parse_safetensors(
        gpu::nn::serialize_safetensors(tensors, file.metadata()), "again");
    fuzz::require(again.tensors().size() == tensors.size() && again.metadata() == file.metadata(),
                  "the round trip lost tensors or metadata");
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const gpu::nn::tensor_view& a = tensors[i];
        const gpu::nn::tensor_view& b = again.tensors()[i];
        fuzz::require(
            a.name == b.name && a.type == b.type && a.shape == b.shape &&
                a.data.size() == b.data.size() &&
                (a.data.empty() || std::memcmp(a.data.data(), b.data.data(), a.data.size()) == 0),
            "a tensor changed in the round trip");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::vector<std::byte> bytes = file_from_input(data, size);
    gpu::nn::safetensors_file file;
    try {
        file = gpu::nn::parse_safetensors(bytes, "fuzz");
    } catch (const gpu::nn::format_error&) {
        return 0; // refused, as documented
    } catch (const std::exception& e) {
        fuzz::finding(std::string("parse_safetensors threw something other than format_error: ") +
                      e.what());
    }
    check_against_json(file, bytes);
    check_round_trip(file);
    return 0;
}
