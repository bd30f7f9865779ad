// The cuBLAS wrapper's tags, defined once per process where the library is named (the core names
// no library), each with the fix that matches it.
#include "memory_tags.hpp"

namespace gpu::blas::detail {

memory_tag cublas_workspace_tag()
{
    static const memory_tag tag = memory_tag::define(
        "cuBLAS workspace", memory_category::workspace,
        "give the cuBLAS handle a smaller workspace (handle_options::workspace_bytes; 16 KiB or "
        "more, or cuBLAS fails to allocate its own)");
    return tag;
}

memory_tag cublaslt_workspace_tag()
{
    static const memory_tag tag = memory_tag::define(
        "cuBLASLt workspace", memory_category::workspace,
        "give the cuBLASLt handle a smaller workspace (lt_handle_options::workspace_bytes): "
        "fewer algorithms qualify, none fails for it");
    return tag;
}

} // namespace gpu::blas::detail
