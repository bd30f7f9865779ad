// Reading whole files and writing them atomically (see file_io.hpp).
#include "file_io.hpp"

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <system_error>
#include <utility>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace gpu::nn::detail {
namespace {

[[noreturn]] void throw_io(std::string_view function, const char* what,
                           const std::filesystem::path& path, int error)
{
    throw std::filesystem::filesystem_error(std::string(function) + ": " + what, path,
                                            std::error_code(error, std::generic_category()));
}

// Closes a descriptor on every path out of a scope.
class descriptor {
public:
    explicit descriptor(int fd) noexcept : fd_(fd) {}
    descriptor(const descriptor&) = delete;
    descriptor& operator=(const descriptor&) = delete;
    ~descriptor()
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    [[nodiscard]] int get() const noexcept { return fd_; }

private:
    int fd_;
};

// Flushes the folder holding @p path, so that a rename into it is on the disk too. Best effort:
// the file is already in place, and some file systems refuse fsync on a folder.
void flush_folder(const std::filesystem::path& path) noexcept
{
    std::filesystem::path folder = path.parent_path();
    if (folder.empty()) {
        folder = ".";
    }
    const descriptor fd(::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (fd.get() >= 0) {
        static_cast<void>(::fsync(fd.get()));
    }
}

} // namespace

std::vector<std::byte> read_whole_file(const std::filesystem::path& path, std::string_view function)
{
    const descriptor fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (fd.get() < 0) {
        throw_io(function, "cannot open", path, errno);
    }
    struct stat info {};
    std::size_t capacity = 1 << 16;
    if (::fstat(fd.get(), &info) == 0 && S_ISREG(info.st_mode) && info.st_size > 0) {
        capacity = static_cast<std::size_t>(info.st_size) + 1; // +1: meet the end in one read
    }
    std::vector<std::byte> bytes(capacity);
    std::size_t size = 0;
    while (true) {
        if (size == bytes.size()) {
            bytes.resize(bytes.size() * 2); // the file grew, or is not a regular file
        }
        const ::ssize_t got = ::read(fd.get(), bytes.data() + size, bytes.size() - size);
        if (got < 0) {
            if (errno == EINTR) {
                continue;
            }
            throw_io(function, "cannot read", path, errno);
        }
        if (got == 0) {
            break;
        }
        size += static_cast<std::size_t>(got);
    }
    bytes.resize(size);
    return bytes;
}

atomic_writer::atomic_writer(std::filesystem::path target, std::string_view function)
    : target_(std::move(target)), function_(function)
{
    // pid and a counter make the name unique between processes and threads; O_EXCL makes sure.
    static std::atomic<unsigned> counter{0};
    for (int attempt = 0; attempt < 100; ++attempt) {
        temporary_ = target_;
        temporary_ += ".tmp" + std::to_string(::getpid()) + "." + std::to_string(counter++);
        fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd_ >= 0 || errno != EEXIST) {
            break;
        }
    }
    if (fd_ < 0) {
        const int error = errno;
        throw std::filesystem::filesystem_error(
            function_ + ": cannot create a temporary file beside the target", target_, temporary_,
            std::error_code(error, std::generic_category()));
    }
}

atomic_writer::~atomic_writer()
{
    if (fd_ >= 0) {
        ::close(fd_);
    }
    if (!committed_) {
        ::unlink(temporary_.c_str());
    }
}

void atomic_writer::fail(const char* what, int error) const
{
    throw std::filesystem::filesystem_error(function_ + ": " + what, target_, temporary_,
                                            std::error_code(error, std::generic_category()));
}

void atomic_writer::write(std::span<const std::byte> bytes)
{
    while (!bytes.empty()) {
        const ::ssize_t written = ::write(fd_, bytes.data(), bytes.size());
        if (written < 0) {
            if (errno == EINTR) {
                continue;
            }
            fail("cannot write the temporary file", errno);
        }
        bytes = bytes.subspan(static_cast<std::size_t>(written));
    }
}

void atomic_writer::finish()
{
    if (fd_ < 0) {
        return;
    }
    // Data on the disk before the rename: otherwise a crash just after it can leave the new
    // name pointing at an empty or partial file on file systems that reorder the two.
    if (::fsync(fd_) != 0) {
        fail("cannot flush the temporary file to the disk", errno);
    }
    const int fd = std::exchange(fd_, -1);
    if (::close(fd) != 0) {
        fail("cannot close the temporary file", errno);
    }
}

void atomic_writer::commit()
{
    finish();
    if (::rename(temporary_.c_str(), target_.c_str()) != 0) {
        fail("cannot rename the temporary file over the target", errno);
    }
    committed_ = true;
    flush_folder(target_);
}

} // namespace gpu::nn::detail
