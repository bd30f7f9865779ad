// The NCCL wrapper's tag, defined once per process where the library is named (the core names no
// library), with the fix that matches it.
#include "memory_tags.hpp"

namespace gpu::nccl::detail {

memory_tag nccl_communicator_tag()
{
    static const memory_tag tag = memory_tag::define(
        "NCCL communicator", memory_category::communicator,
        "NCCL's buffers grow with its channels and buffer size: set NCCL_BUFFSIZE or "
        "NCCL_MAX_NCHANNELS lower, or keep fewer communicators alive");
    return tag;
}

} // namespace gpu::nccl::detail
