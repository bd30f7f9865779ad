/// @file vram.hpp
/// @brief VRAM advice and monitoring for small cards (docs/vram.md): settings by
/// memory size and capability, what this process and the pool hold against what the device
/// shows, and releasing the pool's cache. Part of the tools component (`cudagap::tools`,
/// namespace `gpu::tools`).
///
/// Tiers by card size, small cards to large. A card is sold as "8 GB" but reports less (the
/// driver and ECC take their share: an RTX 4090 reports 23.99 GiB, an L40S with ECC 44.99 GiB),
/// so each tier starts at 7/8 of its size; comparing with the full size would put every 12 GB
/// card in the "under 12 GB" tier and every 24 GB card below its class.
///
/// | tier | reported total | precision | batch | gradient checkpointing |
/// |---|---|---|---|---|
/// | under 8 GB | < 7 GiB | BF16 where supported, else FP16 | 1 | yes |
/// | 8 GB class | 7 to < 10.5 GiB | BF16 / FP16 | 4 | no |
/// | 12 GB class | 10.5 to < 21 GiB | FP32 (TF32 where supported) | 8 | no |
/// | 24 GB class | 21 to < 42 GiB | FP32 (TF32 where supported) | 16 | no |
/// | 48 GB class | 42 to < 70 GiB | FP32 (TF32 where supported) | 32 | no |
/// | 80 GB and more | >= 70 GiB | FP32 (TF32 where supported) | 64 | no |
#pragma once

#include <gpu/allocation_stats.hpp>
#include <gpu/device.hpp>
#include <gpu/memory_pool.hpp>
#include <gpu/profile.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::tools {

/// @brief The memory classes of the advisor, smallest first.
enum class vram_tier {
    under_8gb,  ///< less than an 8 GB card
    class_8gb,  ///< 8 to 11 GB cards
    class_12gb, ///< 12 to 20 GB cards
    class_24gb, ///< 24 to 40 GB cards (RTX 3090/4090, A10, L4 pairs)
    class_48gb, ///< 48 to 64 GB cards (RTX A6000, L40S)
    class_80gb, ///< 80 GB and more (A100 80GB, H100, H200)
};

/// @brief The tier's name as the report prints it, e.g. `24 GB class`.
[[nodiscard]] std::string_view to_string(vram_tier tier) noexcept;

/// @brief The smallest reported total (bytes) that falls into @p tier: 7/8 of the tier's size
/// in GiB (0 for `under_8gb`).
[[nodiscard]] std::size_t vram_tier_floor_bytes(vram_tier tier) noexcept;

/// @brief The tier of a card that reports @p total_bytes of memory.
[[nodiscard]] vram_tier vram_tier_for(std::size_t total_bytes) noexcept;

/// @brief What to run with on a card: precision, TF32, batch size, checkpointing and notes.
struct vram_advice {
    std::size_t total_bytes = 0;                    ///< the memory the advice is for
    std::optional<compute_capability> capability{}; ///< the GPU's, when known
    vram_tier tier = vram_tier::under_8gb;          ///< the memory class
    preferred_precision precision =
        preferred_precision::fp32;       ///< element type for weights and activations
    int batch_size = 1;                  ///< a starting batch size for training
    bool gradient_checkpointing = false; ///< recompute activations instead of storing them
    bool allow_tf32 = false;             ///< TF32 tensor cores for the FP32 math (Ampere+)
    std::vector<std::string> notes{};    ///< why, and what else helps

    /// @brief @p base with this advice's precision and TF32 setting applied (the rest kept).
    [[nodiscard]] profile apply_to(profile base) const;

    /// @brief One line per setting and note, for reports.
    [[nodiscard]] std::vector<std::string> describe() const;
};

/// @brief Advice for a card with @p total_bytes of memory and, when known, @p capability
/// (BF16 and TF32 need compute capability 8.0; without a capability the advice says FP16 and
/// notes when BF16 would be better).
[[nodiscard]] vram_advice advise_vram(std::size_t total_bytes,
                                      std::optional<compute_capability> capability = std::nullopt);

