// Device allocation: through a memory resource (the device's default unless told otherwise),
// tagged for the ledger, counted, with out-of-memory errors that carry the numbers a user needs.
#include <gpu/allocation_stats.hpp>
#include <gpu/detail/allocation.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_pool.hpp>
#include <gpu/memory_resources.hpp>

#include <atomic>
#include <stdexcept>
#include <string>

namespace gpu {

namespace {

std::atomic<std::size_t> current_bytes{0};
std::atomic<std::size_t> peak_bytes{0};
std::atomic<std::size_t> live_allocations{0};
std::atomic<std::size_t> total_allocations{0};

void count_allocation(std::size_t bytes) noexcept
{
    const std::size_t now = current_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
    std::size_t peak = peak_bytes.load(std::memory_order_relaxed);
    while (now > peak && !peak_bytes.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {}
    live_allocations.fetch_add(1, std::memory_order_relaxed);
    total_allocations.fetch_add(1, std::memory_order_relaxed);
}

void count_free(std::size_t bytes) noexcept
{
    current_bytes.fetch_sub(bytes, std::memory_order_relaxed);
    live_allocations.fetch_sub(1, std::memory_order_relaxed);
}

} // namespace

allocation_stats allocation_statistics() noexcept
{
    return {current_bytes.load(std::memory_order_relaxed),
            peak_bytes.load(std::memory_order_relaxed),
            live_allocations.load(std::memory_order_relaxed),
            total_allocations.load(std::memory_order_relaxed)};
}

void reset_peak_allocation() noexcept
{
    peak_bytes.store(current_bytes.load(std::memory_order_relaxed), std::memory_order_relaxed);
}

namespace {
bool supports_pools(device dev)
{
    int supported = 0;
    GPU_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, dev.id()));
    return supported != 0;
}
} // namespace

pool_info memory_pool_info(device dev)
{
    return supports_pools(dev) ? memory_pool::device_default(dev).info() : pool_info{};
}

void trim_memory_pool(device dev, std::size_t keep_bytes)
{
    if (!supports_pools(dev)) {
        return;
    }
    // Frees queued with cudaFreeAsync return to the pool only when the stream reaches them.
    // Both calls run on dev (scoped_device inside each) and leave the caller's device current.
    dev.synchronize();
    memory_pool::device_default(dev).trim_to(keep_bytes);
}

namespace detail {

allocation allocate(std::size_t bytes, stream_ref stream,
                    std::optional<device_resource_ref> resource, std::optional<memory_tag> tag,
                    std::source_location where)
{
    if (bytes == 0) {
        return {nullptr, 0, stream.get(), resource.value_or(no_resource()), -1};
    }
    // The stream's device, not the current one: cudaMallocAsync allocates there whatever is
    // current, and the default resource, the ledger's row and the free must agree with it.
    const gpu::device dev = stream.device();
    const scoped_device on(dev, std::nothrow);
    check(on.status(), "cudaSetDevice (to the stream's device, to allocate there)", where);
    const device_resource_ref from = resource ? *resource : default_device_resource(dev);
    // The ledger records the scope's tag, and a resource's error names the scope's location.
    const memory_tag_scope scope(tag ? *tag : current_memory_tag(), where);
    void* pointer = from.allocate(stream, bytes);
    count_allocation(bytes);
    return {pointer, bytes, stream.get(), from, dev.id()};
}

bool from_default_pool(const allocation& block) noexcept
{
    // No CUDA call: this is asked inside stream captures too.
    return block.pointer != nullptr && is_default_pool_resource(block.resource, block.device);
}

void deallocate(const allocation& block) noexcept
{
    if (block.pointer == nullptr) {
        return;
    }
    count_free(block.bytes);
    // On the device it came from, whatever the caller made current since.
    const scoped_device on(device_from_cuda(block.device), std::nothrow);
    block.resource.deallocate(stream_ref(block.stream), block.pointer, block.bytes);
}

void forget_allocation(const allocation& block) noexcept
{
    if (block.pointer != nullptr) {
        count_free(block.bytes);
        // The ledger stops counting it too; a resource that records elsewhere (or nowhere) has
        // no entry in the process's ledger, and forgetting finds nothing there.
        static_cast<void>(memory_ledger::global().forget(block.device, block.pointer));
    }
}

void* allocate_pinned(std::size_t bytes, host_resource_ref resource, std::source_location where)
{
    if (bytes == 0) {
        return nullptr;
    }
    const memory_tag_scope scope(current_memory_tag(), where);
    // Pinned memory is not stream-ordered: the stream is ignored.
    return resource.allocate(legacy_default_stream, bytes);
}

void throw_pinned_allocation_failure(cudaError_t status, const char* api,
                                     std::size_t requested_bytes, std::source_location where)
{
    if (status != cudaErrorMemoryAllocation) {
        throw_error(status, api, where);
    }
    // The generic path would throw out_of_memory with the device's free and total bytes, which
    // say nothing about why the host could not lock its own memory.
    static_cast<void>(cudaGetLastError());
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        device = -1;
    }
    throw cuda_error(status, api,
                     "could not page-lock " + format_bytes(requested_bytes) +
                         " of host memory (pinned memory cannot be swapped out, so it must fit "
                         "in the host's free RAM; a container's memory limit counts too): pin "
                         "less at once, free other pinned buffers, or use pageable memory "
                         "(std::vector) for copies that need not overlap with computation",
                     device, where);
}

void throw_size_mismatch(const char* operation, std::size_t buffer_elements,
                         std::size_t other_elements)
{
    throw std::invalid_argument(std::string(operation) + ": size mismatch: the device buffer has " +
                                std::to_string(buffer_elements) + " elements, the other side " +
                                std::to_string(other_elements) +
                                " (copies move whole buffers; nothing was copied)");
}

void throw_size_overflow(const char* operation, std::size_t elements, std::size_t element_size)
{
    throw std::invalid_argument(std::string(operation) + ": " + std::to_string(elements) +
                                " elements of " + std::to_string(element_size) +
                                " bytes overflow the size type");
}

} // namespace detail
} // namespace gpu
