// gpu/nn/safetensors.hpp: round trips, the header's bytes, typed access, and what the writer
// refuses. The corrupt files are in test_safetensors_corrupt.cpp, the atomic write in
// test_safetensors_write.cpp.
#include <gpu/nn/safetensors.hpp>

#include "catch.hpp"
#include "file_support.hpp"

#include <array>
#include <cstring>
#include <limits>
#include <set>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::nn::dtype;
using gpu::nn::tensor_view;

namespace {

constexpr std::array<dtype, 17> every_dtype{
    dtype::boolean, dtype::u8,  dtype::i8,  dtype::f8_e5m2, dtype::f8_e4m3, dtype::f8_e8m0,
    dtype::i16,     dtype::u16, dtype::f16, dtype::bf16,    dtype::i32,     dtype::u32,
    dtype::f32,     dtype::f64, dtype::i64, dtype::u64,     dtype::c64};

// Bytes that differ from tensor to tensor and from byte to byte (0 or 1 for BOOL).
std::vector<std::byte> pattern(std::size_t count, std::size_t seed, bool boolean = false)
{
    std::vector<std::byte> bytes(count);
    for (std::size_t i = 0; i < count; ++i) {
        bytes[i] = static_cast<std::byte>(boolean ? (i + seed) % 2 : (i * 29 + seed * 7 + 3) % 256);
    }
    return bytes;
}

std::uint64_t header_length(const std::vector<std::byte>& file)
{
    std::uint64_t length = 0;
    for (std::size_t i = 0; i < 8; ++i) {
        length |= static_cast<std::uint64_t>(file[i]) << (8 * i);
    }
    return length;
}

std::string header_text(const std::vector<std::byte>& file)
{
    return {reinterpret_cast<const char*>(file.data()) + 8,
            static_cast<std::size_t>(header_length(file))};
}

bool same_bytes(std::span<const std::byte> a, std::span<const std::byte> b)
{
    return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size()) == 0);
}

} // namespace

TEST_CASE("every dtype has its safetensors name and size", "[nn][safetensors]")
{
    std::set<std::string_view> names;
    for (const dtype type : every_dtype) {
        const std::string_view name = gpu::nn::to_string(type);
        names.insert(name);
        CHECK(gpu::nn::parse_dtype(name) == type);
        CHECK(gpu::nn::element_size(type) >= 1);
    }
    CHECK(names.size() == every_dtype.size());
    CHECK(gpu::nn::to_string(dtype::bf16) == "BF16");
    CHECK(gpu::nn::to_string(dtype::boolean) == "BOOL");
    CHECK(gpu::nn::to_string(dtype::f8_e4m3) == "F8_E4M3");
    CHECK(gpu::nn::element_size(dtype::c64) == 8);
    CHECK(gpu::nn::element_size(dtype::bf16) == 2);
    CHECK(gpu::nn::to_string(static_cast<dtype>(99)) == "unknown");
    CHECK(gpu::nn::element_size(static_cast<dtype>(99)) == 0);
    CHECK_FALSE(gpu::nn::parse_dtype("f32").has_value()); // names are upper case, exactly
    CHECK_FALSE(gpu::nn::parse_dtype("F4").has_value());  // sub-byte: not read
    STATIC_REQUIRE(gpu::nn::dtype_of<float> == dtype::f32);
    STATIC_REQUIRE(gpu::nn::dtype_of<std::int64_t> == dtype::i64);
    STATIC_REQUIRE(gpu::nn::dtype_of<bool> == dtype::boolean);
    STATIC_REQUIRE_FALSE(gpu::nn::checkpoint_value<char>);
    CHECK(gpu::nn::to_dtype(gpu::element_type::fp16) == dtype::f16);
    CHECK(gpu::nn::to_dtype(gpu::element_type::bf16) == dtype::bf16);
    CHECK(gpu::nn::to_dtype(gpu::element_type::fp64) == dtype::f64);
    CHECK_THROWS_AS(gpu::nn::to_dtype(static_cast<gpu::element_type>(9)), std::invalid_argument);
}

TEST_CASE("a tensor of every dtype round-trips through a file, in the order written",
          "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    std::vector<std::vector<std::byte>> storage;
    std::vector<tensor_view> tensors;
    for (std::size_t i = 0; i < every_dtype.size(); ++i) {
        const dtype type = every_dtype[i];
        storage.push_back(pattern(6 * gpu::nn::element_size(type), i, type == dtype::boolean));
        // Reverse alphabetical names: the file keeps the order given, not a sorted one.
        std::string name = "t";
        name += std::to_string(99 - i);
        name += '.';
        name += gpu::nn::to_string(type);
        tensors.push_back({.name = name, .type = type, .shape = {2, 3}, .data = storage.back()});
    }
    const auto path = folder / "every.safetensors";
    gpu::nn::write_safetensors(path, tensors);
    CHECK(same_bytes(gpu::test::read_file(path), gpu::nn::serialize_safetensors(tensors)));

    const gpu::nn::safetensors_file file = gpu::nn::read_safetensors(path);
    CHECK(file.source() == path.string());
    CHECK(file.metadata().empty());
    REQUIRE(file.tensors().size() == tensors.size());
    for (std::size_t i = 0; i < tensors.size(); ++i) {
        const tensor_view& read = file.tensors()[i];
        CHECK(read.name == tensors[i].name);
        CHECK(read.type == tensors[i].type);
        CHECK(read.shape == tensors[i].shape);
        CHECK(same_bytes(read.data, storage[i]));
        CHECK(file.find(tensors[i].name) == &read);
    }
}

