/// @file memory_pool.hpp
/// @brief CUDA memory pools: `memory_pool` (a non-owning reference to a `cudaMemPool_t`), its
/// state (`pool_info`) and trimming.
#pragma once

#include <gpu/device.hpp>
#include <gpu/error.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <limits>
#include <stdexcept>

namespace gpu {

/// @brief The state of a memory pool (by default the device's default pool, which
/// `device_buffer` allocates from).
struct pool_info {
    bool supported = false;              ///< the device supports memory pools
    std::size_t reserved_bytes = 0;      ///< device memory the pool holds (what nvidia-smi counts)
    std::size_t used_bytes = 0;          ///< of which handed out to live allocations
    std::size_t reserved_peak_bytes = 0; ///< high-water mark of `reserved_bytes`
    std::size_t release_threshold_bytes = 0; ///< the pool keeps up to this much when idle

    /// @brief Memory the pool holds but nobody uses: what `trim_memory_pool` gives back.
    [[nodiscard]] constexpr std::size_t cached_bytes() const noexcept
    {
        return reserved_bytes - used_bytes;
    }
};

/// @brief A non-owning reference to a CUDA memory pool (`cudaMemPool_t`): its release
/// threshold, its counters, and trimming. Cheap to copy; the pool belongs to its device.
///
/// `device_buffer` allocates with `cudaMallocAsync`, which draws from the *current* pool of the
/// stream's device (`current(dev)`; the device's default pool unless `cudaDeviceSetMemPool` chose
/// another). A freed block goes back to the pool, not to the driver; what the pool then does
/// with its unused memory is this setting, which cudagap never changes behind your back:
///
/// - **release threshold** (`set_release_threshold`): at every synchronisation (of a stream, an
///   event or the device) the pool returns to the driver whatever unused memory it holds above
///   this many bytes. CUDA's default for a device's default pool is 0: memory freed before a
///   synchronisation is returned at it, so other processes (and `nvidia-smi`) see it free
///   again, but the next allocation of that size maps fresh memory from the driver, which costs
///   about what `cudaMalloc` costs. `keep_all` keeps everything until you trim: allocations
///   after the first are a few microseconds (what bench/alloc measures), at the price of memory
///   that stays reserved by this process.
/// - **trimming** (`trim_to`, or `trim_memory_pool`, which synchronises first): returns unused
///   memory now, down to a given amount. cudagap trims on its own in one place only: the
///   device's default resource (`default_device_resource`, what `device_buffer` allocates from)
///   holds a `gpu::oom_retry_adaptor`, so an allocation that fails waits for the device, trims
///   the pool to 0 and retries once, so that "out of memory" means out of memory.
///
/// PyTorch's caching allocator is `keep_all` with no knob: it caches every freed block in the
/// process and gives memory back only on `torch.cuda.empty_cache()` or when a `cudaMalloc`
/// fails (it then frees cached blocks and retries). Set `keep_all` for the same behaviour, e.g.
/// for a training loop that allocates and frees the same sizes at every step, and leave the
/// default where the GPU is shared and memory should go back between phases.
///
/// @code
/// gpu::memory_pool pool = gpu::memory_pool::current(gpu::current_device());
/// pool.set_release_threshold(gpu::memory_pool::keep_all);   // cache like PyTorch
/// // ... allocate and free ...
/// std::printf("%zu bytes cached\n", pool.reserved_bytes() - pool.used_bytes());
/// @endcode
class memory_pool {
public:
    /// @brief A release threshold that keeps every freed byte in the pool until it is trimmed.
    static constexpr std::size_t keep_all = std::numeric_limits<std::size_t>::max();

    /// @brief Refers to a pool created elsewhere (`cudaMemPoolCreate`, a library's pool) whose
    /// device is not known here (CUDA cannot say a pool's device): `device()` refuses, and
    /// `trim_to` runs on the current device. Prefer the constructor that names the device.
    /// @throws std::invalid_argument when @p pool is null
    explicit memory_pool(cudaMemPool_t pool) : handle_(pool)
    {
        if (pool == nullptr) {
            throw std::invalid_argument("gpu::memory_pool: a null cudaMemPool_t names no pool");
        }
    }

    /// @brief Refers to a pool of @p dev created elsewhere; records @p dev.
    /// @throws std::invalid_argument when @p pool is null
    memory_pool(cudaMemPool_t pool, gpu::device dev) : memory_pool(pool) { device_ = dev.id(); }

    /// @brief The device whose memory the pool holds.
    /// @throws std::logic_error for a pool referred to without its device
    [[nodiscard]] gpu::device device() const
    {
        if (device_ < 0) {
            throw std::logic_error("gpu::memory_pool::device: this reference was made from a raw "
                                   "cudaMemPool_t without its device (CUDA cannot say a pool's "
                                   "device): make it with memory_pool(pool, device)");
        }
        return detail::device_from_cuda(device_);
    }

