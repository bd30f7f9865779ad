/// @file unique_id.hpp
/// @brief The bootstrap of a multi-process job: `gpu::nccl::unique_id` (NCCL's `ncclUniqueId`,
/// made once by rank 0 and given to every rank), its bytes, and its exchange through a file
/// that every rank can see, with a timeout (`bootstrap_error`).
///
/// This is what `torchrun`'s rendezvous does for PyTorch, reduced to one shared file: rank 0
/// writes the id, the others wait for it.
///
/// @code
/// const std::filesystem::path file = "/shared/job-42/nccl-id";
/// const gpu::nccl::unique_id id = rank == 0
///     ? gpu::nccl::unique_id::create_file(file) // ncclGetUniqueId, written atomically
///     : gpu::nccl::unique_id::wait_for_file(file, std::chrono::seconds(60));
/// auto comm = gpu::nccl::communicator::init_rank(id, rank, size, gpu::device(local_rank));
/// @endcode
///
/// Use a file name of this job only (a fresh folder per launch): a file left by an earlier job
/// holds another id, which the other ranks would read at once and then wait on in vain.
#pragma once

#include <gpu/nccl/version.hpp> // NCCL's header, and the oldest release cudagap accepts

#include <cuda_bf16.h> // first: nccl.h declares ncclBfloat16 only when the bf16 types exist
#include <nccl.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <span>
#include <stdexcept>
#include <string>

namespace gpu::nccl {

/// @brief The bootstrap of a job failed outside NCCL: the unique id's file did not appear in
/// time, or it holds something else than an id. `what()` names the file and, for a timeout, the
/// time waited.
class bootstrap_error : public std::runtime_error {
public:
    /// @brief Builds the error.
    /// @param what the whole message
    /// @param path the unique id's file
    /// @param waited how long the caller waited (zero when it did not wait)
    bootstrap_error(const std::string& what, std::filesystem::path path,
                    std::chrono::milliseconds waited);

    /// @brief The unique id's file.
    [[nodiscard]] const std::filesystem::path& path() const noexcept { return path_; }
    /// @brief How long the caller waited for it.
    [[nodiscard]] std::chrono::milliseconds waited() const noexcept { return waited_; }

private:
    std::filesystem::path path_;
    std::chrono::milliseconds waited_;
};

/// @brief NCCL's unique id: the address of rank 0's bootstrap, which every rank of one
/// communicator must be given. A value (`NCCL_UNIQUE_ID_BYTES` = 128 opaque bytes).
class unique_id {
public:
    /// @brief The number of bytes of an id.
    static constexpr std::size_t size_bytes = NCCL_UNIQUE_ID_BYTES;

    /// @brief An id of zeros (what `ncclUniqueId{}` is): not one that NCCL made, so a
    /// communicator made from it fails to connect. Here to be assigned.
    unique_id() noexcept = default;

    /// @brief Wraps an id made elsewhere (`ncclGetUniqueId`, another library).
    explicit unique_id(const ncclUniqueId& raw) noexcept : raw_(raw) {}

    /// @brief Makes a new id (`ncclGetUniqueId`): rank 0 of a job calls this once. It opens the
    /// bootstrap's listening socket in this process; no GPU is needed.
    /// @throws gpu::nccl::nccl_error when NCCL cannot (no network interface:
    /// `ncclSystemError`, see the hint)
    [[nodiscard]] static unique_id create();

    /// @brief The id's bytes, to send to the other ranks by any channel.
    [[nodiscard]] std::array<std::byte, size_bytes> to_bytes() const noexcept;

    /// @brief The id of @p bytes (what `to_bytes` gave on another rank).
    /// @throws std::invalid_argument when @p bytes is not `size_bytes` long (both sizes named)
    [[nodiscard]] static unique_id from_bytes(std::span<const std::byte> bytes);

    /// @brief Writes the id's bytes to @p path: to a temporary name in the same folder, closed
    /// (a file system may report a failed write only then), then renamed, so that a rank
    /// waiting for the file never reads half of it. Replaces a file of that name.
    /// @throws std::filesystem::filesystem_error when the file cannot be written, closed or
    /// renamed (with the system's error; no temporary file is left)
    void write_file(const std::filesystem::path& path) const;

    /// @brief `create()`, then `write_file(path)`: what rank 0 does.
    [[nodiscard]] static unique_id create_file(const std::filesystem::path& path);

    /// @brief Reads the id that `write_file` wrote to @p path, now.
    /// @throws std::filesystem::filesystem_error when the file cannot be read (it does not
    /// exist: use `wait_for_file`)
    /// @throws bootstrap_error when the file does not hold `size_bytes` bytes (its size named)
    [[nodiscard]] static unique_id read_file(const std::filesystem::path& path);

    /// @brief Waits until @p path exists, then reads the id in it: what ranks other than 0 do.
    /// Polls every @p poll_interval (never faster than 1 ms); never blocks longer than
    /// @p timeout plus one read.
    /// @throws std::invalid_argument when @p timeout or @p poll_interval is negative
    /// @throws bootstrap_error when the file did not appear within @p timeout (the file and the
    /// time waited named, with what to check), or holds something else than an id
    /// @throws std::filesystem::filesystem_error at once when the file cannot be looked for (a
    /// folder on the way that may not be searched, a loop of symbolic links: waiting would not
    /// help), or when it appeared but cannot be read
    [[nodiscard]] static unique_id
    wait_for_file(const std::filesystem::path& path, std::chrono::milliseconds timeout,
                  std::chrono::milliseconds poll_interval = std::chrono::milliseconds(20));

    /// @brief The raw id, for NCCL's own calls.
    [[nodiscard]] const ncclUniqueId& get() const noexcept { return raw_; }

    /// @brief Ids are equal when their bytes are.
    friend bool operator==(const unique_id& a, const unique_id& b) noexcept
    {
        return a.to_bytes() == b.to_bytes();
    }

private:
    ncclUniqueId raw_{};
};

} // namespace gpu::nccl
