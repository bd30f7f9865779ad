/// @file communicator.hpp
/// @brief The owner of an NCCL communicator (`gpu::nccl::communicator`): made by rank from a
/// unique id (one process per GPU) or for every local GPU at once (one process, several GPUs),
/// and always destroyed or aborted, never waiting forever.
///
/// @code
/// // One process per GPU (rank and size from the launcher, the id through a shared file):
/// auto comm = gpu::nccl::communicator::init_rank(id, rank, size, gpu::device(local_rank));
/// // One process, every visible GPU (what ncclCommInitAll does):
/// std::vector<gpu::nccl::communicator> comms = gpu::nccl::communicator::init_all();
/// @endcode
///
/// Every communicator cudagap makes is **non-blocking** (`ncclConfig_t::blocking = 0`): NCCL
/// returns from a call that must wait for other ranks at once, and cudagap polls
/// `ncclCommGetAsyncError` until the call is done, up to a deadline. So a rank that never joins
/// makes `init_rank` throw after `communicator_options::timeout` instead of hanging, and the
/// destructor ends with `ncclCommFinalize` + `ncclCommDestroy` when the ranks finish within
/// `close_timeout`, or with `ncclCommAbort` when they do not or when the communicator had
/// failed. One thread that drives several communicators (`init_all`) queues their collectives
/// inside a `gpu::nccl::group_scope` (`<gpu/nccl/group.hpp>`), as NCCL requires.
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/device.hpp>
#include <gpu/nccl/unique_id.hpp>

#include <cuda_bf16.h> // first: nccl.h declares ncclBfloat16 only when the bf16 types exist
#include <nccl.h>

#include <chrono>
#include <span>
#include <vector>

namespace gpu::nccl {

/// @brief How long a communicator's operations may wait. Plain data.
struct communicator_options {
    /// How long creating the communicator, and any later call that NCCL reports in progress
    /// (the first collective sets up connections), may wait for the other ranks before
    /// `nccl_error` (status `ncclInProgress`) is thrown. Five minutes, like a job whose ranks
    /// start at different times; PyTorch's default is ten.
    std::chrono::milliseconds timeout{std::chrono::minutes(5)};
    /// How long the destructor (and `destroy`) lets `ncclCommFinalize` wait for the other ranks
    /// to finish their operations before it aborts the communicator instead.
    std::chrono::milliseconds close_timeout{std::chrono::seconds(30)};
};

namespace detail {

/// @brief A communicator as `communicator` owns it: the handle and what never changes about it
/// (read once, so that `rank()` makes no NCCL call). Plain data.
struct communicator_record {
    ncclComm_t comm = nullptr;                   ///< the handle
    int rank = 0;                                ///< this rank
    int size = 0;                                ///< the number of ranks
    int device = -1;                             ///< the CUDA device of this rank
    std::chrono::milliseconds timeout{};         ///< `communicator_options::timeout`
    std::chrono::milliseconds close_timeout{};   ///< `communicator_options::close_timeout`

    /// @brief Records compare field by field.
    friend bool operator==(const communicator_record&, const communicator_record&) = default;
};

/// @brief Finalizes and destroys the communicator, or aborts it when it failed or its ranks do
/// not finish within its close timeout; failures are reported, never thrown.
void close_communicator(const communicator_record& record) noexcept;

/// @brief Closes through `close_communicator`.
struct communicator_deleter {
    /// @brief Closes @p record's communicator.
    void operator()(const communicator_record& record) const noexcept { close_communicator(record); }
};

/// @brief Throws `std::invalid_argument` naming @p function, @p rank and @p size unless
/// `size >= 1` and `0 <= rank < size`.
void check_rank(const char* function, int rank, int size);

/// @brief Throws `std::invalid_argument` naming @p function unless @p options' durations are
/// positive.
void check_options(const char* function, const communicator_options& options);

/// @brief Throws `std::invalid_argument` naming @p function unless @p device_ids is not empty
/// and names no device twice (NCCL would refuse a duplicated GPU later, with less to say).
void check_devices(const char* function, std::span<const int> device_ids);

} // namespace detail

/// @brief An NCCL communicator: one rank of a group of GPUs that run collectives together.
/// Move-only; moved from, it is empty, and using it throws `std::logic_error`.
class communicator {
public:
    /// @brief An empty communicator (what a moved-from one is).
    communicator() noexcept = default;

