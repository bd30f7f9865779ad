// Private to cudagap_nn: reading a whole file, and writing one atomically (a temporary file
// beside it, flushed, then renamed over it). POSIX calls, so that every failure carries errno.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::nn::detail {

/// The bytes of @p path.
/// @throws std::filesystem::filesystem_error ("<function>: cannot open"/"cannot read", the
///   path, errno) when it cannot be opened or read (missing, a folder, no permission)
[[nodiscard]] std::vector<std::byte> read_whole_file(const std::filesystem::path& path,
                                                     std::string_view function);

/// Writes a file atomically: the bytes go to a new temporary file in the target's folder
/// (`<target>.tmp<pid>.<n>`, created exclusively, with the permissions a new file gets), and
/// commit() flushes it to the disk and renames it over the target. Destroyed without commit()
/// (an error on the way), it removes the temporary file: the target is never touched until the
/// rename, which POSIX makes atomic.
class atomic_writer {
public:
    /// Creates the temporary file.
    /// @throws std::filesystem::filesystem_error naming @p target when it cannot
    atomic_writer(std::filesystem::path target, std::string_view function);
    atomic_writer(const atomic_writer&) = delete;
    atomic_writer& operator=(const atomic_writer&) = delete;
    ~atomic_writer();

    /// Appends @p bytes to the temporary file.
    /// @throws std::filesystem::filesystem_error when the write fails (a full disk, a size limit)
    void write(std::span<const std::byte> bytes);

    /// Flushes the temporary file to the disk (fsync) and closes it; nothing more can be
    /// written. Does nothing the second time. Lets a caller finish several files before it
    /// renames any (a training checkpoint's pair).
    /// @throws std::filesystem::filesystem_error when either fails
    void finish();

    /// Finishes the temporary file (when not yet done) and renames it over the target; then
    /// flushes the folder, so that the rename itself survives a crash.
    /// @throws std::filesystem::filesystem_error when the flush, the close or the rename fails
    void commit();

    /// The temporary file's path (for the tests).
    [[nodiscard]] const std::filesystem::path& temporary() const noexcept { return temporary_; }

private:
    [[noreturn]] void fail(const char* what, int error) const;

    std::filesystem::path target_;
    std::filesystem::path temporary_;
    std::string function_;
    int fd_ = -1;
    bool committed_ = false;
};

} // namespace gpu::nn::detail
