// The collectives' checks and calls, and the group scope, which waits for the non-blocking
// communicators its collectives used.
#include <gpu/nccl/collectives.hpp>
#include <gpu/nccl/group.hpp>

#include "progress.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/nccl/error.hpp>
#include <gpu/nvtx.hpp>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace gpu::nccl {

namespace {

// The communicators that the calling thread's open groups queued work on, with their timeouts.
struct group_record {
    int depth = 0;
    std::vector<std::pair<ncclComm_t, std::chrono::milliseconds>> members;
};

thread_local group_record this_thread_group;

ncclRedOp_t to_nccl(reduction op)
{
    switch (op) {
    case reduction::sum: return ncclSum;
    case reduction::avg: return ncclAvg;
    case reduction::max: return ncclMax;
    case reduction::min: return ncclMin;
    case reduction::product: return ncclProd;
    }
    throw std::invalid_argument("gpu::nccl: reduction " + std::to_string(static_cast<int>(op)) +
                                " is not a gpu::nccl::reduction");
}

// Whether [a, a + a_bytes) and [b, b + b_bytes) share a byte.
bool overlap(const void* a, std::size_t a_bytes, const void* b, std::size_t b_bytes)
{
    const auto first = reinterpret_cast<std::uintptr_t>(a);
    const auto second = reinterpret_cast<std::uintptr_t>(b);
    return a_bytes != 0 && b_bytes != 0 && first < second + b_bytes && second < first + a_bytes;
}

std::string describe(const detail::collective_call& call, const communicator& comm)
{
    std::string text =
        std::to_string(call.recv_count) + " " + std::string(to_string(call.type)) + " elements";
    if (call.kind == detail::operation::all_reduce ||
        call.kind == detail::operation::reduce_scatter) {
        text += " (" + std::string(to_string(call.op)) + ")";
    }
    return text + " on rank " + std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) +
           ", device " + std::to_string(comm.device().id());
}

} // namespace

namespace detail {

void check_arguments(const collective_call& call)
{
    GPU_EXPECTS(call.recv != nullptr || call.recv_count == 0, std::invalid_argument, call.function,
                ": null output for ", call.recv_count, " elements");
    if (call.kind == operation::all_reduce && !call.in_place) {
        GPU_EXPECTS(call.send_count == call.recv_count, std::invalid_argument, call.function,
                    ": the input holds ", call.send_count, " elements and the output ",
                    call.recv_count, " (they must be equal)");
    }
    if (call.kind != operation::broadcast && !call.in_place) {
        GPU_EXPECTS(call.send != nullptr || call.send_count == 0, std::invalid_argument,
                    call.function, ": null input for ", call.send_count, " elements");
    }
    if (call.kind == operation::all_reduce || call.kind == operation::reduce_scatter) {
        GPU_EXPECTS(gpu::detail::is_named(detail::reduction_names, call.op), std::invalid_argument,
                    call.function, ": reduction ", static_cast<int>(call.op),
                    " is not a gpu::nccl::reduction");
    }
}

namespace {

// The counts against the number of ranks, and broadcast's root.
void check_counts(const collective_call& call, int ranks, int rank)
{
    const auto n = static_cast<std::size_t>(ranks);
    if (call.kind == operation::broadcast) {
        GPU_EXPECTS(call.root >= 0 && call.root < ranks, std::invalid_argument, call.function,
                    ": root ", call.root, " is not a rank of this communicator of ", ranks);
        if (rank == call.root && !call.in_place) {
            GPU_EXPECTS(call.send_count == call.recv_count, std::invalid_argument, call.function,
                        ": the root's input holds ", call.send_count, " elements and the output ",
                        call.recv_count, " (they must be equal)");
            GPU_EXPECTS(call.send != nullptr || call.send_count == 0, std::invalid_argument,
                        call.function, ": null input for ", call.send_count,
                        " elements at the root");
        }
        return;
    }
    if (call.kind == operation::all_reduce) {
        return;
    }
    const bool gather = call.kind == operation::all_gather;
    const std::size_t part = gather ? call.send_count : call.recv_count;
    const std::size_t whole = gather ? call.recv_count : call.send_count;
    if (call.in_place) {
        GPU_EXPECTS(call.recv_count % n == 0, std::invalid_argument, call.function, ": ",
                    call.recv_count, " elements do not split into ", ranks,
                    " equal parts, one per rank");
        return;
    }
    GPU_EXPECTS(part <= whole / n && part * n == whole, std::invalid_argument, call.function,
                ": the ", gather ? "output" : "input", " must hold the ",
                gather ? "input" : "output", " times the number of ranks: ", whole,
                " elements for ", part, " x ", ranks, " ranks");
}

// Out-of-place ranges that overlap, other than NCCL's in-place layouts: the same range for
// all_reduce and broadcast, all_gather's input as the rank's part of the output,
// reduce_scatter's output as the rank's part of the input.
void check_overlap(const collective_call& call, int rank)
{
    if (call.in_place || (call.kind == operation::broadcast && rank != call.root)) {
        return; // (a broadcast reads its input at the root only)
    }
    const auto* send = static_cast<const std::byte*>(call.send);
    const auto* recv = static_cast<const std::byte*>(call.recv);
    const std::size_t offset =
        static_cast<std::size_t>(rank) * call.element_size *
        (call.kind == operation::all_gather ? call.send_count : call.recv_count);
    bool layout = false;
    switch (call.kind) {
    case operation::all_reduce:
    case operation::broadcast: layout = send == recv; break;
    case operation::all_gather: layout = recv != nullptr && send == recv + offset; break;
    case operation::reduce_scatter: layout = send != nullptr && recv == send + offset; break;
    }
    GPU_EXPECTS(layout || !overlap(send, call.send_count * call.element_size, recv,
                                   call.recv_count * call.element_size),
                std::invalid_argument, call.function,
                ": the input and the output overlap without being NCCL's in-place layout (use the "
                "in-place form)");
}

} // namespace

void check_against_ranks(const collective_call& call, int ranks, int rank)
{
    GPU_EXPECTS(ranks >= 1 && rank >= 0 && rank < ranks, std::invalid_argument, call.function,
                ": rank ", rank, " of ", ranks, " is not a rank");
    check_counts(call, ranks, rank);
    check_overlap(call, rank);
}

} // namespace detail

