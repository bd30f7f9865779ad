// The communicator owner: made non-blocking so that nothing waits on the other ranks without a
// deadline (init, the first collective's connections, finalize), closed by finalize + destroy or
// by abort on every path, alone or as a set (whose finalizes wait for each other).
#include "memory_tags.hpp"
#include <gpu/nccl/communicator.hpp>

#include "progress.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/detail/status.hpp>
#include <gpu/nccl/error.hpp>
#include <gpu/detail/unique_handle.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace gpu::nccl {

namespace {

using steady = std::chrono::steady_clock;

// NCCL's defaults, but non-blocking: every call that would wait returns ncclInProgress, and
// cudagap waits with a deadline.
ncclConfig_t non_blocking_config()
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    return config;
}

std::string rank_context(int rank, int size, int device)
{
    return "rank " + std::to_string(rank) + " of " + std::to_string(size) + " on device " +
           std::to_string(device);
}

std::string join_why(int size)
{
    return "not all " + std::to_string(size) +
           " ranks joined: start every rank, give each the same unique id (a file that rank 0 "
           "wrote for this job only: an id left by an earlier job names a bootstrap that is gone) "
           "and the same size, and check that the hosts reach each other (NCCL_SOCKET_IFNAME)";
}

// Aborts @p comm, for the error paths of the makers and of closing: what failed was already
// thrown or reported, so a failed abort is only reported. A non-blocking communicator may
// finish its abort in NCCL's background (ncclInProgress), which is no failure.
void abort_quietly(ncclComm_t comm) noexcept
{
    if (comm == nullptr) {
        return;
    }
    const ncclResult_t status = ncclCommAbort(comm);
    if (status != ncclInProgress) {
        gpu::detail::report_destroy_failure("ncclCommAbort", status);
    }
}

// How closing a set of communicators ended: the call that failed and its status, the member
// it failed on and, for a timeout, what kept it waiting; a null call when all closed cleanly.
struct close_result {
    const char* api = nullptr;
    ncclResult_t status = ncclSuccess;
    std::size_t member = 0;
    const char* why = nullptr;
};

// What each wait of closing reports: the call for a failure, the call and the hint for a
// timeout.
struct close_stage {
    const char* failed_api;
    const char* pending_api;
    const char* why;
};

constexpr close_stage before_finalize{
    "ncclCommGetAsyncError (an earlier operation failed)",
    "ncclCommGetAsyncError (in progress at close)",
    "an earlier operation of the communicator (a collective or a group that ran out of time, "
    "or a set-up) was still in progress at close, so it was aborted: every rank must issue the "
    "same collectives in the same order, and a rank that stopped leaves the others waiting"};
constexpr close_stage after_finalize{
    "ncclCommFinalize", "ncclCommFinalize",
    "the other ranks did not finish their operations, so the communicator was aborted: a rank "
    "that stopped early or issued other collectives leaves the others waiting; destroy the "
    "graph_execs that captured its collectives before it (NCCL's finalize waits for them)"};

// Waits until no communicator of @p records is in progress, up to @p deadline: the first that
// failed, or that is still in progress then, as @p stage names it.
close_result settle(std::span<const detail::communicator_record> records,
                    steady::time_point deadline, const close_stage& stage) noexcept
{
    for (std::size_t i = 0; i < records.size(); ++i) {
        const ncclResult_t state = detail::poll_state(records[i].comm, deadline);
        if (state == ncclInProgress) {
            return {stage.pending_api, state, i, stage.why};
        }
        if (state != ncclSuccess) {
            return {stage.failed_api, state, i, nullptr};
        }
    }
    return {};
}

// Starts every finalize. Non-blocking, each returns at once and runs in NCCL's background, so
// the ranks of one process wait for each other there (NCCL's intra-node barrier), not here one
// after the other.
close_result finalize_each(std::span<const detail::communicator_record> records) noexcept
{
    for (std::size_t i = 0; i < records.size(); ++i) {
        const ncclResult_t status = ncclCommFinalize(records[i].comm);
        if (status != ncclSuccess && status != ncclInProgress) {
            return {after_finalize.failed_api, status, i, nullptr};
        }
    }
    return {};
}

