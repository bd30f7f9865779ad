/// @file idx.hpp
/// @brief A reader of IDX files (http://yann.lecun.com/exdb/mnist/), the format of MNIST and
/// Fashion-MNIST, raw or gzip-compressed as they are distributed.
///
/// An IDX file is a big-endian magic number `0x0000TTNN` (TT the element type, NN the number
/// of dimensions), NN big-endian 32-bit dimensions, then the elements, row-major and
/// big-endian. MNIST's images are `0x00000803` (u8, [n, 28, 28]) and its labels `0x00000801`
/// (u8, [n]).
///
/// @code
/// const gpu::nn::idx_dataset train = gpu::nn::read_idx_dataset(
///     "data/train-images-idx3-ubyte.gz", "data/train-labels-idx1-ubyte.gz");
/// std::printf("%zu images of %zux%zu\n", train.images.count, train.images.rows,
///             train.images.cols);
/// @endcode
///
/// Every read checks the whole file: a truncated, corrupted or inconsistent file is a
/// `gpu::nn::format_error` naming the file and the bad field, never a read out of bounds.
#pragma once

#include <gpu/nn/format_error.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::nn {

/// @brief The element type of an IDX file: the third byte of its magic number.
enum class idx_type : std::uint8_t {
    u8 = 0x08,  ///< unsigned byte (MNIST's pixels and labels)
    i8 = 0x09,  ///< signed byte
    i16 = 0x0B, ///< 16-bit integer
    i32 = 0x0C, ///< 32-bit integer
    f32 = 0x0D, ///< IEEE single precision
    f64 = 0x0E, ///< IEEE double precision
};

/// @brief `u8`, `i8`, `i16`, `i32`, `f32` or `f64`; `unknown` for any other value.
[[nodiscard]] std::string_view to_string(idx_type type) noexcept;

/// @brief Bytes per element (1, 2, 4 or 8); 0 for a value outside the enumeration.
[[nodiscard]] std::size_t element_size(idx_type type) noexcept;

/// @brief The contents of an IDX file.
struct idx_array {
    idx_type type = idx_type::u8;    ///< the element type
    std::vector<std::size_t> dims{}; ///< the dimensions, outermost first
    /// The elements, row-major, in this machine's byte order (converted from the file's
    /// big-endian): `std::memcpy` them into `float`s for `f32`.
    std::vector<std::byte> data{};
};

/// @brief MNIST-style images: `count` images of `rows` x `cols` unsigned bytes.
struct idx_images {
    std::size_t count = 0;              ///< the number of images
    std::size_t rows = 0;               ///< the height of each image
    std::size_t cols = 0;               ///< the width of each image
    std::vector<std::uint8_t> pixels{}; ///< count * rows * cols pixels, image by image, row-major
};

/// @brief A data set: images and their labels, as many of each.
struct idx_dataset {
    idx_images images{};                ///< the images
    std::vector<std::uint8_t> labels{}; ///< one label per image
};

/// @brief The default limit on the data an IDX file may hold once decompressed: 16 GiB, far
/// above any MNIST-format data set, far below what a garbled header can claim (a gzip file's
/// size says nothing of what it expands to).
inline constexpr std::uint64_t idx_default_max_bytes = std::uint64_t{1} << 34;

/// @brief Whether this build reads gzip-compressed IDX files (it was built with zlib). Without,
/// a `.gz` file is refused with a `format_error` that says how to get zlib or to gunzip it.
[[nodiscard]] bool idx_reads_gzip() noexcept;

/// @brief Reads the IDX file @p path, raw or gzip-compressed (told by gzip's magic bytes, not by
/// the name).
/// @param path the file
/// @param max_bytes the most data the file may hold (see `idx_default_max_bytes`)
/// @throws std::filesystem::filesystem_error when it cannot be opened or read
/// @throws format_error naming @p path and the bad field: a truncated file or gzip stream, a
///   magic number whose first two bytes are not zero or whose type is unknown, dimensions whose
///   size overflows or passes @p max_bytes, data shorter or longer than the dimensions say,
///   corrupted gzip data (a bad checksum), or gzip in a build without zlib
[[nodiscard]] idx_array read_idx(const std::filesystem::path& path,
                                 std::uint64_t max_bytes = idx_default_max_bytes);

/// @brief Reads an IDX file already in memory (@p bytes, raw or gzip-compressed).
/// @param bytes the whole file
/// @param source what errors call the bytes (a path, `<memory>`)
/// @param max_bytes the most data the file may hold
/// @throws format_error as `read_idx`, naming @p source
[[nodiscard]] idx_array parse_idx(std::span<const std::byte> bytes,
                                  std::string_view source = "<memory>",
                                  std::uint64_t max_bytes = idx_default_max_bytes);

/// @brief Reads an images file: magic `0x00000803`, unsigned bytes [n, rows, cols].
/// @throws format_error as `read_idx`, and naming the magic when the file holds another type or
///   number of dimensions (a labels file given as images)
[[nodiscard]] idx_images read_idx_images(const std::filesystem::path& path);

/// @brief Reads a labels file: magic `0x00000801`, unsigned bytes [n].
/// @throws format_error as `read_idx`, and naming the magic when the file holds another type or
///   number of dimensions
[[nodiscard]] std::vector<std::uint8_t> read_idx_labels(const std::filesystem::path& path);

/// @brief Reads an images file and its labels file, and checks that they count the same items.
/// @throws format_error as `read_idx_images` and `read_idx_labels`, and naming both files and
///   both counts when they differ (a training images file paired with the test labels)
[[nodiscard]] idx_dataset read_idx_dataset(const std::filesystem::path& images_path,
                                           const std::filesystem::path& labels_path);

} // namespace gpu::nn
