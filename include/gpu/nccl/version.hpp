/// @file version.hpp
/// @brief The NCCL version cudagap was compiled against (`NCCL_VERSION_CODE`) and the one
/// loaded at run time (`ncclGetVersion`), both readable without a GPU; and the oldest NCCL the
/// wrapper compiles against, 2.14 (every header of the wrapper includes this one).
#pragma once

#include <gpu/version.hpp>

#include <cuda_bf16.h> // first: nccl.h declares ncclBfloat16 only when the bf16 types exist
#include <nccl.h>

// Non-blocking communicators (ncclConfig_t::blocking, ncclCommInitRankConfig,
// ncclCommFinalize, ncclInProgress), on which every deadline of the wrapper rests, came in 2.14.
// cmake/FindNCCL.cmake refuses an older NCCL with the same words; this catches another nccl.h
// found first on the include path.
static_assert(
    NCCL_VERSION_CODE >= 21400,
    "cudagap's nccl wrapper needs NCCL 2.14 or newer (non-blocking communicators: "
    "ncclConfig_t::blocking, ncclCommFinalize, ncclInProgress): the nccl.h found is older; "
    "set NCCL_ROOT to a newer NCCL");

namespace gpu::nccl {

/// @brief NCCL versions: compiled against (headers) and loaded (shared library). Plain data.
struct version_info {
    semantic_version compiled{}; ///< from `NCCL_MAJOR`, `NCCL_MINOR`, `NCCL_PATCH`
    semantic_version loaded{};   ///< from `ncclGetVersion()`; 0.0.0 when it failed

    /// @brief Whether the loaded NCCL can serve code compiled against these headers: the same
    /// major version and a minor version no older than the headers' (the communicator
    /// configuration grows with each minor release, and an older library refuses a newer one).
    [[nodiscard]] bool compatible() const noexcept
    {
        return loaded.major == compiled.major && loaded.minor >= compiled.minor;
    }
};

/// @brief Decodes NCCL's integer version: `22809` is 2.28.9 (`major * 10000 + minor * 100 +
/// patch` since 2.9), `2708` is 2.7.8 (`major * 1000 + minor * 100 + patch` before).
[[nodiscard]] constexpr semantic_version decode_version(int code) noexcept
{
    if (code < 10000) {
        return {code / 1000, (code % 1000) / 100, code % 100};
    }
    return {code / 10000, (code % 10000) / 100, code % 100};
}

/// @brief Reads the NCCL versions. Works without a GPU or driver; never throws.
[[nodiscard]] version_info version() noexcept;

} // namespace gpu::nccl
