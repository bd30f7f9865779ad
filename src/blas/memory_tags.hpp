// The ledger's tags for the memory the cuBLAS layer allocates itself (gpu::memory_ledger).
#pragma once

#include <gpu/memory_tag.hpp>

namespace gpu::blas::detail {

/// @brief "cuBLAS workspace" (workspace category): `gpu::blas::handle`'s workspace, with the
/// fix that names `handle_options::workspace_bytes`.
[[nodiscard]] memory_tag cublas_workspace_tag();

/// @brief "cuBLASLt workspace" (workspace category): `gpu::blas::lt_handle`'s workspace.
[[nodiscard]] memory_tag cublaslt_workspace_tag();

} // namespace gpu::blas::detail
