// The ledger's tags for the memory the cuDNN layer allocates itself (gpu::memory_ledger).
#pragma once

#include <gpu/memory_tag.hpp>

namespace gpu::dnn::detail {

/// @brief "cuDNN plan workspace" (workspace category): the workspace a convolution plan keeps
/// for its chosen algorithm, with the fix that names the workspace budget.
[[nodiscard]] memory_tag cudnn_plan_workspace_tag();

/// @brief "cuDNN planning scratch" (planning scratch category): what the algorithm search
/// allocates while it plans (trial workspaces and operands), freed when planning ends.
[[nodiscard]] memory_tag cudnn_planning_scratch_tag();

/// @brief "cuDNN dropout states" (scratch category): the random generator's states a dropout
/// descriptor keeps.
[[nodiscard]] memory_tag cudnn_dropout_states_tag();

} // namespace gpu::dnn::detail
