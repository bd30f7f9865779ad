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
/// inside a `gpu::nccl::group_scope` (`<gpu/nccl/group.hpp>`), as NCCL requires, and closes them
/// together (`destroy_all`, `close_all`): closed one at a time, each would wait for the others.
///
/// NCCL lets the environment override the configuration: `NCCL_COMM_BLOCKING=1` would make
/// every communicator blocking, and then nothing here could keep a deadline. The makers refuse
/// it (`nccl_error`, status `ncclInvalidUsage`, naming the variable) before any GPU call (the
/// process's environment is read; a value only NCCL's configuration files hold may escape). A
/// communicator adopted with `from_native_handle` keeps the mode it was made with: when it is
/// blocking, NCCL's calls on it (its finalize when it is closed included) wait for the other
/// ranks without a limit, and the timeouts of `communicator_options` do not apply.
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/device.hpp>
#include <gpu/memory_ledger.hpp>
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
    /// How long closing (the destructor, `destroy`, `destroy_all`, `close_all`) may wait, in
    /// all: for an operation still in progress, then for `ncclCommFinalize` to let the other
    /// ranks finish theirs, before it aborts the communicator instead.
    std::chrono::milliseconds close_timeout{std::chrono::seconds(30)};
};

namespace detail {

/// @brief A communicator as `communicator` owns it: the handle and what never changes about it
/// (read once, so that `rank()` makes no NCCL call). Plain data.
struct communicator_record {
    ncclComm_t comm = nullptr;                 ///< the handle
    int rank = 0;                              ///< this rank
    int size = 0;                              ///< the number of ranks
    int device = -1;                           ///< the CUDA device of this rank
    std::chrono::milliseconds timeout{};       ///< `communicator_options::timeout`
    std::chrono::milliseconds close_timeout{}; ///< `communicator_options::close_timeout`

    /// @brief Records compare field by field.
    friend bool operator==(const communicator_record&, const communicator_record&) = default;
};

/// @brief Closes the communicator: waits while an operation is still in progress, finalizes
/// and destroys it, all within its close timeout; aborts it when it failed, was still in
/// progress, or its ranks did not finish in time, or inside an open `group_scope`. Failures
/// are reported, never thrown.
void close_communicator(const communicator_record& record) noexcept;

/// @brief Closes through `close_communicator`.
struct communicator_deleter {
    /// @brief Closes @p record's communicator.
    void operator()(const communicator_record& record) const noexcept
    {
        close_communicator(record);
    }
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

/// @brief Whether NCCL reads @p value of `NCCL_COMM_BLOCKING` as "blocking": as NCCL parses
/// it (`strtoll` with base 0, ignored on a range error), the value 1. Null or empty: no.
[[nodiscard]] bool forces_blocking(const char* value) noexcept;

/// @brief What the makers check before any GPU call: throws `std::logic_error` naming
/// @p function inside an open `group_scope` of this thread (NCCL groups collectives or
/// communicator set-ups, never both), and `nccl_error` (status `ncclInvalidUsage`) naming the
/// variable when `NCCL_COMM_BLOCKING` would make the communicator blocking.
void check_can_make(const char* function);

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
    /// @throws std::logic_error inside an open `group_scope` of this thread (NCCL cannot group a
    /// set-up with collectives; make communicators before the group), before any other check
    /// @throws gpu::nccl::nccl_error with status `ncclInvalidUsage` when the environment sets
    /// `NCCL_COMM_BLOCKING=1` (it would make the communicator blocking; unset it), before any
    /// GPU call
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
    /// restored afterwards. Close the result with `destroy_all` or `close_all`: destroyed one
    /// at a time, each communicator's finalize would wait for the others, then be aborted.
    /// @throws std::logic_error and gpu::nccl::nccl_error as `init_rank`, before the devices
    /// are looked at
    /// @throws std::invalid_argument when @p devices is empty or names a device twice
    /// @throws gpu::cuda_error when a device cannot be made current (`cudaSetDevice`)
    /// @throws gpu::nccl::nccl_error as `init_rank`; every communicator made so far is aborted
    [[nodiscard]] static std::vector<communicator>
    init_all(std::span<const gpu::device> devices, const communicator_options& options = {});

    /// @brief `init_all` over every visible device (`gpu::devices()`).
    /// @throws std::logic_error and gpu::nccl::nccl_error as `init_rank`, before the devices
    /// are listed
    /// @throws std::invalid_argument when no device is visible
    [[nodiscard]] static std::vector<communicator>
    init_all(const communicator_options& options = {});

    /// @brief Adopts a communicator made elsewhere (e.g. by `ncclCommInitRank`, blocking or
    /// not): waits up to `options.timeout` while NCCL reports it in progress (a non-blocking
    /// one may still be setting up, and NCCL refuses to describe it until then), reads its
    /// rank, size and device, and closes it when done like its own.
    ///
    /// A blocking communicator stays blocking: NCCL's calls on it wait for the other ranks
    /// without a limit, its finalize when it is closed included, so `options.timeout` and
    /// `options.close_timeout` do not bound them.
    /// @throws std::invalid_argument for a null @p comm
    /// @throws gpu::nccl::nccl_error when it failed, when NCCL cannot say its rank, size or
    /// device, or with status `ncclInProgress` when it was still in progress after
    /// `options.timeout`; the caller still owns @p comm then (`ncclCommAbort` it)
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
    /// @brief The device memory NCCL took for itself while this rank set up (the device's used
    /// memory after `init_rank`/`init_all` less before), which the process's ledger holds under
    /// "NCCL communicator" until the communicator closes. 0 for an adopted one (not measured)
    /// and when empty; other allocations on the device during the set-up count too.
    [[nodiscard]] std::size_t measured_bytes() const noexcept { return holding_.bytes(); }
    /// @brief `communicator_options::timeout` of this communicator.
    /// @throws std::logic_error when empty
    [[nodiscard]] std::chrono::milliseconds timeout() const { return record("timeout").timeout; }

