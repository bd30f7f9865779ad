/// @file occupancy.hpp
/// @brief How big a block and a grid to give your own kernel: the block size with the highest
/// occupancy (the search of `cudaOccupancyMaxPotentialBlockSize`), the blocks of a size that
/// fit one multiprocessor at once, and a `launch_config` that fills the device for n elements.
///
/// Every query names its device and runs there (`gpu::scoped_device`), leaving the caller's
/// current device as it was. The arithmetic (`detail::search_block_size`,
/// `detail::filling_grid`) is separate from the queries, so that it is tested without a GPU.
#pragma once

#include <gpu/device.hpp>
#include <gpu/launch.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>

namespace gpu {

/// @brief The best block size for a kernel and the grid that fills the device with it.
struct block_size_choice {
    int block_size = 0;    ///< threads per block with the highest occupancy (the largest such)
    int min_grid_size = 0; ///< blocks that fill every multiprocessor at that size
    int blocks_per_multiprocessor = 0; ///< of those, how many run on one multiprocessor at once
};

/// @brief What a device and a kernel allow, the inputs of the block-size search.
struct occupancy_limits {
    int max_threads_per_multiprocessor = 0; ///< `cudaDevAttrMaxThreadsPerMultiProcessor`
    int warp_size = 0;                      ///< `cudaDevAttrWarpSize`
    int max_threads_per_block = 0;          ///< the device's, `cudaDevAttrMaxThreadsPerBlock`
    int kernel_max_threads_per_block = 0;   ///< the kernel's (registers, `__launch_bounds__`)
    int multiprocessor_count = 0;           ///< `cudaDevAttrMultiProcessorCount`
};

namespace detail {
/// @brief The search of `cudaOccupancyMaxPotentialBlockSize` (cuda_runtime.h), step for step:
/// from the largest allowed block down by whole warps, the size whose resident threads per
/// multiprocessor (`size * active_blocks(size)`) are the most, the largest on a tie; it stops
/// early once a multiprocessor is full.
/// @param limits the device's and kernel's limits (all positive)
/// @param block_size_limit the largest block to consider (0: no limit of the caller's)
/// @param active_blocks resident blocks per multiprocessor for a block size
/// @throws std::invalid_argument when a limit is not positive (naming it) or no size fits
[[nodiscard]] block_size_choice search_block_size(const occupancy_limits& limits,
                                                  int block_size_limit,
                                                  const std::function<int(int)>& active_blocks);

/// @brief Blocks of @p block_size threads for @p elements elements, one element per thread,
/// but no more than @p resident_blocks (what the device runs at once: a kernel with a
/// grid-stride loop then covers the rest) and no more than @p max_grid_x.
/// @throws std::invalid_argument for no elements or a non-positive size or count (naming them)
[[nodiscard]] std::uint32_t filling_grid(std::size_t elements, int block_size,
                                         long long resident_blocks, std::uint32_t max_grid_x);

/// @brief The occupancy limits of @p kernel on @p dev.
[[nodiscard]] occupancy_limits read_occupancy_limits(device dev, const void* kernel);
/// @brief `cudaOccupancyMaxActiveBlocksPerMultiprocessor` on @p dev.
[[nodiscard]] int active_blocks(device dev, const void* kernel, int block_size,
                                std::size_t dynamic_shared_bytes);
/// @brief `search_block_size` with the device's answers.
[[nodiscard]] block_size_choice best_block_size(device dev, const void* kernel,
                                                std::size_t dynamic_shared_bytes,
                                                int block_size_limit);
/// @brief `filling_config` for a type-erased kernel.
[[nodiscard]] launch_config filling_config(device dev, const void* kernel, std::size_t elements,
                                           std::size_t dynamic_shared_bytes);
} // namespace detail

/// @brief The block size with which @p kernel keeps the most threads resident on @p dev (what
/// `cudaOccupancyMaxPotentialBlockSize` suggests), and the grid that fills the device with it.
/// @param dev the device whose multiprocessors are filled
/// @param kernel the kernel to be launched, as the pointer its `.cu` file hands out
/// @param dynamic_shared_bytes dynamic shared memory per block, whatever the block size
/// @param block_size_limit the largest block to consider (0: the kernel's and device's limit)
/// @throws gpu::cuda_error when CUDA is unavailable
template <class... Params>
[[nodiscard]] block_size_choice best_block_size(device dev, void (*kernel)(Params...),
                                                std::size_t dynamic_shared_bytes = 0,
                                                int block_size_limit = 0)
{
    return detail::best_block_size(dev, reinterpret_cast<const void*>(kernel), dynamic_shared_bytes,
                                   block_size_limit);
}

/// @brief How many blocks of @p block_size threads of @p kernel one multiprocessor of @p dev
/// runs at once (`cudaOccupancyMaxActiveBlocksPerMultiprocessor`); 0 when none fits.
/// @throws gpu::cuda_error when CUDA is unavailable or refuses the size
template <class... Params>
[[nodiscard]] int active_blocks_per_multiprocessor(device dev, void (*kernel)(Params...),
                                                   int block_size,
                                                   std::size_t dynamic_shared_bytes = 0)
{
    return detail::active_blocks(dev, reinterpret_cast<const void*>(kernel), block_size,
                                 dynamic_shared_bytes);
}

/// @brief A one-dimensional configuration that fills @p dev for @p elements elements: the
/// `best_block_size`, and enough blocks for one element per thread, capped at what the device
/// runs at once. A capped grid covers fewer threads than elements, so write the kernel with a
/// grid-stride loop (`for (i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x *
/// blockDim.x)`).
/// @throws std::invalid_argument for no elements
/// @throws gpu::cuda_error when CUDA is unavailable
template <class... Params>
[[nodiscard]] launch_config filling_config(device dev, void (*kernel)(Params...),
                                           std::size_t elements,
                                           std::size_t dynamic_shared_bytes = 0)
{
    return detail::filling_config(dev, reinterpret_cast<const void*>(kernel), elements,
                                  dynamic_shared_bytes);
}

} // namespace gpu
