// gpu/nn/idx.hpp: MNIST-format files made here, raw and gzip (compressed with zlib by the test),
// of every element type, and every way one can be broken.
#include <gpu/nn/idx.hpp>

#include "catch.hpp"
#include "file_support.hpp"

#include <zlib.h>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::nn::idx_type;

namespace {

void append_big_endian(std::vector<std::byte>& out, std::uint64_t value, std::size_t bytes)
{
    for (std::size_t i = bytes; i-- > 0;) {
        out.push_back(static_cast<std::byte>(value >> (8 * i)));
    }
}

// An IDX file: the magic number, the dimensions, then @p data as it is (already big-endian).
std::vector<std::byte> idx_file(std::uint8_t type, const std::vector<std::uint32_t>& dims,
                                const std::vector<std::byte>& data)
{
    std::vector<std::byte> out{std::byte{0}, std::byte{0}, std::byte{type},
                               static_cast<std::byte>(dims.size())};
    for (const std::uint32_t dim : dims) {
        append_big_endian(out, dim, 4);
    }
    out.insert(out.end(), data.begin(), data.end());
    return out;
}

std::vector<std::byte> u8_data(std::size_t count, std::size_t seed)
{
    std::vector<std::byte> data(count);
    for (std::size_t i = 0; i < count; ++i) {
        data[i] = static_cast<std::byte>((i * 7 + seed) % 256);
    }
    return data;
}

// @p bytes as a gzip file, compressed by zlib here (deflate with a gzip wrapper).
std::vector<std::byte> gzip(const std::vector<std::byte>& bytes)
{
    z_stream z{};
    REQUIRE(deflateInit2(&z, Z_BEST_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8,
                         Z_DEFAULT_STRATEGY) == Z_OK);
    std::vector<std::byte> out(deflateBound(&z, static_cast<uLong>(bytes.size())) + 32);
    z.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(bytes.data()));
    z.avail_in = static_cast<uInt>(bytes.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    const int status = deflate(&z, Z_FINISH);
    out.resize(z.total_out);
    deflateEnd(&z);
    REQUIRE(status == Z_STREAM_END);
    return out;
}

std::vector<std::byte> concatenated(std::vector<std::byte> a, const std::vector<std::byte>& b)
{
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

std::optional<gpu::nn::format_error> parse_error(const std::vector<std::byte>& bytes,
                                                 std::uint64_t max_bytes = 1 << 20)
{
    return gpu::test::format_error_of(
        [&] { static_cast<void>(gpu::nn::parse_idx(bytes, "f.idx", max_bytes)); });
}

} // namespace

TEST_CASE("this build reads gzip", "[nn][idx]")
{
    CHECK(gpu::nn::
              idx_reads_gzip()); // the tests link zlib, and so did cudagap_nn (same find_package)
    CHECK(gpu::nn::to_string(idx_type::f32) == "f32");
    CHECK(gpu::nn::element_size(idx_type::f64) == 8);
    CHECK(gpu::nn::element_size(static_cast<idx_type>(0x07)) == 0);
    CHECK(gpu::nn::to_string(static_cast<idx_type>(0x07)) == "unknown");
}

TEST_CASE("MNIST images and labels read raw and gzip, told apart by content, not name", "[nn][idx]")
{
    const gpu::test::temporary_folder folder;
    const std::vector<std::byte> pixels = u8_data(3 * 4 * 5, 1);
    const std::vector<std::byte> labels = u8_data(3, 2);
    const std::vector<std::byte> images_file = idx_file(0x08, {3, 4, 5}, pixels);
    const std::vector<std::byte> labels_file = idx_file(0x08, {3}, labels);
    gpu::test::write_file(folder / "images.idx", images_file);
    gpu::test::write_file(folder / "labels.gz", labels_file); // raw despite the name
    gpu::test::write_file(folder / "images.gz", gzip(images_file));
    gpu::test::write_file(folder / "labels-idx1-ubyte", gzip(labels_file)); // gzip despite the name

    for (const auto& [images_name, labels_name] :
         {std::pair{"images.idx", "labels.gz"}, std::pair{"images.gz", "labels-idx1-ubyte"}}) {
        INFO(images_name);
        const gpu::nn::idx_dataset data =
            gpu::nn::read_idx_dataset(folder / images_name, folder / labels_name);
        CHECK(data.images.count == 3);
        CHECK(data.images.rows == 4);
        CHECK(data.images.cols == 5);
        REQUIRE(data.images.pixels.size() == pixels.size());
        CHECK(std::memcmp(data.images.pixels.data(), pixels.data(), pixels.size()) == 0);
        REQUIRE(data.labels.size() == 3);
        CHECK(data.labels[2] == static_cast<std::uint8_t>(labels[2]));
    }
    const gpu::nn::idx_array array = gpu::nn::read_idx(folder / "images.gz");
    CHECK(array.type == idx_type::u8);
    CHECK(array.dims == std::vector<std::size_t>{3, 4, 5});
    CHECK(array.data == pixels);
}

TEST_CASE("every element type reads in this machine's byte order", "[nn][idx]")
{
    std::vector<std::byte> data;
    append_big_endian(data, static_cast<std::uint16_t>(-300), 2);
    append_big_endian(data, 1000, 2);
    const gpu::nn::idx_array i16 = gpu::nn::parse_idx(gzip(idx_file(0x0B, {2}, data)));
    std::int16_t i16_values[2];
    REQUIRE(i16.data.size() == sizeof i16_values);
    std::memcpy(i16_values, i16.data.data(), sizeof i16_values);
    CHECK(i16_values[0] == -300);
    CHECK(i16_values[1] == 1000);

    data.clear();
    append_big_endian(data, static_cast<std::uint32_t>(-70000), 4);
    const gpu::nn::idx_array i32 = gpu::nn::parse_idx(idx_file(0x0C, {1, 1}, data));
    std::int32_t i32_value = 0;
    std::memcpy(&i32_value, i32.data.data(), 4);
    CHECK(i32_value == -70000);
    CHECK(i32.dims == std::vector<std::size_t>{1, 1});

    data.clear();
    append_big_endian(data, std::bit_cast<std::uint32_t>(-2.25F), 4);
    append_big_endian(data, std::bit_cast<std::uint32_t>(1.5F), 4);
    const gpu::nn::idx_array f32 = gpu::nn::parse_idx(idx_file(0x0D, {2}, data));
    float f32_values[2];
    std::memcpy(f32_values, f32.data.data(), sizeof f32_values);
    CHECK(f32_values[0] == -2.25F);
    CHECK(f32_values[1] == 1.5F);

    data.clear();
    append_big_endian(data, std::bit_cast<std::uint64_t>(0.1), 8);
    const gpu::nn::idx_array f64 = gpu::nn::parse_idx(idx_file(0x0E, {1}, data));
    double f64_value = 0;
    std::memcpy(&f64_value, f64.data.data(), 8);
    CHECK(f64_value == 0.1);

    const gpu::nn::idx_array i8 = gpu::nn::parse_idx(idx_file(0x09, {1}, {std::byte{0xFE}}));
    CHECK(i8.type == idx_type::i8);
    CHECK(static_cast<std::int8_t>(i8.data[0]) == -2);
}

TEST_CASE("scalars, empty data sets and multi-member gzip files read", "[nn][idx]")
{
    const gpu::nn::idx_array scalar = gpu::nn::parse_idx(idx_file(0x08, {}, {std::byte{9}}));
    CHECK(scalar.dims.empty());
    CHECK(scalar.data == std::vector<std::byte>{std::byte{9}});
    const gpu::nn::idx_array empty = gpu::nn::parse_idx(gzip(idx_file(0x0D, {0, 28, 28}, {})));
    CHECK(empty.dims == std::vector<std::size_t>{0, 28, 28});
    CHECK(empty.data.empty());

    // `cat a.gz b.gz` is a gzip file of a then b, as gunzip reads it.
    const std::vector<std::byte> file = idx_file(0x08, {2, 3}, u8_data(6, 3));
    const std::size_t half = file.size() / 2;
    const std::vector<std::byte> first(file.begin(),
                                       file.begin() + static_cast<std::ptrdiff_t>(half));
    const std::vector<std::byte> second(file.begin() + static_cast<std::ptrdiff_t>(half),
                                        file.end());
    CHECK(gpu::nn::parse_idx(concatenated(gzip(first), gzip(second))).data == u8_data(6, 3));
}

namespace {

std::vector<std::byte> with_byte(std::vector<std::byte> bytes, std::size_t index,
                                 std::uint8_t value)
{
    bytes.at(index) = std::byte{value};
    return bytes;
}

std::vector<std::byte> prefix(const std::vector<std::byte>& bytes, std::size_t size)
{
    return {bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(size)};
}

struct broken_case {
    const char* what;             // the case
    std::vector<std::byte> bytes; // the file
    const char* field;            // the field the error names
    const char* problem;          // text the error holds
};

std::vector<broken_case> broken_headers()
{
    const std::vector<std::byte> good = idx_file(0x08, {2, 3}, u8_data(6, 0));
    return {
        {"an empty file",
         {},
         "magic",
         "the file ends after 0 of the 4 bytes of the magic number (truncated file)"},
        {"three bytes", prefix(good, 3), "magic", "ends after 3 of the 4 bytes"},
        {"a magic number without its zeros", with_byte(good, 0, 0x01), "magic",
         "0x01000802: an IDX file starts with two zero bytes"},
        {"an unknown element type", with_byte(good, 2, 0x0A), "magic",
         "0x00000A02: unknown element type 0x0A"},
        {"dimensions cut short", prefix(good, 10), "dims",
         "the file ends after 6 of the 8 bytes of the 2 dimensions the magic number names"},
        {"dimensions whose size overflows",
         idx_file(0x0E, {0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, {}), "dims",
         "[4294967295, 4294967295, 4294967295] of f64 hold more than 2^64 - 1 bytes"},
        {"dimensions past the limit", idx_file(0x0C, {1024, 1024}, {}), "dims",
         "[1024, 1024] of i32 hold 4194304 bytes, over the limit of 1048576 (max_bytes)"},
    };
}

std::vector<broken_case> broken_data()
{
    const std::vector<std::byte> good = idx_file(0x08, {2, 3}, u8_data(6, 0));
    std::vector<std::byte> bad_crc = gzip(good);
    bad_crc[bad_crc.size() - 8] ^= std::byte{0xFF}; // the CRC-32 in the trailer
    std::vector<std::byte> bad_length = gzip(good);
    bad_length[bad_length.size() - 4] ^= std::byte{0x01}; // the length in the trailer
    const std::vector<std::byte> bad_block =
        with_byte(gzip(good), 10, 0xFF); // a reserved block type
    return {
        {"data cut short", prefix(good, good.size() - 1), "data",
         "dims [2, 3] need 6 bytes of data, the file holds 5 (truncated file)"},
        {"data too long", concatenated(good, {std::byte{1}}), "data",
         "the file holds more than the 6 bytes of data that dims [2, 3] need"},
        {"a gzip file cut short", prefix(gzip(good), gzip(good).size() - 5), "gzip",
         "ends early (truncated file)"},
        {"a gzip file cut in its header", prefix(gzip(good), 5), "gzip", "ends early"},
        {"gzip with a bad CRC", bad_crc, "gzip",
         "corrupted compressed data (zlib: incorrect data check)"},
        {"gzip with a bad length", bad_length, "gzip",
         "corrupted compressed data (zlib: incorrect length check)"},
        {"gzip with a bad block", bad_block, "gzip",
         "corrupted compressed data (zlib: invalid block type)"},
        {"gzip then garbage", concatenated(gzip(good), gpu::test::bytes_of("xyz")), "gzip",
         "3 bytes after the end of the compressed data are not gzip"},
        {"gzip of too much data", gzip(concatenated(good, {std::byte{1}})), "data",
         "the file holds more than"},
        {"gzip of too little data", gzip(prefix(good, good.size() - 2)), "data",
         "the file holds 4 (truncated file)"},
    };
}

void check_broken(const broken_case& c, const gpu::test::temporary_folder& folder)
{
    INFO(c.what);
    const auto from_memory = parse_error(c.bytes);
    REQUIRE(from_memory.has_value());
    CHECK(from_memory->file() == "f.idx");
    CHECK(from_memory->field() == c.field);
    CHECK_THAT(from_memory->what(), ContainsSubstring(c.problem));

    const auto path = folder / "broken-idx";
    gpu::test::write_file(path, c.bytes);
    const auto from_file =
        gpu::test::format_error_of([&] { static_cast<void>(gpu::nn::read_idx(path, 1 << 20)); });
    REQUIRE(from_file.has_value());
    CHECK(std::string(from_file->what()).rfind(path.string() + ": " + c.field + ": ", 0) == 0);
}

} // namespace

TEST_CASE("a broken IDX header is a format_error naming the file and the field", "[nn][idx]")
{
    const gpu::test::temporary_folder folder;
    for (const broken_case& c : broken_headers()) {
        check_broken(c, folder);
    }
}

TEST_CASE("IDX data that does not match its dims, or broken gzip, is a format_error", "[nn][idx]")
{
    const gpu::test::temporary_folder folder;
    for (const broken_case& c : broken_data()) {
        check_broken(c, folder);
    }
}

TEST_CASE("images, labels and their counts are checked against what MNIST holds", "[nn][idx]")
{
    const gpu::test::temporary_folder folder;
    gpu::test::write_file(folder / "images", idx_file(0x08, {2, 2, 2}, u8_data(8, 0)));
    gpu::test::write_file(folder / "labels", idx_file(0x08, {3}, u8_data(3, 0)));
    gpu::test::write_file(folder / "floats", idx_file(0x0D, {1, 1, 1}, u8_data(4, 0)));

    const auto labels_as_images = gpu::test::format_error_of(
        [&] { static_cast<void>(gpu::nn::read_idx_images(folder / "labels")); });
    REQUIRE(labels_as_images.has_value());
    CHECK(labels_as_images->field() == "magic");
    CHECK_THAT(labels_as_images->what(),
               ContainsSubstring(
                   "0x00000801 (u8 in 1 dimensions), not 0x00000803 (u8 images [n, rows, cols])"));

    const auto floats = gpu::test::format_error_of(
        [&] { static_cast<void>(gpu::nn::read_idx_images(folder / "floats")); });
    REQUIRE(floats.has_value());
    CHECK_THAT(floats->what(), ContainsSubstring("0x00000D03 (f32 in 3 dimensions)"));

    const auto images_as_labels = gpu::test::format_error_of(
        [&] { static_cast<void>(gpu::nn::read_idx_labels(folder / "images")); });
    REQUIRE(images_as_labels.has_value());
    CHECK_THAT(images_as_labels->what(), ContainsSubstring("not 0x00000801 (u8 labels [n])"));

    const auto counts = gpu::test::format_error_of([&] {
        static_cast<void>(gpu::nn::read_idx_dataset(folder / "images", folder / "labels"));
    });
    REQUIRE(counts.has_value());
    CHECK(counts->file() == (folder / "labels").string());
    CHECK(counts->field() == "count");
    CHECK_THAT(counts->what(), ContainsSubstring("3 labels, but " + (folder / "images").string() +
                                                 " holds 2 images"));

    try {
        static_cast<void>(gpu::nn::read_idx(folder / "absent"));
        FAIL("the read succeeded");
    } catch (const std::filesystem::filesystem_error& e) {
        CHECK(e.code() == std::errc::no_such_file_or_directory);
        CHECK_THAT(e.what(), ContainsSubstring("gpu::nn::read_idx: cannot open"));
    }
}

TEST_CASE("every prefix of a good IDX file, raw or gzip, is a format_error", "[nn][idx]")
{
    const std::vector<std::byte> raw = idx_file(0x0B, {3, 2}, u8_data(12, 5));
    for (const std::vector<std::byte>& good : {raw, gzip(raw)}) {
        REQUIRE_NOTHROW(gpu::nn::parse_idx(good));
        for (std::size_t size = 0; size < good.size(); ++size) {
            INFO("prefix of " << size << " of " << good.size() << " bytes");
            CHECK(parse_error(prefix(good, size)).has_value());
        }
    }
}