    /// @brief The pool `cudaMallocAsync`, and so `device_buffer`, draws from on @p dev
    /// (`cudaDeviceGetMemPool`).
    /// @throws gpu::cuda_error when CUDA is unavailable or @p dev has no memory pools
    /// (`device_properties::memory_pools_supported`)
    [[nodiscard]] static memory_pool current(gpu::device dev)
    {
        cudaMemPool_t pool = nullptr;
        GPU_CUDA_CHECK(cudaDeviceGetMemPool(&pool, dev.id()));
        return memory_pool(pool, dev);
    }

    /// @brief The device's default pool (`cudaDeviceGetDefaultMemPool`); the same as `current`
    /// unless `cudaDeviceSetMemPool` chose another.
    /// @throws gpu::cuda_error when CUDA is unavailable or @p dev has no memory pools
    [[nodiscard]] static memory_pool device_default(gpu::device dev)
    {
        cudaMemPool_t pool = nullptr;
        GPU_CUDA_CHECK(cudaDeviceGetDefaultMemPool(&pool, dev.id()));
        return memory_pool(pool, dev);
    }

    /// @brief The raw handle.
    [[nodiscard]] cudaMemPool_t get() const noexcept { return handle_; }

    /// @brief How much unused memory the pool keeps at a synchronisation (see the class).
    [[nodiscard]] std::size_t release_threshold() const
    {
        return attribute(cudaMemPoolAttrReleaseThreshold,
                         "cudaMemPoolGetAttribute(ReleaseThreshold)");
    }

    /// @brief Keeps up to @p bytes of unused memory at synchronisations, returning the rest to
    /// the driver; `keep_all` keeps everything (`cudaMemPoolSetAttribute(ReleaseThreshold)`).
    /// Affects every allocation from this pool in the process, from now on.
    void set_release_threshold(std::size_t bytes) const
    {
        std::uint64_t value = bytes;
        GPU_CUDA_CHECK(cudaMemPoolSetAttribute(handle_, cudaMemPoolAttrReleaseThreshold, &value));
    }

    /// @brief Returns unused memory to the driver until the pool holds at most @p keep_bytes
    /// (`cudaMemPoolTrimTo`). Blocks whose `cudaFreeAsync` the host has not yet seen complete
    /// still count as used: synchronise first, or call `trim_memory_pool`, which does. Runs
    /// with the pool's device current (when known), and restores the caller's.
    void trim_to(std::size_t keep_bytes) const
    {
        if (device_ < 0) {
            GPU_CUDA_CHECK(cudaMemPoolTrimTo(handle_, keep_bytes));
            return;
        }
        const scoped_device on(device());
        GPU_CUDA_CHECK(cudaMemPoolTrimTo(handle_, keep_bytes));
    }

    /// @brief Device memory the pool holds now, used or cached.
    [[nodiscard]] std::size_t reserved_bytes() const
    {
        return attribute(cudaMemPoolAttrReservedMemCurrent,
                         "cudaMemPoolGetAttribute(ReservedMemCurrent)");
    }

    /// @brief Of `reserved_bytes`, what live allocations use.
    [[nodiscard]] std::size_t used_bytes() const
    {
        return attribute(cudaMemPoolAttrUsedMemCurrent, "cudaMemPoolGetAttribute(UsedMemCurrent)");
    }

    /// @brief The high-water mark of `reserved_bytes`.
    [[nodiscard]] std::size_t reserved_peak_bytes() const
    {
        return attribute(cudaMemPoolAttrReservedMemHigh,
                         "cudaMemPoolGetAttribute(ReservedMemHigh)");
    }

    /// @brief The high-water mark of `used_bytes`.
    [[nodiscard]] std::size_t used_peak_bytes() const
    {
        return attribute(cudaMemPoolAttrUsedMemHigh, "cudaMemPoolGetAttribute(UsedMemHigh)");
    }

    /// @brief All counters and the threshold at once.
    [[nodiscard]] pool_info info() const
    {
        return {true, reserved_bytes(), used_bytes(), reserved_peak_bytes(), release_threshold()};
    }

    /// @brief References are equal when they name the same pool (a pool has one device).
    friend bool operator==(memory_pool a, memory_pool b) noexcept { return a.handle_ == b.handle_; }

private:
    [[nodiscard]] std::size_t attribute(cudaMemPoolAttr which, const char* api) const
    {
        std::uint64_t value = 0;
        detail::check(cudaMemPoolGetAttribute(handle_, which, &value), api,
                      std::source_location::current());
        return static_cast<std::size_t>(value);
    }

    cudaMemPool_t handle_;
    int device_ = -1; ///< -1: referred to without its device
};

/// @brief Reads the default memory pool of @p dev (`memory_pool::device_default(dev).info()`).
/// @return `supported == false` and zeros when the device has no memory pools
[[nodiscard]] pool_info memory_pool_info(device dev);

/// @brief Returns the unused memory of @p dev's default pool to the device, keeping at most
/// @p keep_bytes; synchronises the device first so that freed blocks are really free (the
/// `torch.cuda.empty_cache()` of cudagap). Does nothing on devices without memory pools.
void trim_memory_pool(device dev, std::size_t keep_bytes = 0);

} // namespace gpu