namespace {

// The NCCL call of @p call; in place, the input is the rank's part of the output (all_gather)
// or the output lies in the rank's part of the input (reduce_scatter).
ncclResult_t enqueue(const detail::collective_call& call, const communicator& comm,
                     stream_ref stream)
{
    const auto rank = static_cast<std::size_t>(comm.rank());
    const auto ranks = static_cast<std::size_t>(comm.size());
    auto* recv = static_cast<std::byte*>(call.recv);
    const void* send = call.in_place ? call.recv : call.send;
    switch (call.kind) {
    case detail::operation::all_reduce:
        return ncclAllReduce(send, recv, call.recv_count, call.type, to_nccl(call.op), comm.get(),
                             stream.get());
    case detail::operation::broadcast:
        return ncclBroadcast(send, recv, call.recv_count, call.type, call.root, comm.get(),
                             stream.get());
    case detail::operation::all_gather: {
        const std::size_t part = call.in_place ? call.recv_count / ranks : call.send_count;
        if (call.in_place) {
            send = recv + rank * part * call.element_size;
        }
        return ncclAllGather(send, recv, part, call.type, comm.get(), stream.get());
    }
    case detail::operation::reduce_scatter: {
        const std::size_t part = call.in_place ? call.recv_count / ranks : call.recv_count;
        if (call.in_place) {
            recv += rank * part * call.element_size;
        }
        return ncclReduceScatter(send, recv, part, call.type, to_nccl(call.op), comm.get(),
                                 stream.get());
    }
    }
    return ncclInvalidArgument;
}

/// The NVTX range's name: the collective and the bytes each rank receives, "all_reduce 12 MiB".
std::string range_name(const detail::collective_call& call)
{
    const char* name = "collective";
    switch (call.kind) {
    case detail::operation::all_reduce: name = "all_reduce"; break;
    case detail::operation::broadcast: name = "broadcast"; break;
    case detail::operation::all_gather: name = "all_gather"; break;
    case detail::operation::reduce_scatter: name = "reduce_scatter"; break;
    }
    return std::string(name) + " " + nvtx::size_name(call.recv_count * call.element_size);
}

const char* api_of(detail::operation kind)
{
    switch (kind) {
    case detail::operation::all_reduce: return "ncclAllReduce";
    case detail::operation::broadcast: return "ncclBroadcast";
    case detail::operation::all_gather: return "ncclAllGather";
    case detail::operation::reduce_scatter: return "ncclReduceScatter";
    }
    return "nccl";
}

} // namespace

