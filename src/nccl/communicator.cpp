// The communicator owner: made non-blocking so that nothing waits on the other ranks without a
// deadline (init, the first collective's connections, finalize), closed by finalize + destroy or
// by abort on every path.
#include <gpu/nccl/communicator.hpp>

#include "progress.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/detail/status.hpp>
#include <gpu/nccl/error.hpp>

#include <algorithm>
#include <exception>
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

// Aborts @p comm, for the error paths of the makers: what failed was already thrown or is
// about to be, so a failed abort is only reported.
void abort_quietly(ncclComm_t comm) noexcept
{
    if (comm != nullptr) {
        gpu::detail::report_destroy_failure("ncclCommAbort", ncclCommAbort(comm));
    }
}

// Closes @p record: returns the call that failed and its status (ncclInProgress for the
// close timeout), or a null call when it closed cleanly. Aborts on every failure.
struct close_result {
    const char* api = nullptr;
    ncclResult_t status = ncclSuccess;
};

close_result close_record(const detail::communicator_record& record) noexcept
{
    ncclResult_t state = ncclSuccess;
    ncclResult_t status = ncclCommGetAsyncError(record.comm, &state);
    if (status != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
        // It failed already: its operations may never finish, so nothing waits for them.
        abort_quietly(record.comm);
        return {"ncclCommGetAsyncError", status != ncclSuccess ? status : state};
    }
    status = ncclCommFinalize(record.comm);
    if (status == ncclSuccess || status == ncclInProgress) {
        status = detail::poll_state(record.comm, steady::now() + record.close_timeout);
    }
    if (status != ncclSuccess) {
        abort_quietly(record.comm);
        return {"ncclCommFinalize", status};
    }
    status = ncclCommDestroy(record.comm);
    if (status != ncclSuccess && status != ncclInProgress) {
        return {"ncclCommDestroy", status};
    }
    return {};
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
    const close_result result = close_record(record);
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
                options.timeout.count(), " ms and close_timeout ", options.close_timeout.count(), " ms");
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
    detail::check_rank(function, rank, size);
    detail::check_options(function, options);
    const scoped_device guard(dev);
    ncclConfig_t config = non_blocking_config();
    ncclUniqueId raw = id.get();
    ncclComm_t comm = nullptr;
    const ncclResult_t started = ncclCommInitRankConfig(&comm, size, raw, rank, &config);
    const std::string context = rank_context(rank, size, dev.id());
    try {
        if (started != ncclInProgress) {
            gpu::detail::check(started, "ncclCommInitRankConfig", std::source_location::current(), context);
        }
        detail::wait_until_ready(comm, options.timeout, "ncclCommInitRankConfig", join_why(size), context);
    } catch (...) {
        abort_quietly(comm); // after the error took NCCL's text
        throw;
    }
    return communicator(detail::communicator_record{comm, rank, size, dev.id(), options.timeout,
                                                    options.close_timeout});
}

namespace {

// Starts one rank per device inside one NCCL group; the communicators are in progress after.
// The configurations outlive the group (@p configs, one per device): the work starts at its end.
ncclResult_t start_all(std::vector<ncclComm_t>& comms, std::vector<ncclConfig_t>& configs,
                       std::span<const gpu::device> devices, const ncclUniqueId& id)
{
    ncclResult_t first_failure = ncclSuccess;
    gpu::detail::check(ncclGroupStart(), "ncclGroupStart", std::source_location::current());
    for (std::size_t i = 0; i < devices.size() && first_failure == ncclSuccess; ++i) {
        const cudaError_t set = cudaSetDevice(devices[i].id());
        if (set != cudaSuccess) {
            static_cast<void>(cudaGetLastError());
            first_failure = ncclUnhandledCudaError;
            break;
        }
        const ncclResult_t status = ncclCommInitRankConfig(&comms[i], static_cast<int>(devices.size()),
                                                           id, static_cast<int>(i), &configs[i]);
        if (status != ncclSuccess && status != ncclInProgress) {
            first_failure = status;
        }
    }
    // The group ends on every path, or this thread's later NCCL calls would join it.
    const ncclResult_t ended = ncclGroupEnd();
    if (first_failure == ncclSuccess && ended != ncclSuccess && ended != ncclInProgress) {
        first_failure = ended;
    }
    return first_failure;
}

} // namespace

std::vector<communicator> communicator::init_all(std::span<const gpu::device> devices,
                                                 const communicator_options& options)
{
    const char* function = "gpu::nccl::communicator::init_all";
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
    try {
        const ncclResult_t started = start_all(comms, configs, devices, id.get());
        gpu::detail::check(started, "ncclCommInitRankConfig (in a group, one per device)",
                           std::source_location::current(), std::to_string(size) + " devices in one process");
        for (std::size_t i = 0; i < comms.size(); ++i) {
            detail::wait_until_ready(comms[i], options.timeout, "ncclCommInitRankConfig (in a group)",
                                     "the group's ranks did not all finish their set-up",
                                     rank_context(static_cast<int>(i), size, ids[i]));
        }
    } catch (...) {
        std::for_each(comms.begin(), comms.end(), abort_quietly);
        throw;
    }
    std::vector<communicator> owned;
    owned.reserve(comms.size());
    for (std::size_t i = 0; i < comms.size(); ++i) {
        owned.push_back(communicator(detail::communicator_record{
            comms[i], static_cast<int>(i), size, ids[i], options.timeout, options.close_timeout}));
    }
    return owned;
}

std::vector<communicator> communicator::init_all(const communicator_options& options)
{
    const std::vector<gpu::device> all = gpu::devices();
    GPU_EXPECTS(!all.empty(), std::invalid_argument,
                "gpu::nccl::communicator::init_all: no visible device (", gpu::unavailable_reason(), ")");
    return init_all(all, options);
}

communicator communicator::from_native_handle(ncclComm_t comm, const communicator_options& options)
{
    const char* function = "gpu::nccl::communicator::from_native_handle";
    GPU_EXPECTS(comm != nullptr, std::invalid_argument, function, ": a null ncclComm_t names no communicator");
    detail::check_options(function, options);
    detail::communicator_record adopted{comm, 0, 0, -1, options.timeout, options.close_timeout};
    GPU_NCCL_CHECK(ncclCommUserRank(comm, &adopted.rank));
    GPU_NCCL_CHECK(ncclCommCount(comm, &adopted.size));
    GPU_NCCL_CHECK(ncclCommCuDevice(comm, &adopted.device));
    return communicator(adopted);
}

detail::communicator_record communicator::record(const char* what) const
{
    if (!handle_) {
        const std::string owner = std::string("gpu::nccl::communicator::") + what;
        gpu::detail::throw_empty_owner(owner.c_str(), "NCCL communicator");
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
    static_cast<void>(handle_.release());
    const close_result result = close_record(owned);
    if (result.api == nullptr) {
        return;
    }
    const std::string context = rank_context(owned.rank, owned.size, owned.device);
    if (result.status == ncclInProgress) {
        detail::throw_timeout("ncclCommFinalize (the communicator was aborted)", owned.close_timeout,
                              "the other ranks did not finish their operations: a rank that "
                              "stopped early or issued other collectives leaves the others waiting");
    }
    gpu::detail::throw_error(result.status, result.api, std::source_location::current(), context);
}

void communicator::abort() noexcept
{
    abort_quietly(handle_.release().comm);
}

} // namespace gpu::nccl
