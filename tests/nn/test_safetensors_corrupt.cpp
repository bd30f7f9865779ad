// gpu/nn/safetensors.hpp: every way a file can break the format is a format_error naming the
// file and the bad field, from a file and from memory alike; no prefix of a good file and no
// flipped byte makes the reader crash or throw anything else.
#include <gpu/nn/safetensors.hpp>

#include "catch.hpp"
#include "file_support.hpp"

#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

// An 8-byte little-endian length, @p header as it is, then @p data_bytes bytes of data.
std::vector<std::byte> file_of(const std::string& header, std::size_t data_bytes = 0)
{
    std::vector<std::byte> bytes(8);
    for (std::size_t i = 0; i < 8; ++i) {
        bytes[i] = static_cast<std::byte>(header.size() >> (8 * i));
    }
    const std::vector<std::byte> text = gpu::test::bytes_of(header);
    bytes.insert(bytes.end(), text.begin(), text.end());
    bytes.resize(bytes.size() + data_bytes, std::byte{0x5A});
    return bytes;
}

std::vector<std::byte> with_length(std::uint64_t length, std::size_t total)
{
    std::vector<std::byte> bytes(total, std::byte{' '});
    for (std::size_t i = 0; i < 8 && i < total; ++i) {
        bytes[i] = static_cast<std::byte>(length >> (8 * i));
    }
    return bytes;
}

struct corrupt_case {
    const char* what;             // the case
    std::vector<std::byte> bytes; // the file
    const char* field;            // the field the error names
    const char* problem;          // text the error holds
};

// One tensor's entry: "name":{"dtype":...,"shape":...,"data_offsets":...}.
std::string tensor(const std::string& name, const char* dtype, const char* shape,
                   const char* offsets)
{
    std::string entry = "\"";
    for (const char* piece : {name.c_str(), R"(":{"dtype":")", dtype, R"(","shape":)", shape,
                              R"(,"data_offsets":)", offsets, "}"}) {
        entry += piece;
    }
    return entry;
}

// A header object of @p entries.
std::string object(std::initializer_list<std::string> entries)
{
    std::string text = "{";
    for (const std::string& entry : entries) {
        text += text.size() > 1 ? "," : "";
        text += entry;
    }
    text += '}';
    return text;
}

std::vector<corrupt_case> header_cases()
{
    return {
        {"an empty file", {}, "header length", "the file holds 0 bytes"},
        {"five bytes", with_length(0, 5), "header length", "truncated file"},
        {"a header of 200 MB", with_length(200'000'000, 16), "header length",
         "over the limit of 100000000"},
        {"a header length of 2^64 - 1", with_length(~std::uint64_t{0}, 16), "header length",
         "over the limit"},
        {"a header past the file", with_length(100, 20), "header length",
         "100 bytes, but only 12 follow it"},
        {"a header that is not an object", file_of("[]      "), "header",
         "does not start with '{'"},
        {"a header starting with a space", file_of(" {}     "), "header",
         "does not start with '{'"},
        {"an object that does not end",
         file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})", 4), "header",
         "expected '}', found the end of the header"},
        {"text after the object", file_of("{} x"), "header", "text after the JSON object"},
        {"NUL bytes as padding", file_of(std::string("{}\0\0\0\0\0\0", 8)), "header",
         "text after the JSON object"},
        {"a trailing comma",
         file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},})", 4), "header",
         "expected a string key"},
        {"a tensor that is not an object", file_of(R"({"a":5})"), "tensor 'a'",
         "expected '{', found '5'"},
        {"a key that is not UTF-8", file_of("{\"\xFF\":{}}"), "header",
         "a string that is not UTF-8"},
        {"an overlong UTF-8 form", file_of("{\"\xC0\xAF\":{}}"), "header", "not UTF-8"},
        {"a raw control character", file_of("{\"a\nb\":{}}"), "header",
         "control character 0x0A in a string"},
        {"an unknown escape", file_of(R"({"a\x":{}})"), "header", "unknown escape"},
        {"a lone low surrogate", file_of(R"({"\udc00":{}})"), "header", "lone low surrogate"},
        {"a high surrogate alone", file_of(R"({"\ud800x":{}})"), "header",
         "high surrogate not followed"},
        {"a short \\u escape", file_of(R"({"\u12":{}})"), "header", "four hexadecimal digits"},
        {"a string that does not end", file_of(R"({"abc)"), "header", "a string that does not end"},
    };
}

