// Device allocation: stream-ordered where the device has memory pools, counted, with
// out-of-memory errors that carry the numbers a user needs.
#include <gpu/allocation_stats.hpp>
#include <gpu/detail/allocation.hpp>
#include <gpu/memory_pool.hpp>

#include <array>
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

// Whether each device uses the pool: 0 unknown, 1 no, 2 yes, so that an allocation asks CUDA
// once per device. Nothing about the pool is changed here: its release threshold is the user's
// setting (gpu::memory_pool::set_release_threshold), CUDA's default until they set it.
constexpr int max_tracked_devices = 64;
std::array<std::atomic<int>, max_tracked_devices> pool_state{};

bool uses_pool(int device)
{
    if (device < 0 || device >= max_tracked_devices) {
        return false;
    }
    const int known = pool_state[static_cast<std::size_t>(device)].load(std::memory_order_acquire);
    if (known != 0) {
        return known == 2;
    }
    int supported = 0;
    GPU_CUDA_CHECK(cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device));
    // Two threads may both ask the first time; they store the same answer.
    pool_state[static_cast<std::size_t>(device)].store(supported != 0 ? 2 : 1,
                                                       std::memory_order_release);
    return supported != 0;
}

// A pooled allocation can fail while frees queued on other streams have not yet returned their
// blocks to the pool (the pool reuses a block across streams only once its free has completed),
// or while the pool caches memory in chunks that cannot serve this request (when its release
// threshold keeps memory, see gpu::memory_pool). Like RMM and PyTorch's caching allocator
// (which frees its cached blocks and retries), wait for the device once, give the pool's unused
// memory back to the device, and let the caller retry, so that "out of memory" means out of
// memory. Not while the stream is being captured into a graph: synchronising would invalidate
// the capture. Returns whether a retry makes sense; throws the error when the wait finds the
// context broken (a sticky error: the process must restart, which no smaller batch fixes).
bool release_cached_memory(stream_ref stream, int device)
{
    static_cast<void>(cudaGetLastError());
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(stream.get(), &capture) != cudaSuccess ||
        capture != cudaStreamCaptureStatusNone) {
        static_cast<void>(cudaGetLastError());
        return false;
    }
    // cudaMallocAsync takes from the current pool of the stream's device (the default pool
    // unless cudaDeviceSetMemPool chose another): @p device, which allocate made current.
    cudaMemPool_t pool = nullptr;
    // Frees queued with cudaFreeAsync count as outstanding for cudaMemPoolTrimTo until the host
    // has observed their completion, so synchronise first.
    const cudaError_t synced = cudaDeviceSynchronize();
    const bool ok = synced == cudaSuccess && cudaDeviceGetMemPool(&pool, device) == cudaSuccess &&
                    cudaMemPoolTrimTo(pool, 0) == cudaSuccess;
    if (gpu::is_sticky(synced)) {
        detail::throw_error(synced, "cudaDeviceSynchronize (before retrying an allocation)",
                            std::source_location::current());
    }
    if (!ok) {
        static_cast<void>(cudaGetLastError());
    }
    return ok;
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

allocation allocate(std::size_t bytes, stream_ref stream, std::source_location where)
{
    if (bytes == 0) {
        return {nullptr, 0, stream.get(), false, -1};
    }
    // The stream's device, not the current one: cudaMallocAsync allocates there whatever is
    // current, and the pool decision, the plain cudaMalloc and the retry must agree with it.
    int device = 0;
    check(cudaStreamGetDevice(stream.get(), &device), "cudaStreamGetDevice(stream, &device)",
          where);
    const scoped_device on(detail::device_from_cuda(device), std::nothrow);
    check(on.status(), "cudaSetDevice (to the stream's device, to allocate there)", where);
    const bool pooled = uses_pool(device);
    void* pointer = nullptr;
    cudaError_t status =
        pooled ? cudaMallocAsync(&pointer, bytes, stream.get()) : cudaMalloc(&pointer, bytes);
    const char* api =
        pooled ? "cudaMallocAsync(&pointer, bytes, stream)" : "cudaMalloc(&pointer, bytes)";
    if (status == cudaErrorMemoryAllocation && pooled && release_cached_memory(stream, device)) {
        api = "cudaMallocAsync(&pointer, bytes, stream), retried after cudaDeviceSynchronize and "
              "cudaMemPoolTrimTo(pool, 0)";
        status = cudaMallocAsync(&pointer, bytes, stream.get());
    }
    if (status == cudaErrorMemoryAllocation) {
        throw_out_of_memory(api, bytes, where);
    }
    check(status, api, where);
    count_allocation(bytes);
    return {pointer, bytes, stream.get(), pooled, device};
}

void deallocate(const allocation& block) noexcept
{
    if (block.pointer == nullptr) {
        return;
    }
    count_free(block.bytes);
    // On the device it came from, whatever the caller made current since.
    const scoped_device on(detail::device_from_cuda(block.device), std::nothrow);
    if (block.pooled) {
        report_destroy_failure("cudaFreeAsync", cudaFreeAsync(block.pointer, block.stream));
    } else {
        report_destroy_failure("cudaFree", cudaFree(block.pointer));
    }
}

void forget_allocation(const allocation& block) noexcept
{
    if (block.pointer != nullptr) {
        count_free(block.bytes);
    }
}

void* allocate_pinned(std::size_t bytes, std::source_location where)
{
    void* pointer = nullptr;
    const char* api = "cudaMallocHost(&pointer, bytes)";
    const cudaError_t status = cudaMallocHost(&pointer, bytes);
    if (status != cudaSuccess) {
        throw_pinned_allocation_failure(status, api, bytes, where);
    }
    return pointer;
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