    /// @brief The raw handle (null when empty), for NCCL's own calls.
    ///
    /// The communicator is non-blocking: a raw call on it may return `ncclInProgress`, which
    /// is not a failure (poll `ncclCommGetAsyncError` until it is not, as cudagap does;
    /// `GPU_NCCL_CHECK` would throw on it). A raw `ncclGroupStart` is not seen by cudagap: a
    /// cudagap collective inside it does not know that it is grouped and waits for the others
    /// at once, and `init_rank`/`init_all` cannot refuse it; use `group_scope`.
    [[nodiscard]] ncclComm_t get() const noexcept { return handle_.get().comm; }
    /// @brief Whether a communicator is owned.
    [[nodiscard]] explicit operator bool() const noexcept { return get() != nullptr; }

    /// @brief Throws the error of an operation that failed after its call returned (a peer
    /// that died, a network failure: `ncclCommGetAsyncError`). After it, `abort()`.
    /// @throws std::logic_error when empty
    /// @throws gpu::nccl::nccl_error with the failure's status
    void check_async_error() const;

    /// @brief Ends the communicator now and surfaces what fails: waits while an earlier
    /// operation is still in progress (a collective or group that timed out), then
    /// `ncclCommFinalize`, waiting for the other ranks, then `ncclCommDestroy`, all within
    /// `close_timeout`; when something fails or the time runs out, the communicator is aborted
    /// and the error thrown. What the destructor does, with errors thrown instead of reported.
    /// Destroy the `gpu::graph_exec`s that captured its collectives first: NCCL's finalize
    /// waits for them, so it would run out of time and abort.
    /// @post empty, whatever happened (after the checks)
    /// @throws std::logic_error when empty, or inside an open `group_scope` (NCCL would defer
    /// the finalize to the group's end; nothing is done)
    /// @throws gpu::nccl::nccl_error (status `ncclInProgress` for the timeout, or for an
    /// operation still in progress at close)
    void destroy();

    /// @brief Aborts the communicator (`ncclCommAbort`): stops its operations on the GPU and
    /// frees it without waiting for the other ranks. What to do after an error. Does nothing
    /// when empty; a failure is reported, never thrown.
    ///
    /// Not for a watchdog thread: the owner is not thread-safe, and emptying it while another
    /// thread uses it is a data race. cudagap's calls never wait without a deadline, so the
    /// thread that drives the communicator gets the timeout's `nccl_error` and aborts. Work
    /// already queued on a stream is another matter: wait for it with `cudaStreamQuery` and
    /// `check_async_error()` in a loop with a deadline, not `cudaStreamSynchronize`.
    /// @post empty
    void abort() noexcept;

    /// @brief Gives up ownership without closing.
    /// @post empty
    [[nodiscard]] ncclComm_t release() noexcept
    {
        holding_.release(); // the memory leaves cudagap's ledger with the communicator
        return handle_.release().comm;
    }

    /// @brief Moving leaves the source empty.
    communicator(communicator&&) noexcept = default;
    /// @brief Closes the owned communicator and takes @p other's.
    communicator& operator=(communicator&&) noexcept = default;
    communicator(const communicator&) = delete;
    communicator& operator=(const communicator&) = delete;
    /// @brief Finalizes and destroys, or aborts (see the file's description); never throws and
    /// never waits longer than `close_timeout` (for a communicator cudagap made; see
    /// `from_native_handle` for a blocking one). Inside an open `group_scope` it aborts.
    ~communicator() = default;

private:
    friend void destroy_all(std::span<communicator> comms);
    friend void close_all(std::span<communicator> comms) noexcept;

    explicit communicator(const detail::communicator_record& owned,
                          measured_holding held = {}) noexcept
        : handle_(owned), holding_(std::move(held))
    {}
    [[nodiscard]] detail::communicator_record record(const char* what) const;
    // Takes the records of the communicators of @p comms that are not empty, leaving all empty.
    [[nodiscard]] static std::vector<detail::communicator_record>
    take_records(std::span<communicator> comms);

    gpu::detail::unique_handle<detail::communicator_record, detail::communicator_deleter> handle_;
    measured_holding holding_; // NCCL's own memory in the ledger, released when it closes
};

/// @brief Destroys @p comms together, what `communicator::destroy` does for one: waits for
/// their earlier operations, finalizes every one (`ncclCommFinalize` returns at once), waits
/// for all against one deadline (the longest of their close timeouts), then destroys each.
/// For the communicators of one process's ranks (`init_all`'s), whose finalizes wait for each
/// other: destroyed one at a time, the first would wait for the others until its timeout.
///
/// When one fails or the time runs out, every one of @p comms is aborted (the others would
/// wait for it) and the first failure thrown. Empty (moved-from) communicators are skipped.
/// Destroy the `gpu::graph_exec`s that captured their collectives first.
/// @post every one of @p comms is empty, whatever happened (after the check)
/// @throws std::logic_error inside an open `group_scope` (nothing is done)
/// @throws gpu::nccl::nccl_error as `communicator::destroy`, for the first that failed
void destroy_all(std::span<communicator> comms);

/// @brief `destroy_all`, reporting failures on stderr instead of throwing: for destructors
/// and other paths that must not throw. Never waits longer than the longest close timeout.
/// @post every one of @p comms is empty
void close_all(std::span<communicator> comms) noexcept;

} // namespace gpu::nccl
