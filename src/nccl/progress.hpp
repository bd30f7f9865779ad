// Private to cudagap_nccl: waiting on non-blocking communicators, and the record of the
// communicators that the calling thread's open NCCL group has used.
#pragma once

#include <cuda_bf16.h> // first: nccl.h declares ncclBfloat16 only when the bf16 types exist
#include <nccl.h>

#include <chrono>
#include <string_view>

namespace gpu::nccl::detail {

/// The state of @p comm once NCCL no longer reports it in progress (`ncclCommGetAsyncError`),
/// or `ncclInProgress` at @p deadline; the status of `ncclCommGetAsyncError` itself when that
/// fails. Never throws.
[[nodiscard]] ncclResult_t poll_state(ncclComm_t comm,
                                      std::chrono::steady_clock::time_point deadline) noexcept;

/// Waits up to @p timeout while @p comm is in progress after @p api; throws its failure
/// (`nccl_error` with @p context for the hint), or the timeout's `nccl_error` with @p why.
void wait_until_ready(ncclComm_t comm, std::chrono::milliseconds timeout, const char* api,
                      std::string_view why, std::string_view context);

/// The depth of the calling thread's NCCL groups opened through `group_scope` (0: none).
[[nodiscard]] int group_depth() noexcept;

/// Notes that the calling thread's open group queued work on @p comm, whose operations may
/// wait up to @p timeout: `group_scope::end` waits for it.
void note_group_member(ncclComm_t comm, std::chrono::milliseconds timeout);

/// Forgets @p comm among the members of the calling thread's open group: it is being closed,
/// and the group's end must not wait on a communicator that is gone.
void forget_group_member(ncclComm_t comm) noexcept;

} // namespace gpu::nccl::detail