close_result destroy_each(std::span<const detail::communicator_record> records) noexcept
{
    close_result first;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const ncclResult_t status = ncclCommDestroy(records[i].comm);
        if (status != ncclSuccess && status != ncclInProgress && first.api == nullptr) {
            first = {"ncclCommDestroy", status, i, nullptr};
        }
    }
    return first;
}

// The longest close timeout of @p records: the one deadline of closing them together.
std::chrono::milliseconds
longest_close_timeout(std::span<const detail::communicator_record> records) noexcept
{
    std::chrono::milliseconds longest{0};
    for (const detail::communicator_record& record : records) {
        longest = std::max(longest, record.close_timeout);
    }
    return longest;
}

// Closes @p records together within their longest close timeout: waits for what is still in
// progress (ncclCommFinalize refuses a communicator in progress), finalizes all, waits for all,
// destroys all. On the first failure every one is aborted: a member that failed would keep the
// others' finalize waiting until the deadline.
close_result close_set(std::span<const detail::communicator_record> records) noexcept
{
    const steady::time_point deadline = steady::now() + longest_close_timeout(records);
    close_result result;
    if (detail::group_depth() > 0) {
        // NCCL would defer the finalize to the group's end, so nothing would progress here. The
        // aborts are deferred too; the group's end must not wait for these communicators.
        result = {"ncclCommFinalize (inside an open gpu::nccl::group_scope)", ncclInvalidUsage, 0,
                  nullptr};
        for (const detail::communicator_record& record : records) {
            detail::forget_group_member(record.comm);
        }
    }
    if (result.api == nullptr) {
        result = settle(records, deadline, before_finalize);
    }
    if (result.api == nullptr) {
        result = finalize_each(records);
    }
    if (result.api == nullptr) {
        result = settle(records, deadline, after_finalize);
    }
    if (result.api != nullptr) {
        for (const detail::communicator_record& record : records) {
            abort_quietly(record.comm);
        }
        return result;
    }
    return destroy_each(records);
}

// Throws what closing @p records came to, with the failing member's rank; returns when all
// closed cleanly.
void throw_close_failure(const close_result& result,
                         std::span<const detail::communicator_record> records)
{
    if (result.api == nullptr) {
        return;
    }
    const detail::communicator_record& member = records[result.member];
    if (result.status == ncclInProgress) {
        detail::throw_timeout(result.api, longest_close_timeout(records), result.why);
    }
    gpu::detail::throw_error(result.status, result.api, std::source_location::current(),
                             rank_context(member.rank, member.size, member.device));
}

// Closing inside an open group cannot work (see close_set): the throwing closers refuse it
// before they take anything.
void refuse_inside_group(const char* function)
{
    GPU_EXPECTS(detail::group_depth() == 0, std::logic_error, function,
                ": called inside an open gpu::nccl::group_scope, where NCCL defers a finalize to "
                "the group's end: close communicators after the group");
}

} // namespace

