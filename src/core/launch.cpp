// gpu::launch: the configuration checked against the stream's device, then cudaLaunchKernel;
// a failed launch is explained with the kernel's own limits.
#include <gpu/detail/expects.hpp>
#include <gpu/error.hpp>
#include <gpu/launch.hpp>
#include <gpu/memory_ledger.hpp>

#include <array>
#include <mutex>
#include <stdexcept>
#include <string>

namespace gpu {

std::string dims3::to_string() const
{
    // Appended piece by piece: GCC 12 misreads `"(" + std::to_string(x)` as an overlapping copy.
    std::string text(1, '(');
    text += std::to_string(x);
    text += ", ";
    text += std::to_string(y);
    text += ", ";
    text += std::to_string(z);
    text += ')';
    return text;
}

std::string launch_config::to_string() const
{
    return "grid " + grid.to_string() + " x block " + block.to_string() + ", " +
           std::to_string(dynamic_shared_bytes) + " B dynamic shared memory";
}

namespace {
int attribute(cudaDeviceAttr which, int device)
{
    int value = 0;
    GPU_CUDA_CHECK(cudaDeviceGetAttribute(&value, which, device));
    return value;
}

std::uint32_t unsigned_attribute(cudaDeviceAttr which, int device)
{
    return static_cast<std::uint32_t>(attribute(which, device));
}

/// One extent against its limit: the message says which extent of what, both values and the fix.
void check_extent(const char* what, char axis, std::uint32_t value, std::uint32_t limit,
                  const launch_limits& limits)
{
    GPU_EXPECTS(value >= 1, std::invalid_argument, "gpu::launch: ", what, ".", axis,
                " is 0 (device ", limits.device,
                "): every extent must be at least 1; a launch "
                "over no elements is skipped by the caller");
    GPU_EXPECTS(value <= limit, std::invalid_argument, "gpu::launch: ", what, ".", axis, " is ",
                value, " but device ", limits.device, " allows at most ", limit,
                ": use fewer, larger ", (what[0] == 'g' ? "blocks" : "blocks' other extents"),
                " or a grid-stride loop");
}
} // namespace

launch_limits launch_limits::of(int device)
{
    launch_limits limits;
    limits.device = device;
    limits.max_threads_per_block = unsigned_attribute(cudaDevAttrMaxThreadsPerBlock, device);
    limits.max_block = {unsigned_attribute(cudaDevAttrMaxBlockDimX, device),
                        unsigned_attribute(cudaDevAttrMaxBlockDimY, device),
                        unsigned_attribute(cudaDevAttrMaxBlockDimZ, device)};
    limits.max_grid = {unsigned_attribute(cudaDevAttrMaxGridDimX, device),
                       unsigned_attribute(cudaDevAttrMaxGridDimY, device),
                       unsigned_attribute(cudaDevAttrMaxGridDimZ, device)};
    limits.shared_bytes_per_block =
        static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlock, device));
    limits.shared_bytes_per_block_optin =
        static_cast<std::size_t>(attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    return limits;
}

void check(const launch_config& config, const launch_limits& limits)
{
    check_extent("block", 'x', config.block.x, limits.max_block.x, limits);
    check_extent("block", 'y', config.block.y, limits.max_block.y, limits);
    check_extent("block", 'z', config.block.z, limits.max_block.z, limits);
    GPU_EXPECTS(config.block.volume() <= limits.max_threads_per_block, std::invalid_argument,
                "gpu::launch: a block of ", config.block.to_string(), " is ", config.block.volume(),
                " threads but device ", limits.device, " allows at most ",
                limits.max_threads_per_block, " per block: use smaller blocks and more of them");
    check_extent("grid", 'x', config.grid.x, limits.max_grid.x, limits);
    check_extent("grid", 'y', config.grid.y, limits.max_grid.y, limits);
    check_extent("grid", 'z', config.grid.z, limits.max_grid.z, limits);
    GPU_EXPECTS(config.dynamic_shared_bytes <= limits.shared_bytes_per_block_optin,
                std::invalid_argument, "gpu::launch: ", config.dynamic_shared_bytes,
                " B of dynamic shared memory per block, but device ", limits.device,
                " gives a block at most ", limits.shared_bytes_per_block_optin,
                " B (opt-in included): tile the work so that each block needs less");
}

namespace detail {
namespace {
/// Each device's limits, read at its first launch and kept: they never change.
const launch_limits& cached_limits(int device)
{
    struct slot {
        std::once_flag read;
        launch_limits limits;
    };
    static std::array<slot, memory_ledger::max_devices> slots;
    GPU_EXPECTS(device >= 0 && device < memory_ledger::max_devices, std::invalid_argument,
                "gpu::launch: device ", device, " is outside the ", memory_ledger::max_devices,
                " devices cudagap counts");
    slot& entry = slots[static_cast<std::size_t>(device)];
    std::call_once(entry.read, [&] { entry.limits = launch_limits::of(device); });
    return entry.limits;
}

/// What the kernel itself allows, for the message of a refused launch.
std::string kernel_limits_text(const void* kernel, const launch_config& config)
{
    cudaFuncAttributes attributes{};
    std::string text = "launch of " + config.to_string();
    if (cudaFuncGetAttributes(&attributes, kernel) != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        return text + "; the kernel's attributes could not be read (is it a __global__ function "
                      "of a module built for this GPU?)";
    }
    return text + "; the kernel allows at most " + std::to_string(attributes.maxThreadsPerBlock) +
           " threads per block (" + std::to_string(attributes.numRegs) +
           " registers per thread), " + std::to_string(attributes.maxDynamicSharedSizeBytes) +
           " B of dynamic shared memory (raise it with gpu::allow_dynamic_shared_memory) beside " +
           std::to_string(attributes.sharedSizeBytes) + " B static";
}
} // namespace

void launch_kernel(stream_ref stream, const launch_config& config, const void* kernel,
                   void** arguments)
{
    // The stream's device, by the one rule every cudagap object follows (stream_ref::device()):
    // the limits are that device's, whatever device is current.
    check(config, cached_limits(stream.device().id()));
    const cudaError_t status =
        cudaLaunchKernel(kernel, dim3(config.grid.x, config.grid.y, config.grid.z),
                         dim3(config.block.x, config.block.y, config.block.z), arguments,
                         config.dynamic_shared_bytes, stream.get());
    if (status != cudaSuccess) [[unlikely]] {
        // The request goes into the failing call's name, as gpu::stream's errors do: the hint
        // of a CUDA status says what the status means, this says what was asked.
        const std::string api =
            "gpu::launch (" + kernel_limits_text(kernel, config) + "): cudaLaunchKernel";
        throw_error(status, api.c_str(), std::source_location::current());
    }
}
} // namespace detail

} // namespace gpu