namespace detail {

void run_collective(const communicator& comm, collective_call call, stream_ref stream)
{
    check_arguments(call);
    if (!comm) {
        gpu::detail::throw_empty_owner(call.function, "gpu::nccl::communicator",
                                       "NCCL communicator");
    }
    check_against_ranks(call, comm.size(), comm.rank());
    const bool grouped = group_depth() > 0;
    if (grouped) {
        note_group_member(comm.get(), comm.timeout());
    }
    const nvtx::range range([&] { return range_name(call); }, nvtx::colours::communication);
    ncclResult_t status = enqueue(call, comm, stream);
    if (status == ncclSuccess || (status == ncclInProgress && grouped)) {
        return; // the hot path: nothing is composed
    }
    const char* api = api_of(call.kind);
    if (status == ncclInProgress) {
        // The first collective of a non-blocking communicator sets up its connections.
        status = poll_state(comm.get(), std::chrono::steady_clock::now() + comm.timeout());
        if (status == ncclSuccess) {
            return;
        }
        if (status == ncclInProgress) {
            throw_timeout(api, comm.timeout(),
                          "the other ranks did not reach this collective (the first one of a "
                          "communicator connects the ranks): every rank must issue the same "
                          "collectives in the same order");
        }
    }
    gpu::detail::throw_error(status, api, std::source_location::current(), describe(call, comm));
}

int group_depth() noexcept
{
    return this_thread_group.depth;
}

void note_group_member(ncclComm_t comm, std::chrono::milliseconds timeout)
{
    auto& members = this_thread_group.members;
    const auto known = std::find_if(members.begin(), members.end(),
                                    [&](const auto& member) { return member.first == comm; });
    if (known == members.end()) {
        members.emplace_back(comm, timeout);
    }
}

void forget_group_member(ncclComm_t comm) noexcept
{
    auto& members = this_thread_group.members;
    members.erase(std::remove_if(members.begin(), members.end(),
                                 [&](const auto& member) { return member.first == comm; }),
                  members.end());
}

} // namespace detail

namespace {

// Ends the innermost group; at the outermost, waits for the communicators it used, all against
// one deadline (the longest of their timeouts: they progress together), and every one before
// the first failure is returned as (api, status); a null api when all finished. @p waited
// receives the time allowed.
std::pair<const char*, ncclResult_t> end_group(std::chrono::milliseconds* waited) noexcept
{
    group_record& group = this_thread_group;
    const ncclResult_t ended = ncclGroupEnd();
    group.depth = std::max(group.depth - 1, 0);
    if (group.depth > 0) {
        return {ended == ncclSuccess ? nullptr : "ncclGroupEnd", ended};
    }
    std::vector<std::pair<ncclComm_t, std::chrono::milliseconds>> members =
        std::move(group.members);
    group.members.clear();
    if (ended != ncclSuccess && ended != ncclInProgress) {
        return {"ncclGroupEnd", ended};
    }
    std::chrono::milliseconds longest{0};
    for (const auto& member : members) {
        longest = std::max(longest, member.second);
    }
    *waited = longest;
    const auto deadline = std::chrono::steady_clock::now() + longest;
    std::pair<const char*, ncclResult_t> first{nullptr, ncclSuccess};
    for (const auto& member : members) {
        const ncclResult_t state = detail::poll_state(member.first, deadline);
        if (state != ncclSuccess && first.first == nullptr) {
            first = {"ncclGroupEnd (waiting for a communicator of the group)", state};
        }
    }
    return first;
}

} // namespace

group_scope::group_scope()
{
    GPU_NCCL_CHECK(ncclGroupStart());
    ++this_thread_group.depth;
    open_ = true;
}

void group_scope::end()
{
    GPU_EXPECTS(open_, std::logic_error,
                "gpu::nccl::group_scope::end: the group was already ended");
    open_ = false;
    std::chrono::milliseconds waited{};
    const auto [api, status] = end_group(&waited);
    if (api == nullptr) {
        return;
    }
    if (status == ncclInProgress) {
        detail::throw_timeout(api, waited,
                              "the other ranks did not reach the group's collectives: every rank "
                              "must issue the same collectives in the same order");
    }
    gpu::detail::throw_error(status, api, std::source_location::current());
}

group_scope::~group_scope()
{
    if (!open_) {
        return;
    }
    std::chrono::milliseconds waited{};
    const auto [api, status] = end_group(&waited);
    if (api != nullptr) {
        gpu::detail::report_destroy_failure(api, status);
    }
}

} // namespace gpu::nccl
