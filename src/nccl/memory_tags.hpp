// The ledger's tag for the memory NCCL allocates for itself (gpu::memory_ledger).
#pragma once

#include <gpu/memory_tag.hpp>

namespace gpu::nccl::detail {

/// @brief "NCCL communicator" (communicator category): the device memory a communicator's
/// set-up took, measured as the device's used memory before and after it.
[[nodiscard]] memory_tag nccl_communicator_tag();

} // namespace gpu::nccl::detail
