/// @file collectives.hpp
/// @brief NCCL's collectives on device memory: `all_reduce`, `broadcast`, `all_gather` and
/// `reduce_scatter`, out of place and in place, on `gpu::device_buffer`s or on device views
/// (`std::span` over device memory, e.g. a slice of a flat gradient buffer), with the element
/// type mapped to NCCL's at compile time (`<gpu/nccl/types.hpp>`), on an explicit stream.
///
/// @code
/// // Data parallelism: every rank averages its gradients with the others', in place.
/// gpu::nccl::all_reduce(comm, grads, gpu::nccl::reduction::avg, stream);
/// // Rank 0's weights to every rank.
/// gpu::nccl::broadcast(comm, weights, /*root=*/0, stream);
/// // One bucket of a flat buffer: a view.
/// gpu::nccl::all_reduce(comm, std::span(grads.data() + offset, count), gpu::nccl::reduction::sum,
///                       stream);
/// @endcode
///
/// Sizes are checked before any NCCL call, and a mismatch is `std::invalid_argument` with the
/// counts: `all_reduce` and `broadcast` need equal counts; `all_gather` needs the output to hold
/// the input times the number of ranks, `reduce_scatter` the input to hold the output times the
/// number of ranks (`torch.distributed`'s rules). Out-of-place ranges that overlap, other than
/// NCCL's in-place layouts, are refused too. An empty (moved-from) communicator is
/// `std::logic_error`; a failure of NCCL is `gpu::nccl::nccl_error`.
///
/// A collective queues its work on @p stream and returns: it never synchronises the stream.
/// Every rank must call the same collectives in the same order with matching counts; a rank
/// that does not leaves the others waiting on the GPU (`communicator::abort` ends that). The
/// first collective of a communicator sets up its connections, and may wait for the other ranks
/// on the host (up to the communicator's timeout). The stream must belong to the communicator's
/// device.
///
/// **CUDA graphs.** Every collective here is capturable (`gpu::capture_scope`): it queues NCCL's
/// kernel on @p stream and never synchronises a stream; what it may wait for is polled on the
/// host (`ncclCommGetAsyncError`). The rules NCCL adds:
/// - Run the first collective of a communicator before capturing: it sets up the connections
///   between the ranks and may return `ncclInProgress`, which a capture cannot wait for.
/// - Destroy the `gpu::graph_exec`s (and `gpu::graph`s) that captured a communicator's
///   collectives before the communicator: NCCL's finalize waits for them, so closing it first
///   runs out of `close_timeout` and aborts it.
/// - NCCL advises against capturing when one thread drives several GPUs (`init_all` and a
///   `group_scope`): prefer one process (or thread) per GPU for captured steps.
/// - Every rank replays the same graphs in the same order, as with eager collectives.
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/nccl/communicator.hpp>
#include <gpu/nccl/types.hpp>
#include <gpu/stream.hpp>

#include <cuda_bf16.h> // first: nccl.h declares ncclBfloat16 only when the bf16 types exist
#include <nccl.h>

#include <cstddef>
#include <span>
#include <type_traits>