namespace detail {

ncclResult_t poll_state(ncclComm_t comm, std::chrono::steady_clock::time_point deadline) noexcept
{
    // Spin briefly (a first collective's connections take microseconds on one host), then
    // sleep so that a long wait (ranks that start late) costs no core.
    const steady::time_point spin_until = steady::now() + std::chrono::milliseconds(2);
    while (true) {
        ncclResult_t state = ncclInProgress;
        const ncclResult_t status = ncclCommGetAsyncError(comm, &state);
        if (status != ncclSuccess) {
            return status;
        }
        if (state != ncclInProgress) {
            return state;
        }
        const steady::time_point now = steady::now();
        if (now >= deadline) {
            return ncclInProgress;
        }
        if (now < spin_until) {
            std::this_thread::yield();
        } else {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    }
}

void wait_until_ready(ncclComm_t comm, std::chrono::milliseconds timeout, const char* api,
                      std::string_view why, std::string_view context)
{
    const ncclResult_t state = poll_state(comm, steady::now() + timeout);
    if (state == ncclInProgress) {
        throw_timeout(api, timeout, why);
    }
    gpu::detail::check(state, api, std::source_location::current(), context);
}

void close_communicator(const communicator_record& record) noexcept
{
    if (record.comm == nullptr) {
        return;
    }
    const close_result result = close_set(std::span<const communicator_record>(&record, 1));
    if (result.api != nullptr) {
        gpu::detail::report_destroy_failure(result.api, result.status);
    }
}

void check_rank(const char* function, int rank, int size)
{
    GPU_EXPECTS(size >= 1, std::invalid_argument, function, ": size ", size,
                " is not a number of ranks (at least 1)");
    GPU_EXPECTS(rank >= 0 && rank < size, std::invalid_argument, function, ": rank ", rank,
                " is outside [0, ", size, ") for size ", size);
}

void check_options(const char* function, const communicator_options& options)
{
    GPU_EXPECTS(options.timeout.count() > 0 && options.close_timeout.count() > 0,
                std::invalid_argument, function, ": the timeouts must be positive, got timeout ",
                options.timeout.count(), " ms and close_timeout ", options.close_timeout.count(),
                " ms");
}

bool forces_blocking(const char* value) noexcept
{
    if (value == nullptr || *value == '\0') {
        return false;
    }
    // As NCCL reads it (ncclLoadParam, then envConfigOverride): strtoll with base 0, the
    // default on a range error, the result as an int, and only 1 means blocking.
    const int saved = errno;
    errno = 0;
    const long long parsed = std::strtoll(value, nullptr, 0);
    const bool out_of_range = errno != 0;
    errno = saved;
    return !out_of_range && static_cast<int>(parsed) == 1;
}

void check_can_make(const char* function)
{
    GPU_EXPECTS(group_depth() == 0, std::logic_error, function,
                ": called inside an open gpu::nccl::group_scope; NCCL groups collectives or the "
                "set-up of communicators, never both: make the communicators before the group");
    const char* value = std::getenv("NCCL_COMM_BLOCKING");
    if (forces_blocking(value)) {
        throw_blocking_forced(function, value);
    }
}

void check_devices(const char* function, std::span<const int> device_ids)
{
    GPU_EXPECTS(!device_ids.empty(), std::invalid_argument, function,
                ": no device given (a communicator needs at least one rank)");
    for (std::size_t i = 0; i < device_ids.size(); ++i) {
        const auto first = std::find(device_ids.begin(), device_ids.end(), device_ids[i]);
        const auto at = static_cast<std::size_t>(first - device_ids.begin());
        GPU_EXPECTS(at == i, std::invalid_argument, function, ": device ", device_ids[i],
                    " is given twice (ranks ", at, " and ", i,
                    "): each rank needs a GPU of its own");
    }
}

} // namespace detail

communicator communicator::init_rank(const unique_id& id, int rank, int size, gpu::device dev,
                                     const communicator_options& options)
{
    const char* function = "gpu::nccl::communicator::init_rank";
    detail::check_can_make(function);
    detail::check_rank(function, rank, size);
    detail::check_options(function, options);
    const scoped_device guard(dev);
    ncclConfig_t config = non_blocking_config();
    ncclUniqueId raw = id.get();
    ncclComm_t comm = nullptr;
    const ncclResult_t started = ncclCommInitRankConfig(&comm, size, raw, rank, &config);
    const std::string context = rank_context(rank, size, dev.id());
    try {
        // NCCL allocates for itself: the device's used memory grows by its buffers as it sets
        // up, measured around the wait (ncclCommInitRankConfig started it above).
        measured_holding held =
            memory_ledger::global().hold_growth(dev, detail::nccl_communicator_tag(), [&] {
                if (started != ncclInProgress) {
                    gpu::detail::check(started, "ncclCommInitRankConfig",
                                       std::source_location::current(), context);
                }
                detail::wait_until_ready(comm, options.timeout, "ncclCommInitRankConfig",
                                         join_why(size), context);
            });
        return communicator(detail::communicator_record{comm, rank, size, dev.id(), options.timeout,
                                                        options.close_timeout},
                            std::move(held));
    } catch (...) {
        abort_quietly(comm); // after the error took NCCL's text
        throw;
    }
}

namespace {

// What starting the ranks of init_all came to: NCCL's first failure, or the CUDA error of
// making a device current, and the rank it happened at.
struct start_result {
    ncclResult_t nccl = ncclSuccess;
    cudaError_t cuda = cudaSuccess;
    std::size_t rank = 0;
};

// Starts one rank per device inside one NCCL group; the communicators are in progress after.
// The configurations outlive the group (@p configs, one per device): the work starts at its end.
start_result start_all(std::vector<ncclComm_t>& comms, std::vector<ncclConfig_t>& configs,
                       std::span<const gpu::device> devices, const ncclUniqueId& id)
{
    start_result result;
    gpu::detail::check(ncclGroupStart(), "ncclGroupStart", std::source_location::current());
    for (std::size_t i = 0; i < devices.size(); ++i) {
        result.rank = i;
        // NCCL takes rank i's device from the current device when the call is made; the guard
        // restores the caller's device after each.
        const gpu::scoped_device on(devices[i], std::nothrow);
        result.cuda = on.status();
        if (result.cuda != cudaSuccess) {
            break;
        }
        const ncclResult_t status = ncclCommInitRankConfig(
            &comms[i], static_cast<int>(devices.size()), id, static_cast<int>(i), &configs[i]);
        if (status != ncclSuccess && status != ncclInProgress) {
            result.nccl = status;
            break;
        }
    }
    // The group ends on every path, or this thread's later NCCL calls would join it.
    const ncclResult_t ended = ncclGroupEnd();
    if (result.nccl == ncclSuccess && result.cuda == cudaSuccess && ended != ncclSuccess &&
        ended != ncclInProgress) {
        result.nccl = ended;
    }
    return result;
}

// Throws what start_all came to, if anything.
void check_started(const start_result& started, std::span<const int> ids)
{
    const int size = static_cast<int>(ids.size());
    const std::string context =
        rank_context(static_cast<int>(started.rank), size, ids[started.rank]) +
        ", in gpu::nccl::communicator::init_all";
    if (started.cuda != cudaSuccess) {
        gpu::detail::throw_error(started.cuda, "cudaSetDevice", std::source_location::current(),
                                 context);
    }
    gpu::detail::check(started.nccl, "ncclCommInitRankConfig (in a group, one per device)",
                       std::source_location::current(), context);
}

// The used memory of each of @p devices, read now.
std::vector<std::size_t> used_bytes_of(std::span<const gpu::device> devices)
{
    std::vector<std::size_t> used;
    used.reserve(devices.size());
    for (const gpu::device& dev : devices) {
        used.push_back(dev.memory().used_bytes());
    }
    return used;
}

// Waits for every communicator of init_all against one deadline: they set up together.
void wait_all_ready(std::span<const ncclComm_t> comms, std::span<const int> ids,
                    std::chrono::milliseconds timeout)
{
    const char* api = "ncclCommInitRankConfig (in a group)";
    const steady::time_point deadline = steady::now() + timeout;
    for (std::size_t i = 0; i < comms.size(); ++i) {
        const ncclResult_t state = detail::poll_state(comms[i], deadline);
        if (state == ncclInProgress) {
            detail::throw_timeout(api, timeout,
                                  "the group's ranks did not all finish their set-up");
        }
        gpu::detail::check(
            state, api, std::source_location::current(),
            rank_context(static_cast<int>(i), static_cast<int>(comms.size()), ids[i]));
    }
}

} // namespace

std::vector<communicator> communicator::init_all(std::span<const gpu::device> devices,
                                                 const communicator_options& options)
{
    const char* function = "gpu::nccl::communicator::init_all";
    detail::check_can_make(function);
    std::vector<int> ids;
    for (const gpu::device& dev : devices) {
        ids.push_back(dev.id());
    }
    detail::check_devices(function, ids);
    detail::check_options(function, options);
    const int size = static_cast<int>(devices.size());
    const unique_id id = unique_id::create();
    const scoped_device guard(devices.front()); // restores the caller's device at the end
    std::vector<ncclComm_t> comms(devices.size(), nullptr);
    std::vector<ncclConfig_t> configs(devices.size(), non_blocking_config());
    // NCCL allocates for itself on every device: their used memory, before and after.
    const std::vector<std::size_t> before = used_bytes_of(devices);
    try {
        check_started(start_all(comms, configs, devices, id.get()), ids);
        wait_all_ready(comms, ids, options.timeout);
    } catch (...) {
        std::for_each(comms.begin(), comms.end(), abort_quietly);
        throw;
    }
    const std::vector<std::size_t> after = used_bytes_of(devices);
    std::vector<communicator> owned;
    owned.reserve(comms.size());
    for (std::size_t i = 0; i < comms.size(); ++i) {
        owned.push_back(communicator(
            detail::communicator_record{comms[i], static_cast<int>(i), size, ids[i],
                                        options.timeout, options.close_timeout},
            memory_ledger::global().hold(ids[i], detail::nccl_communicator_tag(),
                                         after[i] > before[i] ? after[i] - before[i] : 0)));
    }
    return owned;
}

std::vector<communicator> communicator::init_all(const communicator_options& options)
{
    detail::check_can_make("gpu::nccl::communicator::init_all");
    const std::vector<gpu::device> all = gpu::devices();
    GPU_EXPECTS(!all.empty(), std::invalid_argument,
                "gpu::nccl::communicator::init_all: no visible device (", gpu::unavailable_reason(),
                ")");
    return init_all(all, options);
}

communicator communicator::from_native_handle(ncclComm_t comm, const communicator_options& options)
{
    const char* function = "gpu::nccl::communicator::from_native_handle";
    GPU_EXPECTS(comm != nullptr, std::invalid_argument, function,
                ": a null ncclComm_t names no communicator");
    detail::check_options(function, options);
    // A non-blocking communicator may still be setting up, and NCCL refuses to describe one in
    // progress (ncclInvalidArgument): wait for it first.
    detail::wait_until_ready(comm, options.timeout,
                             "ncclCommGetAsyncError (adopting a communicator)",
                             "the communicator was still setting up: not all its ranks joined", {});
    detail::communicator_record adopted{comm, 0, 0, -1, options.timeout, options.close_timeout};
    GPU_NCCL_CHECK(ncclCommUserRank(comm, &adopted.rank));
    GPU_NCCL_CHECK(ncclCommCount(comm, &adopted.size));
    GPU_NCCL_CHECK(ncclCommCuDevice(comm, &adopted.device));
    return communicator(adopted);
}

detail::communicator_record communicator::record(const char* what) const
{
    if (!handle_) {
        gpu::detail::throw_empty_owner(std::string("gpu::nccl::communicator::") + what,
                                       "gpu::nccl::communicator", "NCCL communicator");
    }
    return handle_.get();
}

void communicator::check_async_error() const
{
    const detail::communicator_record owned = record("check_async_error");
    ncclResult_t state = ncclSuccess;
    GPU_NCCL_CHECK(ncclCommGetAsyncError(owned.comm, &state));
    if (state != ncclInProgress) {
        gpu::detail::check(state, "ncclCommGetAsyncError (an earlier operation failed)",
                           std::source_location::current(),
                           rank_context(owned.rank, owned.size, owned.device));
    }
}

void communicator::destroy()
{
    const detail::communicator_record owned = record("destroy");
    refuse_inside_group("gpu::nccl::communicator::destroy");
    static_cast<void>(handle_.release());
    holding_.release();
    const std::span<const detail::communicator_record> one(&owned, 1);
    throw_close_failure(close_set(one), one);
}

void communicator::abort() noexcept
{
    holding_.release();
    abort_quietly(handle_.release().comm);
}

std::vector<detail::communicator_record> communicator::take_records(std::span<communicator> comms)
{
    std::vector<detail::communicator_record> owned;
    owned.reserve(comms.size()); // the only step that can fail: nothing was taken yet
    for (communicator& comm : comms) {
        if (comm) {
            owned.push_back(comm.handle_.release());
            comm.holding_.release();
        }
    }
    return owned;
}

void destroy_all(std::span<communicator> comms)
{
    refuse_inside_group("gpu::nccl::destroy_all");
    const std::vector<detail::communicator_record> owned = communicator::take_records(comms);
    if (!owned.empty()) {
        throw_close_failure(close_set(owned), owned);
    }
}

void close_all(std::span<communicator> comms) noexcept
{
    std::vector<detail::communicator_record> owned;
    try {
        owned = communicator::take_records(comms);
    } catch (...) {
        // No memory for the set: close one at a time (each bounded by its close timeout).
        for (communicator& comm : comms) {
            comm = communicator();
        }
        return;
    }
    if (owned.empty()) {
        return;
    }
    const close_result result = close_set(owned);
    if (result.api != nullptr) {
        gpu::detail::report_destroy_failure(result.api, result.status);
    }
}

} // namespace gpu::nccl
