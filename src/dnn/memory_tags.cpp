// The cuDNN wrapper's tags, defined once per process where the library is named (the core names
// no library), each with the fix that matches it.
#include "memory_tags.hpp"

namespace gpu::dnn::detail {

memory_tag cudnn_plan_workspace_tag()
{
    static const memory_tag tag = memory_tag::define(
        "cuDNN plan workspace", memory_category::workspace,
        "lower cuDNN's workspace budget (convolution_options::workspace_budget_bytes, "
        "server_options::workspace_budget_bytes): plans then choose algorithms that need less");
    return tag;
}

memory_tag cudnn_planning_scratch_tag()
{
    static const memory_tag tag = memory_tag::define(
        "cuDNN planning scratch", memory_category::planning_scratch,
        "lower the search's workspace budget (convolution_options::workspace_budget_bytes), or "
        "plan the convolutions before the large allocations");
    return tag;
}

memory_tag cudnn_dropout_states_tag()
{
    static const memory_tag tag =
        memory_tag::define("cuDNN dropout states", memory_category::scratch);
    return tag;
}

} // namespace gpu::dnn::detail
