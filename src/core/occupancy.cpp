// Occupancy: the block-size search of cudaOccupancyMaxPotentialBlockSize on a named device, and
// the grid that fills the device.
#include <gpu/detail/expects.hpp>
#include <gpu/error.hpp>
#include <gpu/occupancy.hpp>

#include <algorithm>
#include <stdexcept>

namespace gpu {
namespace detail {

namespace {
void require_positive(const char* name, int value)
{
    GPU_EXPECTS(value > 0, std::invalid_argument, "gpu::best_block_size: ", name, " is ", value,
                "; it must be positive (a device or kernel attribute was misread)");
}
} // namespace

block_size_choice search_block_size(const occupancy_limits& limits, int block_size_limit,
                                    const std::function<int(int)>& active_blocks)
{
    require_positive("max_threads_per_multiprocessor", limits.max_threads_per_multiprocessor);
    require_positive("warp_size", limits.warp_size);
    require_positive("max_threads_per_block", limits.max_threads_per_block);
    require_positive("kernel_max_threads_per_block", limits.kernel_max_threads_per_block);
    require_positive("multiprocessor_count", limits.multiprocessor_count);
    GPU_EXPECTS(block_size_limit >= 0, std::invalid_argument,
                "gpu::best_block_size: block_size_limit is ", block_size_limit,
                "; give 0 for no limit or a positive block size");
    int limit = block_size_limit == 0 ? limits.max_threads_per_block : block_size_limit;
    limit = std::min({limit, limits.max_threads_per_block, limits.kernel_max_threads_per_block});
    const int granularity = limits.warp_size;
    const int aligned_limit = (limit + granularity - 1) / granularity * granularity;
    block_size_choice best;
    int most_threads = 0;
    for (int aligned = aligned_limit; aligned > 0; aligned -= granularity) {
        // The first size tried may be the unaligned limit itself, as in cuda_runtime.h.
        const int size = std::min(aligned, limit);
        const int blocks = active_blocks(size);
        if (size * blocks > most_threads) {
            best = {size, 0, blocks};
            most_threads = size * blocks;
        }
        if (most_threads == limits.max_threads_per_multiprocessor) {
            break; // the multiprocessor is full: no smaller block does better
        }
    }
    GPU_EXPECTS(best.block_size > 0, std::invalid_argument,
                "gpu::best_block_size: no block size up to ", limit,
                " threads fits one multiprocessor (too much shared memory per block, or too "
                "many registers): give the kernel less dynamic shared memory");
    best.min_grid_size = best.blocks_per_multiprocessor * limits.multiprocessor_count;
    return best;
}

std::uint32_t filling_grid(std::size_t elements, int block_size, long long resident_blocks,
                           std::uint32_t max_grid_x)
{
    GPU_EXPECTS(elements > 0, std::invalid_argument,
                "gpu::filling_config: 0 elements; skip the launch when there is nothing to do");
    GPU_EXPECTS(block_size > 0 && resident_blocks > 0 && max_grid_x > 0, std::invalid_argument,
                "gpu::filling_config: block size ", block_size, ", resident blocks ",
                resident_blocks, ", largest grid ", max_grid_x, ": each must be positive");
    const std::size_t size = static_cast<std::size_t>(block_size);
    const std::size_t wanted = (elements + size - 1) / size;
    const std::size_t cap =
        std::min<std::size_t>(static_cast<std::size_t>(resident_blocks), max_grid_x);
    return static_cast<std::uint32_t>(std::min(wanted, cap));
}

occupancy_limits read_occupancy_limits(device dev, const void* kernel)
{
    const scoped_device guard(dev);
    occupancy_limits limits;
    const int id = dev.id();
    GPU_CUDA_CHECK(cudaDeviceGetAttribute(&limits.max_threads_per_multiprocessor,
                                          cudaDevAttrMaxThreadsPerMultiProcessor, id));
    GPU_CUDA_CHECK(cudaDeviceGetAttribute(&limits.warp_size, cudaDevAttrWarpSize, id));
    GPU_CUDA_CHECK(
        cudaDeviceGetAttribute(&limits.max_threads_per_block, cudaDevAttrMaxThreadsPerBlock, id));
    GPU_CUDA_CHECK(
        cudaDeviceGetAttribute(&limits.multiprocessor_count, cudaDevAttrMultiProcessorCount, id));
    cudaFuncAttributes attributes{};
    GPU_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    limits.kernel_max_threads_per_block = attributes.maxThreadsPerBlock;
    return limits;
}

int active_blocks(device dev, const void* kernel, int block_size, std::size_t dynamic_shared_bytes)
{
    GPU_EXPECTS(block_size > 0, std::invalid_argument,
                "gpu::active_blocks_per_multiprocessor: block size ", block_size,
                "; it must be positive");
    const scoped_device guard(dev);
    int blocks = 0;
    GPU_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, block_size,
                                                                 dynamic_shared_bytes));
    return blocks;
}

block_size_choice best_block_size(device dev, const void* kernel, std::size_t dynamic_shared_bytes,
                                  int block_size_limit)
{
    const occupancy_limits limits = read_occupancy_limits(dev, kernel);
    return search_block_size(limits, block_size_limit, [&](int size) {
        return active_blocks(dev, kernel, size, dynamic_shared_bytes);
    });
}

launch_config filling_config(device dev, const void* kernel, std::size_t elements,
                             std::size_t dynamic_shared_bytes)
{
    const block_size_choice choice = best_block_size(dev, kernel, dynamic_shared_bytes, 0);
    const launch_limits limits = launch_limits::of(dev.id());
    launch_config config;
    config.block.x = static_cast<std::uint32_t>(choice.block_size);
    config.grid.x =
        filling_grid(elements, choice.block_size, choice.min_grid_size, limits.max_grid.x);
    config.dynamic_shared_bytes = dynamic_shared_bytes;
    return config;
}

} // namespace detail
} // namespace gpu
