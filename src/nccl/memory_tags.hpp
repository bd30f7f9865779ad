// The ledger's tag for the memory NCCL allocates for itself (gpu::memory_ledger), defined where
// the library is named (the core names no library), with the fix that matches it.
#pragma once

#include <gpu/memory_tag.hpp>

namespace gpu::nccl::detail {

/// @brief "NCCL communicator" (communicator category): the device memory a communicator's
/// set-up took, measured as the device's used memory before and after it.
inline constinit memory_tag_definition nccl_communicator_tag{
    "NCCL communicator", memory_category::communicator,
    "NCCL's buffers grow with its channels and buffer size: set NCCL_BUFFSIZE or "
    "NCCL_MAX_NCHANNELS lower, or keep fewer communicators alive"};

} // namespace gpu::nccl::detail