std::vector<corrupt_case> tensor_cases()
{
    return {
        {"an unknown dtype", file_of(object({tensor("a", "F4", "[2]", "[0,1]")}), 1),
         "tensor 'a' dtype", "unknown dtype 'F4'"},
        {"a lower-case dtype", file_of(object({tensor("a", "f32", "[1]", "[0,4]")}), 4),
         "tensor 'a' dtype", "unknown dtype 'f32'"},
        {"a negative dimension", file_of(object({tensor("a", "F32", "[-1]", "[0,4]")}), 4),
         "tensor 'a' shape", "a negative number"},
        {"a fractional dimension", file_of(object({tensor("a", "F32", "[1.5]", "[0,4]")}), 4),
         "tensor 'a' shape", "not an integer"},
        {"a dimension in exponent form", file_of(object({tensor("a", "F32", "[1e3]", "[0,4]")}), 4),
         "tensor 'a' shape", "not an integer"},
        {"a leading zero", file_of(object({tensor("a", "F32", "[01]", "[0,4]")}), 4),
         "tensor 'a' shape", "leading zero"},
        {"a dimension past 64 bits",
         file_of(object({tensor("a", "F32", "[18446744073709551616]", "[0,4]")}), 4),
         "tensor 'a' shape", "larger than 2^64 - 1"},
        {"a dimension as a string", file_of(object({tensor("a", "F32", R"(["1"])", "[0,4]")}), 4),
         "tensor 'a' shape", "expected a number, found '\"'"},
        {"a shape whose size overflows",
         file_of(object({tensor("a", "F32", "[4294967296,4294967296]", "[0,4]")}), 4),
         "tensor 'a' shape", "F32 [4294967296, 4294967296] holds more than 2^64 - 1 bytes"},
        {"three offsets", file_of(object({tensor("a", "F32", "[1]", "[0,4,8]")}), 4),
         "tensor 'a' data_offsets", "more than 2 numbers"},
        {"one offset", file_of(object({tensor("a", "F32", "[1]", "[4]")}), 4),
         "tensor 'a' data_offsets", "holds 1 numbers, not 2"},
        {"a repeated field",
         file_of(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4),
         "tensor 'a' dtype", "this field appears twice"},
        {"a missing field", file_of(R"({"a":{"dtype":"F32","shape":[1]}})", 4), "tensor 'a'",
         "missing data_offsets"},
        {"an unknown field",
         file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4),
         "tensor 'a' x", "unknown field"},
        {"a repeated name",
         file_of(object({tensor("a", "F32", "[1]", "[0,4]"), tensor("a", "F32", "[1]", "[4,8]")}),
                 8),
         "tensor 'a'", "this tensor name appears twice"},
        {"a name repeated through an escape",
         file_of(
             object({tensor("a", "F32", "[1]", "[0,4]"), tensor("\\u0061", "F32", "[1]", "[4,8]")}),
             8),
         "tensor 'a'", "appears twice"},
        {"a metadata value that is not a string", file_of(R"({"__metadata__":{"k":1}})"),
         "__metadata__ 'k'", "expected '\"', found '1'"},
        {"a repeated metadata key", file_of(R"({"__metadata__":{"k":"1","k":"2"}})"),
         "__metadata__ 'k'", "this key appears twice"},
        {"metadata twice", file_of(R"({"__metadata__":{},"__metadata__":{}})"), "__metadata__",
         "appears twice"},
    };
}

std::vector<corrupt_case> layout_cases()
{
    return {
        {"offsets past the data", file_of(object({tensor("a", "F32", "[2]", "[0,8]")}), 4),
         "tensor 'a' data_offsets", "[0, 8] go past the end of the data, which holds 4 bytes"},
        {"offsets that end before they begin",
         file_of(object({tensor("a", "F32", "[1]", "[4,0]")}), 4), "tensor 'a' data_offsets",
         "[4, 0] end before they begin"},
        {"offsets that do not match the shape",
         file_of(object({tensor("a", "F32", "[2]", "[0,4]")}), 4), "tensor 'a' data_offsets",
         "[0, 4] hold 4 bytes, but F32 [2] needs 8"},
        {"overlapping tensors",
         file_of(object({tensor("a", "F32", "[2]", "[0,8]"), tensor("b", "F32", "[2]", "[4,12]")}),
                 12),
         "tensor 'b' data_offsets", "[4, 12] overlap tensor 'a' [0, 8]"},
        {"a hole between tensors",
         file_of(object({tensor("a", "F32", "[1]", "[0,4]"), tensor("b", "F32", "[1]", "[8,12]")}),
                 12),
         "tensor 'b' data_offsets", "leave bytes [4, 8) to no tensor after tensor 'a'"},
        {"a hole at the start", file_of(object({tensor("a", "F32", "[1]", "[4,8]")}), 8),
         "tensor 'a' data_offsets", "leave bytes [0, 4) to no tensor at the start of the data"},
        {"data after the last tensor", file_of(object({tensor("a", "F32", "[1]", "[0,4]")}), 8),
         "data", "8 bytes follow the header, but the tensors end at byte 4"},
        {"data and no tensor", file_of("{}", 3), "data", "3 bytes follow the header"},
    };
}

