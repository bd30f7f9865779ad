// The ledger's tags for the memory the cuDNN wrapper allocates itself (gpu::memory_ledger),
// defined where the library is named (the core names no library), each with the fix that
// matches it.
#pragma once

#include <gpu/memory_tag.hpp>

namespace gpu::dnn::detail {

/// @brief "cuDNN plan workspace" (workspace category): the workspace a convolution plan keeps
/// for its chosen algorithm, with the fix that names the workspace budget.
inline constinit memory_tag_definition cudnn_plan_workspace_tag{
    "cuDNN plan workspace", memory_category::workspace,
    "lower cuDNN's workspace budget (convolution_options::workspace_budget_bytes, "
    "server_options::workspace_budget_bytes): plans then choose algorithms that need less"};

/// @brief "cuDNN planning scratch" (planning scratch category): what the algorithm search
/// allocates while it plans (trial workspaces and operands), freed when planning ends.
inline constinit memory_tag_definition cudnn_planning_scratch_tag{
    "cuDNN planning scratch", memory_category::planning_scratch,
    "lower the search's workspace budget (convolution_options::workspace_budget_bytes), or "
    "plan the convolutions before the large allocations"};

/// @brief "cuDNN dropout states" (scratch category): the random generator's states a dropout
/// descriptor keeps.
inline constinit memory_tag_definition cudnn_dropout_states_tag{"cuDNN dropout states",
                                                                memory_category::scratch};

} // namespace gpu::dnn::detail