namespace gpu::nccl {

namespace detail {

/// @brief The collectives of this header. The order is fixed.
enum class operation { all_reduce, broadcast, all_gather, reduce_scatter };

/// @brief One collective call as the templates hand it to the compiled part. Plain data.
struct collective_call {
    const char* function = nullptr;         ///< the public function, for messages
    operation kind = operation::all_reduce; ///< what to run
    const void* send = nullptr;             ///< device address of the input (ignored in place)
    void* recv = nullptr;                   ///< device address of the output
    std::size_t send_count = 0;             ///< elements of the input
    std::size_t recv_count = 0;             ///< elements of the output
    ncclDataType_t type = ncclFloat32;      ///< NCCL's element type
    std::size_t element_size = 0;           ///< bytes per element
    reduction op = reduction::sum;          ///< for `all_reduce` and `reduce_scatter`
    int root = 0;                           ///< for `broadcast`
    bool in_place = false; ///< `recv` holds the input too, in NCCL's in-place layout
};

/// @brief The checks that need no communicator: null addresses with elements, equal counts of
/// `all_reduce`. Throws `std::invalid_argument` naming the function and the values.
void check_arguments(const collective_call& call);

/// @brief The checks against a communicator of @p ranks ranks seen from @p rank: the counts of
/// `all_gather` and `reduce_scatter` (out = in * ranks, in = out * ranks), the root of
/// `broadcast` and its counts at the root, and overlapping out-of-place ranges. Throws
/// `std::invalid_argument` naming the function and the values.
void check_against_ranks(const collective_call& call, int ranks, int rank);

/// @brief Checks @p call (`check_arguments`, then that @p comm is not empty, then
/// `check_against_ranks`) and queues it on @p stream.
void run_collective(const communicator& comm, collective_call call, stream_ref stream);

/// @brief A call of @p function on @p recv, the output (and the input in place).
template <class T>
[[nodiscard]] collective_call make_call(const char* function, operation kind, const T* send,
                                        std::size_t send_count, std::span<T> recv)
{
    collective_call call;
    call.function = function;
    call.kind = kind;
    call.send = send;
    call.recv = recv.data();
    call.send_count = send_count;
    call.recv_count = recv.size();
    call.type = data_type_of<T>;
    call.element_size = sizeof(T);
    return call;
}

/// @brief The elements of @p buffer as a view.
template <class T>
[[nodiscard]] std::span<T> view(device_buffer<T>& buffer) noexcept
{
    return {buffer.data(), buffer.size()};
}

/// @brief The elements of @p buffer as a read-only view.
template <class T>
[[nodiscard]] std::span<const T> view(const device_buffer<T>& buffer) noexcept
{
    return {buffer.data(), buffer.size()};
}

} // namespace detail

/// @brief Reduces @p send over every rank with @p op into @p recv, on every rank
/// (`ncclAllReduce`, `torch.distributed.all_reduce`). @p send and @p recv may be the same
/// range (in place). Capturable (see the file's description).
/// @throws std::invalid_argument when the counts differ (both named), an address is null with
/// elements, or the ranges overlap without being the same
/// @throws std::logic_error when @p comm is empty
/// @throws gpu::nccl::nccl_error when NCCL fails
template <element T>
void all_reduce(const communicator& comm, std::span<const std::type_identity_t<T>> send,
                std::span<T> recv, reduction op, stream_ref stream)
{
    detail::collective_call call = detail::make_call(
        "gpu::nccl::all_reduce", detail::operation::all_reduce, send.data(), send.size(), recv);
    call.op = op;
    detail::run_collective(comm, call, stream);
}

/// @brief `all_reduce` in place: @p data holds the input and receives the result. Capturable.
template <element T>
void all_reduce(const communicator& comm, std::span<T> data, reduction op, stream_ref stream)
{
    all_reduce<T>(comm, data, data, op, stream);
}

/// @brief `all_reduce` of buffers. Capturable.
template <element T>
void all_reduce(const communicator& comm, const device_buffer<T>& send, device_buffer<T>& recv,
                reduction op, stream_ref stream)
{
    all_reduce<T>(comm, detail::view(send), detail::view(recv), op, stream);
}

/// @brief `all_reduce` of a buffer in place. Capturable.
template <element T>
void all_reduce(const communicator& comm, device_buffer<T>& data, reduction op, stream_ref stream)
{
    all_reduce<T>(comm, detail::view(data), op, stream);
}

/// @brief Copies @p send of rank @p root into @p recv of every rank (`ncclBroadcast`). Only the
/// root reads @p send, which must then have as many elements as @p recv; elsewhere it may be
/// empty. Capturable (see the file's description).
/// @throws std::invalid_argument when @p root is not a rank, the root's counts differ, an
/// address is null with elements, or the ranges overlap without being the same
/// @throws std::logic_error when @p comm is empty
/// @throws gpu::nccl::nccl_error when NCCL fails
template <element T>
void broadcast(const communicator& comm, std::span<const std::type_identity_t<T>> send,
               std::span<T> recv, int root, stream_ref stream)
{
    detail::collective_call call = detail::make_call(
        "gpu::nccl::broadcast", detail::operation::broadcast, send.data(), send.size(), recv);
    call.root = root;
    detail::run_collective(comm, call, stream);
}

/// @brief `broadcast` in place (`torch.distributed.broadcast`): the root's @p data to every
/// rank's @p data. Capturable.
template <element T>
void broadcast(const communicator& comm, std::span<T> data, int root, stream_ref stream)
{
    broadcast<T>(comm, data, data, root, stream);
}

/// @brief `broadcast` of buffers. Capturable.
template <element T>
void broadcast(const communicator& comm, const device_buffer<T>& send, device_buffer<T>& recv,
               int root, stream_ref stream)
{
    broadcast<T>(comm, detail::view(send), detail::view(recv), root, stream);
}

/// @brief `broadcast` of a buffer in place. Capturable.
template <element T>
void broadcast(const communicator& comm, device_buffer<T>& data, int root, stream_ref stream)
{
    broadcast<T>(comm, detail::view(data), root, stream);
}

/// @brief Gathers every rank's @p send into @p recv of every rank, rank r's at
/// `recv[r * send.size()]` (`ncclAllGather`, `torch.distributed.all_gather_into_tensor`).
/// Capturable (see the file's description).
/// @throws std::invalid_argument when `recv.size() != send.size() * comm.size()` (the counts and
/// the number of ranks named), an address is null with elements, or the ranges overlap
/// @throws std::logic_error when @p comm is empty
/// @throws gpu::nccl::nccl_error when NCCL fails
template <element T>
void all_gather(const communicator& comm, std::span<const std::type_identity_t<T>> send,
                std::span<T> recv, stream_ref stream)
{
    detail::run_collective(comm,
                           detail::make_call("gpu::nccl::all_gather", detail::operation::all_gather,
                                             send.data(), send.size(), recv),
                           stream);
}

/// @brief `all_gather` in place: @p data holds `comm.size()` equal parts, this rank's input in
/// part `comm.rank()`, and receives every rank's part. Capturable.
/// @throws std::invalid_argument when `data.size()` is not a multiple of `comm.size()`
template <element T>
void all_gather_in_place(const communicator& comm, std::span<T> data, stream_ref stream)
{
    detail::collective_call call =
        detail::make_call("gpu::nccl::all_gather_in_place", detail::operation::all_gather,
                          static_cast<const T*>(nullptr), 0, data);
    call.in_place = true;
    detail::run_collective(comm, call, stream);
}

/// @brief `all_gather` of buffers. Capturable.
template <element T>
void all_gather(const communicator& comm, const device_buffer<T>& send, device_buffer<T>& recv,
                stream_ref stream)
{
    all_gather<T>(comm, detail::view(send), detail::view(recv), stream);
}

/// @brief `all_gather_in_place` of a buffer. Capturable.
template <element T>
void all_gather_in_place(const communicator& comm, device_buffer<T>& data, stream_ref stream)
{
    all_gather_in_place<T>(comm, detail::view(data), stream);
}

/// @brief Reduces @p send over every rank with @p op and leaves part `comm.rank()` of the
/// result in @p recv (`ncclReduceScatter`, `torch.distributed.reduce_scatter_tensor`).
/// Capturable (see the file's description).
/// @throws std::invalid_argument when `send.size() != recv.size() * comm.size()` (the counts and
/// the number of ranks named), an address is null with elements, or the ranges overlap
/// @throws std::logic_error when @p comm is empty
/// @throws gpu::nccl::nccl_error when NCCL fails
template <element T>
void reduce_scatter(const communicator& comm, std::span<const std::type_identity_t<T>> send,
                    std::span<T> recv, reduction op, stream_ref stream)
{
    detail::collective_call call =
        detail::make_call("gpu::nccl::reduce_scatter", detail::operation::reduce_scatter,
                          send.data(), send.size(), recv);
    call.op = op;
    detail::run_collective(comm, call, stream);
}

/// @brief `reduce_scatter` in place: @p data holds the whole input (`comm.size()` equal parts)
/// and receives this rank's part of the result in part `comm.rank()`; the other parts are left
/// unspecified. Capturable.
/// @throws std::invalid_argument when `data.size()` is not a multiple of `comm.size()`
template <element T>
void reduce_scatter_in_place(const communicator& comm, std::span<T> data, reduction op,
                             stream_ref stream)
{
    detail::collective_call call =
        detail::make_call("gpu::nccl::reduce_scatter_in_place", detail::operation::reduce_scatter,
                          static_cast<const T*>(nullptr), 0, data);
    call.op = op;
    call.in_place = true;
    detail::run_collective(comm, call, stream);
}

/// @brief `reduce_scatter` of buffers. Capturable.
template <element T>
void reduce_scatter(const communicator& comm, const device_buffer<T>& send, device_buffer<T>& recv,
                    reduction op, stream_ref stream)
{
    reduce_scatter<T>(comm, detail::view(send), detail::view(recv), op, stream);
}

/// @brief `reduce_scatter_in_place` of a buffer. Capturable.
template <element T>
void reduce_scatter_in_place(const communicator& comm, device_buffer<T>& data, reduction op,
                             stream_ref stream)
{
    reduce_scatter_in_place<T>(comm, detail::view(data), op, stream);
}

} // namespace gpu::nccl