void check_case(const corrupt_case& c, const gpu::test::temporary_folder& folder)
{
    INFO(c.what);
    const auto from_memory = gpu::test::format_error_of(
        [&] { static_cast<void>(gpu::nn::parse_safetensors(c.bytes, "bytes")); });
    REQUIRE(from_memory.has_value());
    CHECK(from_memory->file() == "bytes");
    CHECK(from_memory->field() == c.field);
    CHECK_THAT(from_memory->what(), ContainsSubstring(c.problem));

    const auto path = folder / "corrupt.safetensors";
    gpu::test::write_file(path, c.bytes);
    const auto from_file =
        gpu::test::format_error_of([&] { static_cast<void>(gpu::nn::read_safetensors(path)); });
    REQUIRE(from_file.has_value());
    CHECK(from_file->file() == path.string());
    CHECK(std::string(from_file->what()).rfind(path.string() + ": " + c.field + ": ", 0) == 0);
}

} // namespace

TEST_CASE("a corrupt header is a format_error naming the file and the field", "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    for (const corrupt_case& c : header_cases()) {
        check_case(c, folder);
    }
}

TEST_CASE("a corrupt tensor entry is a format_error naming the tensor and the field",
          "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    for (const corrupt_case& c : tensor_cases()) {
        check_case(c, folder);
    }
}

TEST_CASE("data offsets that do not tile the data are a format_error naming the tensors",
          "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    for (const corrupt_case& c : layout_cases()) {
        check_case(c, folder);
    }
}

TEST_CASE("a hostile name is cut short and its control characters shown in the message",
          "[nn][safetensors]")
{
    // Escaped in the JSON (a raw control character is refused sooner), an ESC once decoded.
    std::string name = "\\u001b[31m";
    name.append(300, 'n');
    const auto error = gpu::test::format_error_of([&] {
        static_cast<void>(
            gpu::nn::parse_safetensors(file_of(object({tensor(name, "X", "[1]", "[0,4]")}), 4)));
    });
    REQUIRE(error.has_value());
    const std::string what = error->what();
    CHECK(what.find('\x1b') == std::string::npos);
    CHECK_THAT(what, ContainsSubstring("tensor '\\x1B[31mnnn"));
    CHECK_THAT(what, ContainsSubstring("... (305 bytes)"));
    CHECK(what.size() < 400);
}

TEST_CASE("every prefix of a good file, and every flipped byte, is refused or read, never more",
          "[nn][safetensors]")
{
    const std::vector<float> a{1, 2, 3};
    const std::vector<std::int16_t> b{4, 5};
    const std::vector<gpu::nn::tensor_view> tensors{gpu::nn::make_tensor_view("a", a, {3}),
                                                    gpu::nn::make_tensor_view("b", b, {1, 2})};
    const std::vector<std::byte> good = gpu::nn::serialize_safetensors(tensors, {{"k", "v"}});
    REQUIRE_NOTHROW(gpu::nn::parse_safetensors(good));
    for (std::size_t size = 0; size < good.size(); ++size) {
        INFO("prefix of " << size << " bytes");
        const std::vector<std::byte> prefix(good.begin(),
                                            good.begin() + static_cast<std::ptrdiff_t>(size));
        CHECK(gpu::test::format_error_of([&] {
                  static_cast<void>(gpu::nn::parse_safetensors(prefix));
              }).has_value());
    }
    std::size_t refused = 0;
    for (std::size_t i = 0; i < good.size(); ++i) {
        std::vector<std::byte> flipped = good;
        flipped[i] ^= std::byte{0x41};
        // Only format_error may escape (format_error_of lets anything else fail the test).
        refused += gpu::test::format_error_of(
                       [&] { static_cast<void>(gpu::nn::parse_safetensors(flipped)); })
                       ? 1
                       : 0;
    }
    CHECK(refused > good.size() / 2); // the header's structure breaks; the data's bytes may not
}
