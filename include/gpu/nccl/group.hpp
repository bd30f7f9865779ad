/// @file group.hpp
/// @brief `gpu::nccl::group_scope`: NCCL's group (`ncclGroupStart` ... `ncclGroupEnd`) as a
/// scope that ends on every path, and `gpu::nccl::group(work)`, the same in one call.
///
/// Collectives queued inside a group are launched together when it ends. NCCL requires a group
/// when one thread drives several communicators (`communicator::init_all`: otherwise the first
/// collective waits for ranks that this thread has not reached yet), and fuses the collectives
/// of one communicator that a group holds (PyTorch's `coalescing_manager`).
///
/// @code
/// std::vector<gpu::nccl::communicator> comms = gpu::nccl::communicator::init_all();
/// gpu::nccl::group([&] {
///     for (std::size_t i = 0; i < comms.size(); ++i) {
///         gpu::nccl::all_reduce(comms[i], grads[i], gpu::nccl::reduction::avg, streams[i]);
///     }
/// });
/// @endcode
///
/// Groups nest (only the outermost end launches). A group that an exception leaves still ends:
/// what was queued is launched, and the destructor reports a failure instead of throwing.
///
/// A group holds collectives, not the making or closing of communicators (nccl.h: the two
/// cannot be grouped together): `communicator::init_rank`, `init_all`, `destroy` and
/// `destroy_all` throw `std::logic_error` inside an open group. Only groups opened through
/// `group_scope` are known to cudagap: a raw `ncclGroupStart` is not.
#pragma once

#include <utility>

namespace gpu::nccl {

/// @brief An open NCCL group (`ncclGroupStart`) that `end()` or the destructor closes
/// (`ncclGroupEnd`). Neither copyable nor movable: it belongs to the thread and the scope that
/// opened it.
class group_scope {
public:
    /// @brief Opens a group (`ncclGroupStart`).
    /// @throws gpu::nccl::nccl_error when NCCL refuses
    group_scope();

    /// @brief Ends the group (`ncclGroupEnd`), which launches what it queued, then waits while
    /// NCCL reports the communicators that the group's collectives used in progress (cudagap's
    /// communicators are non-blocking): all against one deadline, the longest of their
    /// timeouts, and every one of them before the first failure is thrown.
    /// @throws std::logic_error when the group was already ended
    /// @throws gpu::nccl::nccl_error when NCCL fails, or with status `ncclInProgress` when a
    /// communicator was still in progress at the deadline
    void end();

    /// @brief Whether the group is still open (`end()` not called yet).
    [[nodiscard]] bool open() const noexcept { return open_; }

    /// @brief Ends the group when it is still open, as `end()` does, reporting a failure on
    /// stderr instead of throwing. Never waits longer than the communicators' timeouts.
    ~group_scope();

    group_scope(const group_scope&) = delete;
    group_scope& operator=(const group_scope&) = delete;
    group_scope(group_scope&&) = delete;
    group_scope& operator=(group_scope&&) = delete;

private:
    bool open_ = false;
};

/// @brief Runs @p work inside a `group_scope` and ends it: the collectives @p work queues are
/// launched together. An exception from @p work still ends the group, and is rethrown.
/// @throws what @p work throws, or what `group_scope::end()` throws
template <class Work>
void group(Work&& work)
{
    group_scope scope;
    std::forward<Work>(work)();
    scope.end();
}

} // namespace gpu::nccl
