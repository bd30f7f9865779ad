// The unique id's bytes and its exchange through a file: written to a temporary name and
// renamed (a reader never sees half an id), waited for with a deadline.
#include <gpu/nccl/unique_id.hpp>

#include <gpu/detail/expects.hpp>
#include <gpu/nccl/error.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <system_error>
#include <thread>
#include <unistd.h>

namespace gpu::nccl {

namespace {

std::string seconds_text(std::chrono::milliseconds duration)
{
    std::array<char, 32> text{};
    std::snprintf(text.data(), text.size(), "%.1f s",
                  static_cast<double>(duration.count()) / 1000.0);
    return text.data();
}

// @p error is the errno of the failure, read at once; 0 when the stream did not say (a stream
// need not set errno), which becomes EIO rather than an unrelated older errno.
[[noreturn]] void throw_io_error(const char* what, const std::filesystem::path& path, int error)
{
    throw std::filesystem::filesystem_error(
        std::string("gpu::nccl::unique_id: ") + what, path,
        std::error_code(error != 0 ? error : EIO, std::generic_category()));
}

// Writes @p bytes to @p path and closes it, so that an error reported only at close (a full
// disk, a network file system) is seen; throws filesystem_error, and leaves no file, when the
// bytes are not all on disk.
void write_closed(const std::filesystem::path& path, std::span<const std::byte> bytes)
{
    errno = 0;
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (out) {
        out.write(reinterpret_cast<const char*>(bytes.data()),
                  static_cast<std::streamsize>(bytes.size()));
    }
    if (out) {
        out.close();
    }
    if (out.fail()) {
        const int error = errno;
        std::error_code ignored;
        std::filesystem::remove(path, ignored);
        throw_io_error("cannot write the unique id to a temporary file", path, error);
    }
}

} // namespace

bootstrap_error::bootstrap_error(const std::string& what, std::filesystem::path path,
                                 std::chrono::milliseconds waited)
    : std::runtime_error(what), path_(std::move(path)), waited_(waited)
{}

unique_id unique_id::create()
{
    ncclUniqueId raw{};
    GPU_NCCL_CHECK(ncclGetUniqueId(&raw));
    return unique_id(raw);
}

std::array<std::byte, unique_id::size_bytes> unique_id::to_bytes() const noexcept
{
    std::array<std::byte, size_bytes> bytes{};
    std::memcpy(bytes.data(), raw_.internal, size_bytes);
    return bytes;
}

unique_id unique_id::from_bytes(std::span<const std::byte> bytes)
{
    GPU_EXPECTS(bytes.size() == size_bytes, std::invalid_argument,
                "gpu::nccl::unique_id::from_bytes: ", bytes.size(),
                " bytes given, an NCCL unique id has ", size_bytes);
    ncclUniqueId raw{};
    std::memcpy(raw.internal, bytes.data(), size_bytes);
    return unique_id(raw);
}

void unique_id::write_file(const std::filesystem::path& path) const
{
    // The temporary name is unique per process, in the same folder, so the rename is atomic.
    std::filesystem::path temporary = path;
    temporary += ".tmp." + std::to_string(::getpid());
    const std::array<std::byte, size_bytes> bytes = to_bytes();
    write_closed(temporary, bytes);
    std::error_code renamed;
    std::filesystem::rename(temporary, path, renamed);
    if (renamed) {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw std::filesystem::filesystem_error("gpu::nccl::unique_id::write_file: cannot rename",
                                                temporary, path, renamed);
    }
}

unique_id unique_id::create_file(const std::filesystem::path& path)
{
    const unique_id id = create();
    id.write_file(path);
    return id;
}

unique_id unique_id::read_file(const std::filesystem::path& path)
{
    errno = 0;
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw_io_error("cannot open the unique id's file", path, errno);
    }
    std::array<std::byte, size_bytes + 1> bytes{};
    in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got != size_bytes) {
        throw bootstrap_error("gpu::nccl::unique_id::read_file: " + path.string() + " holds " +
                                  (got > size_bytes ? "more than " + std::to_string(size_bytes)
                                                    : std::to_string(got)) +
                                  " bytes, not the " + std::to_string(size_bytes) +
                                  " of an NCCL unique id (unique_id::write_file writes them)",
                              path, std::chrono::milliseconds(0));
    }
    return from_bytes(std::span<const std::byte>(bytes.data(), size_bytes));
}

unique_id unique_id::wait_for_file(const std::filesystem::path& path,
                                   std::chrono::milliseconds timeout,
                                   std::chrono::milliseconds poll_interval)
{
    GPU_EXPECTS(timeout.count() >= 0 && poll_interval.count() >= 0, std::invalid_argument,
                "gpu::nccl::unique_id::wait_for_file: negative timeout (", timeout.count(),
                " ms) or poll interval (", poll_interval.count(), " ms)");
    const auto start = std::chrono::steady_clock::now();
    const auto interval = std::max(poll_interval, std::chrono::milliseconds(1));
    while (true) {
        // A failure other than "not there" (a folder it may not search, a loop of links) will
        // not go away by waiting: it is thrown now, not after the timeout as a missing id.
        std::error_code failed;
        if (std::filesystem::exists(path, failed)) {
            return read_file(path);
        }
        if (failed) {
            throw std::filesystem::filesystem_error(
                "gpu::nccl::unique_id::wait_for_file: cannot look for the unique id's file", path,
                failed);
        }
        const auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - start);
        if (waited >= timeout) {
            throw bootstrap_error("gpu::nccl::unique_id::wait_for_file: no unique id appeared at " +
                                      path.string() + " after waiting " + seconds_text(waited) +
                                      " (timeout " + seconds_text(timeout) +
                                      "): rank 0 writes it (unique_id::create_file); check that "
                                      "rank 0 started and did not fail, and that every rank "
                                      "names the same path on a file system they all see",
                                  path, waited);
        }
        std::this_thread::sleep_for(std::min(interval, timeout - waited));
    }
}

} // namespace gpu::nccl
