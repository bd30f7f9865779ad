/// @file format_error.hpp
/// @brief `gpu::nn::format_error`: a file that the nn component reads (a safetensors
/// checkpoint, an IDX data set) is not what its format says, or does not hold what the program
/// asked of it.
///
/// @code
/// try {
///     const gpu::nn::safetensors_file file = gpu::nn::read_safetensors("model.safetensors");
/// } catch (const gpu::nn::format_error& e) {
///     std::fprintf(stderr, "%s\n", e.what()); // model.safetensors: tensor 'fc.weight': ...
/// }
/// @endcode
#pragma once

#include <stdexcept>
#include <string>
#include <utility>

namespace gpu::nn {

/// @brief The contents of a file (or of bytes given as one) break its format, or are not what
/// the program expects (another shape, a missing tensor): a `std::runtime_error`.
///
/// Why not `std::invalid_argument`: the caller passed a valid path and could not have checked
/// the bytes before the call (the reader is that check); like `std::format_error` and
/// `std::filesystem::filesystem_error`, the failure comes from the outside world, found while
/// running. Why not a `gpu::error`: no library status failed; there is no API, status code or
/// device to report. What cannot be opened, read or written is a
/// `std::filesystem::filesystem_error` (also a `std::runtime_error`), so one
/// `catch (const std::runtime_error&)` takes every way a load can fail.
///
/// `what()` reads `<file>: <field>: <problem>`.
class format_error : public std::runtime_error {
public:
    /// @param file the path read, or the label given to a parse from memory
    /// @param field the part of the file that is wrong: `header length`, `tensor 'fc.weight'`,
    ///   `magic`, `dims`, ...
    /// @param problem what is wrong, with the values found and expected
    format_error(std::string file, std::string field, const std::string& problem)
        : std::runtime_error(file + ": " + field + ": " + problem), file_(std::move(file)),
          field_(std::move(field))
    {}

    /// @brief The path read, or the label of the bytes parsed.
    [[nodiscard]] const std::string& file() const noexcept { return file_; }

    /// @brief The part of the file that is wrong.
    [[nodiscard]] const std::string& field() const noexcept { return field_; }

private:
    std::string file_;
    std::string field_;
};

} // namespace gpu::nn
