// gpu/nn/idx.hpp in a build without zlib (this suite compiles the reader with
// CUDAGAP_NN_HAVE_ZLIB=0): raw files still read; a gzip file is a format_error that says to
// install zlib or to gunzip the file.
#include <gpu/nn/idx.hpp>

#include "catch.hpp"
#include "file_support.hpp"

#include <array>
#include <cstdint>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<std::byte> bytes(std::initializer_list<std::uint8_t> values)
{
    std::vector<std::byte> out;
    for (const std::uint8_t v : values) {
        out.push_back(std::byte{v});
    }
    return out;
}

} // namespace

TEST_CASE("without zlib, raw IDX files read and gzip ones are refused with what to do", "[nn][idx]")
{
    CHECK_FALSE(gpu::nn::idx_reads_gzip());
    const std::vector<std::byte> raw = bytes({0, 0, 8, 1, 0, 0, 0, 2, 5, 6}); // labels {5, 6}
    // The same file compressed by Python's gzip.compress(raw, mtime=0).
    const std::vector<std::byte> compressed = bytes(
        {0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x02, 0x03, 0x63, 0x60, 0xE0, 0x60, 0x64,
         0x60, 0x60, 0x60, 0x62, 0x65, 0x03, 0x00, 0x69, 0xFD, 0x88, 0x01, 0x0A, 0x00, 0x00, 0x00});

    const gpu::test::temporary_folder folder;
    gpu::test::write_file(folder / "labels", raw);
    gpu::test::write_file(folder / "labels.gz", compressed);
    CHECK(gpu::nn::read_idx_labels(folder / "labels") == std::vector<std::uint8_t>{5, 6});

    const auto error = gpu::test::format_error_of(
        [&] { static_cast<void>(gpu::nn::read_idx_labels(folder / "labels.gz")); });
    REQUIRE(error.has_value());
    CHECK(error->file() == (folder / "labels.gz").string());
    CHECK(error->field() == "gzip");
    CHECK_THAT(error->what(), ContainsSubstring("this cudagap was built without zlib"));
    CHECK_THAT(error->what(), ContainsSubstring("gunzip the file"));
    CHECK_THAT(error->what(), ContainsSubstring("apt-get install zlib1g-dev"));
}