    /// @brief Joins the communicator of @p size ranks that @p id names, as rank @p rank on
    /// @p dev (`ncclCommInitRankConfig`, non-blocking); returns when every rank has joined.
    /// Every rank calls this with the same @p id and @p size, each with its own @p rank and GPU.
    /// @throws std::invalid_argument when @p rank is not in [0, @p size) or a timeout is not
    /// positive (before any NCCL call)
    /// @throws gpu::nccl::nccl_error when NCCL fails (a duplicated GPU, the network, no GPU), or
    /// with status `ncclInProgress` when the other ranks did not all join within
    /// `options.timeout`; the half-made communicator is aborted first
    [[nodiscard]] static communicator init_rank(const unique_id& id, int rank, int size,
                                                gpu::device dev,
                                                const communicator_options& options = {});

    /// @brief One communicator per device of @p devices, in one process, rank i on
    /// `devices[i]`: what `ncclCommInitAll` does, with the non-blocking configuration (a group
    /// of `ncclCommInitRankConfig` calls under one new unique id). The current device is
    /// restored afterwards.
    /// @throws std::invalid_argument when @p devices is empty or names a device twice
    /// @throws gpu::nccl::nccl_error as `init_rank`; every communicator made so far is aborted
    [[nodiscard]] static std::vector<communicator> init_all(std::span<const gpu::device> devices,
                                                            const communicator_options& options = {});

    /// @brief `init_all` over every visible device (`gpu::devices()`).
    /// @throws std::invalid_argument when no device is visible
    [[nodiscard]] static std::vector<communicator> init_all(const communicator_options& options = {});

    /// @brief Adopts a communicator made elsewhere (e.g. by `ncclCommInitRank`, blocking or
    /// not): reads its rank, size and device, and closes it when done like its own.
    /// @throws std::invalid_argument for a null @p comm
    /// @throws gpu::nccl::nccl_error when NCCL cannot say its rank, size or device
    [[nodiscard]] static communicator from_native_handle(ncclComm_t comm,
                                                         const communicator_options& options = {});

    /// @brief This rank, in [0, size()).
    /// @throws std::logic_error when empty
    [[nodiscard]] int rank() const { return record("rank").rank; }
    /// @brief The number of ranks.
    /// @throws std::logic_error when empty
    [[nodiscard]] int size() const { return record("size").size; }
    /// @brief The GPU of this rank.
    /// @throws std::logic_error when empty
    [[nodiscard]] gpu::device device() const { return gpu::device(record("device").device); }
    /// @brief `communicator_options::timeout` of this communicator.
    /// @throws std::logic_error when empty
    [[nodiscard]] std::chrono::milliseconds timeout() const { return record("timeout").timeout; }

    /// @brief The raw handle (null when empty), for NCCL's own calls.
    [[nodiscard]] ncclComm_t get() const noexcept { return handle_.get().comm; }
    /// @brief Whether a communicator is owned.
    [[nodiscard]] explicit operator bool() const noexcept { return get() != nullptr; }

    /// @brief Throws the error of an operation that failed after its call returned (a peer
    /// that died, a network failure: `ncclCommGetAsyncError`). After it, `abort()`.
    /// @throws std::logic_error when empty
    /// @throws gpu::nccl::nccl_error with the failure's status
    void check_async_error() const;

    /// @brief Ends the communicator now and surfaces what fails: `ncclCommFinalize`, waiting
    /// up to `close_timeout` for the other ranks, then `ncclCommDestroy`; when that fails or
    /// times out, the communicator is aborted and the error thrown. What the destructor does,
    /// with errors thrown instead of reported.
    /// @post empty, whatever happened
    /// @throws std::logic_error when empty
    /// @throws gpu::nccl::nccl_error (status `ncclInProgress` for the timeout)
    void destroy();

    /// @brief Aborts the communicator (`ncclCommAbort`): stops its operations on the GPU and
    /// frees it without waiting for the other ranks. What to do after an error. Does nothing
    /// when empty; a failure is reported, never thrown.
    /// @post empty
    void abort() noexcept;

    /// @brief Gives up ownership without closing.
    /// @post empty
    [[nodiscard]] ncclComm_t release() noexcept { return handle_.release().comm; }

    /// @brief Moving leaves the source empty.
    communicator(communicator&&) noexcept = default;
    /// @brief Closes the owned communicator and takes @p other's.
    communicator& operator=(communicator&&) noexcept = default;
    communicator(const communicator&) = delete;
    communicator& operator=(const communicator&) = delete;
    /// @brief Finalizes and destroys, or aborts (see the file's description); never throws and
    /// never waits longer than `close_timeout`.
    ~communicator() = default;

private:
    explicit communicator(const detail::communicator_record& owned) noexcept : handle_(owned) {}
    [[nodiscard]] detail::communicator_record record(const char* what) const;

    gpu::detail::unique_handle<detail::communicator_record, detail::communicator_deleter> handle_;
};

} // namespace gpu::nccl
