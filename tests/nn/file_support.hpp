// Helpers of the nn file-format tests: a temporary folder, files of bytes, and catching the
// format_error that a corrupt file must give.
#pragma once

#include <gpu/nn/format_error.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::test {

/// A new, empty folder under the system's temporary folder, removed with everything in it.
class temporary_folder {
public:
    temporary_folder()
    {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "cudagap-nn-XXXXXX").string();
        if (::mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("mkdtemp failed for " + pattern);
        }
        path_ = pattern;
    }
    temporary_folder(const temporary_folder&) = delete;
    temporary_folder& operator=(const temporary_folder&) = delete;
    ~temporary_folder()
    {
        std::error_code ignored;
        std::filesystem::permissions(path_, std::filesystem::perms::owner_all, ignored);
        std::filesystem::remove_all(path_, ignored);
    }

    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    [[nodiscard]] std::filesystem::path operator/(std::string_view name) const
    {
        return path_ / name;
    }

    /// The names in the folder, sorted.
    [[nodiscard]] std::vector<std::string> names() const
    {
        std::vector<std::string> out;
        for (const auto& entry : std::filesystem::directory_iterator(path_)) {
            out.push_back(entry.path().filename().string());
        }
        std::sort(out.begin(), out.end());
        return out;
    }

private:
    std::filesystem::path path_;
};

/// The bytes of a text, as a file holds them.
inline std::vector<std::byte> bytes_of(std::string_view text)
{
    const auto* first = reinterpret_cast<const std::byte*>(text.data());
    return {first, first + text.size()};
}

inline void write_file(const std::filesystem::path& path, const std::vector<std::byte>& bytes)
{
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
    if (!out) {
        throw std::runtime_error("cannot write " + path.string());
    }
}

inline std::vector<std::byte> read_file(const std::filesystem::path& path)
{
    std::ifstream in(path, std::ios::binary);
    const std::vector<char> chars{std::istreambuf_iterator<char>(in),
                                  std::istreambuf_iterator<char>()};
    const auto* first = reinterpret_cast<const std::byte*>(chars.data());
    return {first, first + chars.size()};
}

/// The format_error that @p work throws, or nothing when it returns. Any other exception
/// escapes, and fails the test that called it.
template <class Work>
std::optional<gpu::nn::format_error> format_error_of(Work&& work)
{
    try {
        work();
    } catch (const gpu::nn::format_error& e) {
        return e;
    }
    return std::nullopt;
}

} // namespace gpu::test