TEST_CASE("the header is JSON padded with spaces to 8 bytes, then the data packed in order",
          "[nn][safetensors]")
{
    const std::vector<float> a{1.0F, 2.0F};
    const std::vector<std::int64_t> b{-7};
    const std::vector<tensor_view> tensors{gpu::nn::make_tensor_view("a", a, {2}),
                                           gpu::nn::make_tensor_view("b", b, {})};
    const std::vector<std::byte> file = gpu::nn::serialize_safetensors(tensors, {{"format", "pt"}});
    const std::string header = header_text(file);
    CHECK(header.size() % 8 == 0);
    CHECK(
        header.rfind(
            R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
            R"("b":{"dtype":"I64","shape":[],"data_offsets":[8,16]}})",
            0) == 0);
    CHECK(header.find_first_not_of(' ', header.rfind('}') + 1) == std::string::npos);
    REQUIRE(file.size() == 8 + header.size() + 16);
    float a_back[2];
    std::memcpy(a_back, file.data() + 8 + header.size(), sizeof a_back);
    CHECK(a_back[0] == 1.0F);
    CHECK(a_back[1] == 2.0F);
    std::int64_t b_back = 0;
    std::memcpy(&b_back, file.data() + 8 + header.size() + 8, sizeof b_back);
    CHECK(b_back == -7);

    // Without metadata, no __metadata__ key at all (as Python's save_file(metadata=None)).
    CHECK(header_text(gpu::nn::serialize_safetensors(tensors)).find("__metadata__") ==
          std::string::npos);
    CHECK(header_text(gpu::nn::serialize_safetensors({})) == "{}      ");
}

TEST_CASE("metadata and names with escapes and non-ASCII text round-trip", "[nn][safetensors]")
{
    const std::string odd_name = "layer \"1\"\\w\n\t\x01/é重み😀";
    const gpu::nn::safetensors_metadata metadata{
        {"format", "pt"}, {"quote\"back\\slash", "line\nfeed\x1f"}, {"日本語", "値"}, {"", ""}};
    const std::vector<std::uint8_t> values{1, 2, 3};
    const std::vector<tensor_view> tensors{gpu::nn::make_tensor_view(odd_name, values, {3})};
    const gpu::nn::safetensors_file file =
        gpu::nn::parse_safetensors(gpu::nn::serialize_safetensors(tensors, metadata), "odd");
    CHECK(file.metadata() == metadata);
    REQUIRE(file.tensors().size() == 1);
    CHECK(file.tensors()[0].name == odd_name);
    CHECK(file.values<std::uint8_t>(odd_name, {3}) == values);
}

TEST_CASE("empty tensors, scalars and an empty checkpoint round-trip", "[nn][safetensors]")
{
    const std::vector<double> scalar{3.25};
    const std::vector<float> none;
    const std::vector<tensor_view> tensors{
        gpu::nn::make_tensor_view("empty", none, {0}),
        gpu::nn::make_tensor_view("scalar", scalar, {}),
        gpu::nn::make_tensor_view("empty.wide", none,
                                  {3, 0, std::size_t{1} << 62}), // a 0: no bytes, no overflow
        gpu::nn::make_tensor_view("empty.again", none, {0, 5}),
    };
    const gpu::nn::safetensors_file file =
        gpu::nn::parse_safetensors(gpu::nn::serialize_safetensors(tensors));
    CHECK(file.values<double>("scalar", {}) == scalar);
    CHECK(file.values<float>("empty", {0}).empty());
    CHECK(file.at("empty.wide").shape == std::vector<std::size_t>{3, 0, std::size_t{1} << 62});
    CHECK(file.at("empty.again").data.empty());

    const gpu::nn::safetensors_file nothing =
        gpu::nn::parse_safetensors(gpu::nn::serialize_safetensors({}));
    CHECK(nothing.tensors().empty());
    CHECK(nothing.find("x") == nullptr);
}

