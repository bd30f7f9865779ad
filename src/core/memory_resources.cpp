// cudagap's memory resources over the CUDA runtime, the errors every resource shares, and the
// devices' default resources.
#include <gpu/detail/allocation.hpp>
#include <gpu/error.hpp>
#include <gpu/ledger_resource.hpp>
#include <gpu/memory_resources.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/resource_adaptors.hpp>

#include <array>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <string>

namespace gpu {

namespace detail {

void throw_bad_alignment(const char* who, std::size_t alignment, std::size_t most)
{
    throw std::invalid_argument(
        std::string(who) + ": alignment " + std::to_string(alignment) +
        (alignment == 0 || (alignment & (alignment - 1)) != 0
             ? " is not a power of two"
             : " is more than the " + std::to_string(most) + " bytes this resource guarantees") +
        " (nothing was allocated)");
}

void throw_foreign_bad_alloc(const std::bad_alloc& failure, std::size_t bytes)
{
    throw out_of_memory(std::string("a memory resource's allocate (std::bad_alloc: ") +
                            failure.what() + ")",
                        bytes, 0, 0, -1, allocation_site_or(std::source_location::current()));
}

void throw_no_resource(std::size_t bytes)
{
    throw std::logic_error("gpu: " + std::to_string(bytes) +
                           " bytes asked of no resource (an empty or moved-from owner's): "
                           "give the owner a resource first");
}

void synchronize_before_free(stream_ref stream) noexcept
{
    report_destroy_failure("cudaStreamSynchronize (before a synchronous resource frees)",
                           cudaStreamSynchronize(stream.get()));
}

} // namespace detail

namespace {

constexpr std::size_t guaranteed_alignment = 256; // cudaMalloc's, cudaMallocAsync's, pinned's

// The source location an allocation error names: the innermost memory_tag_scope's (the caller
// of device_buffer), else the resource's own.
std::source_location site(std::source_location here = std::source_location::current()) noexcept
{
    return detail::allocation_site_or(here);
}

[[noreturn]] void allocation_failed(cudaError_t status, const char* api, std::size_t bytes)
{
    if (status == cudaErrorMemoryAllocation) {
        detail::throw_out_of_memory(api, bytes, site());
    }
    detail::throw_error(status, api, site());
}

} // namespace

void* pool_resource::allocate(stream_ref stream, std::size_t bytes, std::size_t alignment)
{
    detail::check_alignment("gpu::pool_resource::allocate", alignment, guaranteed_alignment);
    if (bytes == 0) {
        return nullptr;
    }
    const scoped_device on(device_);
    void* pointer = nullptr;
    if (pool_ == nullptr) {
        const cudaError_t status = cudaMallocAsync(&pointer, bytes, stream.get());
        if (status != cudaSuccess) {
            allocation_failed(status, "cudaMallocAsync(&pointer, bytes, stream)", bytes);
        }
    } else {
        const cudaError_t status = cudaMallocFromPoolAsync(&pointer, bytes, pool_, stream.get());
        if (status != cudaSuccess) {
            allocation_failed(status, "cudaMallocFromPoolAsync(&pointer, bytes, pool, stream)",
                              bytes);
        }
    }
    return pointer;
}

void pool_resource::deallocate(stream_ref stream, void* pointer, std::size_t, std::size_t) noexcept
{
    // The pointer and the stream both know their device: cudaFreeAsync needs no current one.
    if (pointer != nullptr) {
        detail::report_destroy_failure("cudaFreeAsync", cudaFreeAsync(pointer, stream.get()));
    }
}

void* device_malloc_resource::allocate(stream_ref, std::size_t bytes, std::size_t alignment)
{
    detail::check_alignment("gpu::device_malloc_resource::allocate", alignment,
                            guaranteed_alignment);
    if (bytes == 0) {
        return nullptr;
    }
    const scoped_device on(device_);
    void* pointer = nullptr;
    const cudaError_t status = cudaMalloc(&pointer, bytes);
    if (status != cudaSuccess) {
        allocation_failed(status, "cudaMalloc(&pointer, bytes)", bytes);
    }
    return pointer;
}

void device_malloc_resource::deallocate(stream_ref, void* pointer, std::size_t,
                                        std::size_t) noexcept
{
    if (pointer != nullptr) {
        detail::report_destroy_failure("cudaFree", cudaFree(pointer));
    }
}

void* pinned_host_resource::allocate(stream_ref, std::size_t bytes, std::size_t alignment)
{
    detail::check_alignment("gpu::pinned_host_resource::allocate", alignment, guaranteed_alignment);
    if (bytes == 0) {
        return nullptr;
    }
    void* pointer = nullptr;
    const cudaError_t status = cudaMallocHost(&pointer, bytes);
    if (status != cudaSuccess) {
        detail::throw_pinned_allocation_failure(status, "cudaMallocHost(&pointer, bytes)", bytes,
                                                site());
    }
    return pointer;
}

void pinned_host_resource::deallocate(stream_ref, void* pointer, std::size_t, std::size_t) noexcept
{
    if (pointer != nullptr) {
        detail::report_destroy_failure("cudaFreeHost", cudaFreeHost(pointer));
    }
}

namespace {

using pooled_stack = ledger_resource<oom_retry_adaptor<pool_resource>>;
using unpooled_stack = ledger_resource<device_malloc_resource>;

// Made once per device and never destroyed: buffers freed during exit may still reach it.
device_resource_ref make_default_stack(device dev, bool pooled)
{
    if (pooled) {
        return *new pooled_stack(oom_retry_adaptor<pool_resource>(pool_resource(dev)), dev);
    }
    return *new unpooled_stack(device_malloc_resource(dev), dev);
}

std::array<std::atomic<const device_resource_ref*>, memory_ledger::max_devices> default_stacks{};
// Whether each device's default stack is the pooled one; written before its slot is published.
std::array<bool, memory_ledger::max_devices> default_pooled{};
std::mutex default_stacks_mutex;

} // namespace

bool detail::is_default_pool_resource(device_resource_ref resource, int device) noexcept
{
    if (device < 0 || device >= memory_ledger::max_devices) {
        return false;
    }
    const device_resource_ref* made =
        default_stacks[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
    return made != nullptr && default_pooled[static_cast<std::size_t>(device)] && *made == resource;
}

host_resource_ref default_pinned_resource()
{
    // Made once, never destroyed (pinned buffers freed during exit may still reach it).
    static auto* const stack =
        new ledger_resource<pinned_host_resource>(pinned_host_resource(), memory_ledger::host);
    return *stack;
}

device_resource_ref default_device_resource(device dev)
{
    const int id = dev.id();
    if (id < 0 || id >= memory_ledger::max_devices) {
        throw std::invalid_argument("gpu::default_device_resource: device " + std::to_string(id) +
                                    " is beyond the " + std::to_string(memory_ledger::max_devices) +
                                    " devices cudagap keeps default resources for");
    }
    std::atomic<const device_resource_ref*>& slot = default_stacks[static_cast<std::size_t>(id)];
    if (const device_resource_ref* made = slot.load(std::memory_order_acquire)) {
        return *made;
    }
    const std::lock_guard lock(default_stacks_mutex);
    if (const device_resource_ref* made = slot.load(std::memory_order_acquire)) {
        return *made;
    }
    int pools = 0;
    GPU_CUDA_CHECK(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, id));
    const auto* made = new device_resource_ref(make_default_stack(dev, pools != 0));
    default_pooled[static_cast<std::size_t>(id)] = pools != 0;
    slot.store(made, std::memory_order_release);
    return *made;
}

} // namespace gpu