/// @brief Advice for @p dev, from its total memory and compute capability.
/// @throws gpu::cuda_error when CUDA is unavailable
[[nodiscard]] vram_advice advise_vram(device dev);

/// @brief A snapshot of memory use on a device, with the three views kept apart (what this
/// process holds, what the pool caches, what the device shows: docs/vram.md).
struct vram_usage {
    int device_id = -1;           ///< the device looked at
    allocation_stats allocated{}; ///< held by this process's cudagap buffers (all devices)
    pool_info pool{};             ///< the device's default pool: reserved, in use, cached
    memory_info device_memory{};  ///< the driver's view: every process, the driver, the pools

    /// The used fraction of device memory above which `warning()` speaks (90%, where the
    /// monitor that docs/vram.md compares with warns).
    static constexpr double high_usage_fraction = 0.9;

    /// @brief Whether the device is more than 90% full.
    [[nodiscard]] bool high() const noexcept
    {
        return device_memory.used_fraction() > high_usage_fraction;
    }

    /// @brief The warning for a nearly full device, with what to do; empty when not `high()`.
    [[nodiscard]] std::string warning() const;

    /// @brief One line per view, for reports.
    [[nodiscard]] std::vector<std::string> describe() const;
};

/// @brief Reads the three views of @p dev's memory now.
/// @throws gpu::cuda_error when CUDA is unavailable
[[nodiscard]] vram_usage measure_vram(device dev);

/// @brief The views before and after `clear_vram`.
struct vram_clear_result {
    vram_usage before{}; ///< just before trimming
    vram_usage after{};  ///< just after

    /// @brief How much device memory the trim returned, by the pool's count.
    [[nodiscard]] std::size_t released_bytes() const noexcept
    {
        return before.pool.reserved_bytes > after.pool.reserved_bytes
                   ? before.pool.reserved_bytes - after.pool.reserved_bytes
                   : 0;
    }
};

/// @brief Returns what @p dev's pool holds but does not use to the device (what
/// `torch.cuda.empty_cache()` does): synchronises the device, trims the pool to
/// zero, and reports the views before and after. Live buffers are untouched.
/// @throws gpu::cuda_error when CUDA is unavailable
vram_clear_result clear_vram(device dev);

} // namespace gpu::tools

// The names of the VRAM advisor and monitor before they moved into gpu::tools, kept for one
// release, deprecated so that a build says which name to write instead. They are to be removed in
// the release after.
namespace gpu {

/// @deprecated use `gpu::tools::vram_tier`
using vram_tier [[deprecated("use gpu::tools::vram_tier")]] = tools::vram_tier;

/// @deprecated use `gpu::tools::vram_advice`
using vram_advice [[deprecated("use gpu::tools::vram_advice")]] = tools::vram_advice;

/// @deprecated use `gpu::tools::vram_usage`
using vram_usage [[deprecated("use gpu::tools::vram_usage")]] = tools::vram_usage;

/// @deprecated use `gpu::tools::vram_clear_result`
using vram_clear_result [[deprecated("use gpu::tools::vram_clear_result")]] =
    tools::vram_clear_result;

// Using-declarations, not deprecated wrappers: each takes a gpu::tools or a gpu type, so an
// unqualified call from gpu::tools or gpu would find both a wrapper here and the function in
// gpu::tools (one of them by argument-dependent lookup) and be ambiguous.
using tools::advise_vram;
using tools::clear_vram;
using tools::measure_vram;
using tools::to_string;
using tools::vram_tier_floor_bytes;

/// @deprecated use `gpu::tools::vram_tier_for`, which takes the same argument
[[deprecated("use gpu::tools::vram_tier_for")]] [[nodiscard]] inline tools::vram_tier
vram_tier_for(std::size_t total_bytes) noexcept
{
    return tools::vram_tier_for(total_bytes);
}

} // namespace gpu