TEST_CASE("typed access checks the dtype and the shape, naming the tensor", "[nn][safetensors]")
{
    const std::vector<float> weight{1, 2, 3, 4, 5, 6};
    const std::vector<std::uint16_t> bf16_bits{0x3F80, 0xC000};
    const std::array<bool, 3> mask{true, false, true};
    const std::vector<tensor_view> tensors{
        gpu::nn::make_tensor_view("fc.weight", weight, {2, 3}),
        {.name = "fc.bias",
         .type = dtype::bf16,
         .shape = {2},
         .data = std::as_bytes(std::span(bf16_bits))},
        gpu::nn::make_tensor_view("mask", mask, {3}),
    };
    const gpu::nn::safetensors_file file =
        gpu::nn::parse_safetensors(gpu::nn::serialize_safetensors(tensors), "model.safetensors");

    CHECK(file.values<float>("fc.weight", {2, 3}) == weight);
    CHECK(file.values<std::uint16_t>("fc.bias", dtype::bf16, {2}) == bf16_bits);
    CHECK(file.values<bool>("mask", {3}) == std::vector<bool>{true, false, true});

    const auto shape = gpu::test::format_error_of([&] {
        static_cast<void>(file.values<float>("fc.weight", {3, 2}));
    });
    REQUIRE(shape.has_value());
    CHECK(shape->file() == "model.safetensors");
    CHECK(shape->field() == "tensor 'fc.weight'");
    CHECK_THAT(shape->what(), ContainsSubstring("expected F32 [3, 2], found F32 [2, 3]"));

    const auto type = gpu::test::format_error_of([&] {
        static_cast<void>(file.values<double>("fc.weight", {2, 3}));
    });
    REQUIRE(type.has_value());
    CHECK_THAT(type->what(), ContainsSubstring("expected F64 [2, 3], found F32 [2, 3]"));

    const auto missing =
        gpu::test::format_error_of([&] { static_cast<void>(file.at("fc2.weight")); });
    REQUIRE(missing.has_value());
    CHECK(missing->field() == "tensor 'fc2.weight'");
    CHECK_THAT(missing->what(),
               ContainsSubstring(
                   "no such tensor (the file holds 3 tensors: 'fc.weight', 'fc.bias', 'mask')"));
    CHECK(file.find("fc2.weight") == nullptr);

    // A type of another size than the dtype's is a bad argument, not a bad file.
    CHECK_THROWS_AS(file.values<float>("fc.bias", dtype::bf16, {2}), std::invalid_argument);
}

TEST_CASE("a moved safetensors_file keeps its views into its buffer", "[nn][safetensors]")
{
    const std::vector<std::int32_t> values{7, 8, 9};
    const std::vector<tensor_view> tensors{gpu::nn::make_tensor_view("v", values, {3})};
    gpu::nn::safetensors_file first =
        gpu::nn::parse_safetensors(gpu::nn::serialize_safetensors(tensors), "first");
    const std::byte* data = first.at("v").data.data();

    gpu::nn::safetensors_file second(std::move(first));
    CHECK(second.at("v").data.data() == data);
    CHECK(second.values<std::int32_t>("v", {3}) == values);
    CHECK(first.tensors().empty()); // NOLINT(bugprone-use-after-move): documented as empty

    gpu::nn::safetensors_file third;
    third = std::move(second);
    CHECK(third.source() == "first");
    CHECK(third.values<std::int32_t>("v", {3}) == values);
}

TEST_CASE("the writer refuses a tensor the format cannot hold, naming it", "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    const std::vector<float> four(4);
    const std::string bad_utf8 = "bad\xC3(";
    const auto refused = [&](const std::vector<tensor_view>& tensors, const char* expected,
                             const gpu::nn::safetensors_metadata& metadata = {}) {
        INFO(expected);
        CHECK_THROWS_WITH(gpu::nn::serialize_safetensors(tensors, metadata),
                          ContainsSubstring(expected));
        CHECK_THROWS_AS(gpu::nn::write_safetensors(folder / "bad.safetensors", tensors, metadata),
                        std::invalid_argument);
    };
    refused({gpu::nn::make_tensor_view("w", four, {2, 3})},
            "tensor 'w': F32 [2, 3] needs 24 bytes, the data holds 16");
    refused({gpu::nn::make_tensor_view("w", four, {4}), gpu::nn::make_tensor_view("w", four, {4})},
            "tensor 'w': two tensors have this name");
    refused({gpu::nn::make_tensor_view("__metadata__", four, {4})}, "reserved for the metadata");
    refused({gpu::nn::make_tensor_view(bad_utf8, four, {4})}, "the name is not UTF-8");
    refused({{.name = "w",
              .type = static_cast<dtype>(40),
              .shape = {4},
              .data = std::as_bytes(std::span(four))}},
            "dtype 40 is not a named enumerator");
    refused({gpu::nn::make_tensor_view("w", four, {std::size_t{1} << 32, std::size_t{1} << 32})},
            "F32 [4294967296, 4294967296] holds more than 2^64 - 1 bytes");
    refused({}, "metadata 'k': not UTF-8", {{"k", bad_utf8}});
    CHECK(folder.names().empty()); // refused before anything was created
}
