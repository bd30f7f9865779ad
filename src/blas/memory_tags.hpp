// The ledger's tags for the memory the cuBLAS wrapper allocates itself (gpu::memory_ledger),
// defined where the library is named (the core names no library), each with the fix that
// matches it.
#pragma once

#include <gpu/memory_tag.hpp>

namespace gpu::blas::detail {

/// @brief "cuBLAS workspace" (workspace category): `gpu::blas::handle`'s workspace, with the
/// fix that names `handle_options::workspace_bytes`.
inline constinit memory_tag_definition cublas_workspace_tag{
    "cuBLAS workspace", memory_category::workspace,
    "give the cuBLAS handle a smaller workspace (handle_options::workspace_bytes; 16 KiB or "
    "more, or cuBLAS fails to allocate its own)"};

/// @brief "cuBLASLt workspace" (workspace category): `gpu::blas::lt_handle`'s workspace.
inline constinit memory_tag_definition cublaslt_workspace_tag{
    "cuBLASLt workspace", memory_category::workspace,
    "give the cuBLASLt handle a smaller workspace (lt_handle_options::workspace_bytes): fewer "
    "algorithms qualify, none fails for it"};

} // namespace gpu::blas::detail
