/// @file resource_adaptors.hpp
/// @brief Adaptors: resources that allocate from another one (their upstream) and add one
/// thing: `statistics_adaptor` counts, `limiting_adaptor` refuses past a byte limit (a test can
/// provoke an out-of-memory error on purpose), `oom_retry_adaptor` frees cached memory and tries
/// once more when the upstream is out of memory (with `synchronize_and_trim`, what a device's
/// default resource does).
///
/// An adaptor holds its upstream by value: a concrete resource (the stack is one type, its calls
/// inlined) or a `gpu::resource_ref` to one it does not own. It has the properties its upstream
/// has. The counting adaptors hold counters, so they are neither copied nor moved, and are
/// equal only to themselves; build a stack inside out, by reference, or in place:
///
/// @code
/// gpu::pool_resource pool(dev);
/// gpu::limiting_adaptor<gpu::pool_resource> limited(pool, std::size_t{1} << 30);  // 1 GiB
/// gpu::statistics_adaptor<gpu::device_resource_ref> counted(limited);
/// @endcode
#pragma once

#include <gpu/allocation_stats.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/memory_pool.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/stream.hpp>

#include <atomic>
#include <concepts>
#include <cstddef>
#include <string_view>
#include <utility>

namespace gpu {

/// @brief Counts what goes through it: current and peak bytes, live and total allocations (as
/// `gpu::allocation_stats`). Thread-safe; a 0-byte allocation is not counted.
/// @tparam Upstream the resource that allocates
template <memory_resource Upstream>
class statistics_adaptor {
public:
    /// @brief Counts the allocations of @p upstream.
    explicit statistics_adaptor(Upstream upstream) : upstream_(std::move(upstream)) {}
    /// @brief Makes the upstream in place from @p args.
    template <class... Args>
    explicit statistics_adaptor(std::in_place_t, Args&&... args)
        : upstream_(std::forward<Args>(args)...)
    {}
    statistics_adaptor(const statistics_adaptor&) = delete;
    statistics_adaptor& operator=(const statistics_adaptor&) = delete;

    /// @brief Allocates from the upstream and counts it.
    [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                                 std::size_t alignment = default_alignment)
    {
        void* pointer = detail::allocate_with(upstream_, stream, bytes, alignment);
        if (pointer != nullptr) {
            const std::size_t now = current_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
            std::size_t peak = peak_.load(std::memory_order_relaxed);
            while (now > peak &&
                   !peak_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {}
            live_.fetch_add(1, std::memory_order_relaxed);
            total_.fetch_add(1, std::memory_order_relaxed);
        }
        return pointer;
    }

    /// @brief Frees through the upstream and stops counting it.
    void deallocate(stream_ref stream, void* pointer, std::size_t bytes,
                    std::size_t alignment = default_alignment) noexcept
    {
        detail::deallocate_with(upstream_, stream, pointer, bytes, alignment);
        if (pointer != nullptr) {
            current_.fetch_sub(bytes, std::memory_order_relaxed);
            live_.fetch_sub(1, std::memory_order_relaxed);
        }
    }

    /// @brief The counts now.
    [[nodiscard]] allocation_stats statistics() const noexcept
    {
        return {current_.load(std::memory_order_relaxed), peak_.load(std::memory_order_relaxed),
                live_.load(std::memory_order_relaxed), total_.load(std::memory_order_relaxed)};
    }

    /// @brief Restarts the peak from the current bytes.
    void reset_peak() noexcept
    {
        peak_.store(current_.load(std::memory_order_relaxed), std::memory_order_relaxed);
    }

    /// @brief The upstream.
    [[nodiscard]] Upstream& upstream() noexcept { return upstream_; }

    /// @brief Equal only to itself: its counts are its own.
    friend bool operator==(const statistics_adaptor& a, const statistics_adaptor& b) noexcept
    {
        return &a == &b;
    }

    /// @brief The upstream's properties.
    template <class P>
    requires has_property<Upstream, P>
    friend void get_property(const statistics_adaptor&, P) noexcept {}

private:
    Upstream upstream_;
    std::atomic<std::size_t> current_{0};
    std::atomic<std::size_t> peak_{0};
    std::atomic<std::size_t> live_{0};
    std::atomic<std::size_t> total_{0};
};

namespace detail {
/// @brief Throws the `gpu::out_of_memory` of a `limiting_adaptor` whose @p limit_bytes cannot
/// take @p requested_bytes more than the @p used_bytes it has handed out.
[[noreturn]] void throw_limit_reached(std::size_t requested_bytes, std::size_t used_bytes,
                                      std::size_t limit_bytes, int device);
} // namespace detail

/// @brief Refuses an allocation that would take what it handed out past a byte limit, with a
/// `gpu::out_of_memory` (the same error the device gives when it is full), so that a test can
/// provoke an out-of-memory error where it wants one. Counts the bytes asked for; what the
/// upstream rounds up is not counted. Thread-safe.
/// @tparam Upstream the resource that allocates
template <memory_resource Upstream>
class limiting_adaptor {
public:
    /// @brief Allocates from @p upstream up to @p limit_bytes in total; an error names
    /// @p device (-1: none, and no device is read for the message).
    limiting_adaptor(Upstream upstream, std::size_t limit_bytes, int device = -1)
        : upstream_(std::move(upstream)), limit_(limit_bytes), device_(device)
    {}
    limiting_adaptor(const limiting_adaptor&) = delete;
    limiting_adaptor& operator=(const limiting_adaptor&) = delete;

    /// @brief Allocates from the upstream when the limit allows.
    /// @throws gpu::out_of_memory when @p bytes do not fit under the limit (the requested bytes,
    /// the bytes left under the limit as free and the limit as total), or what the upstream
    /// throws
    [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                                 std::size_t alignment = default_alignment)
    {
        std::size_t used = used_.load(std::memory_order_relaxed);
        do {
            if (bytes > limit_ - used) {
                detail::throw_limit_reached(bytes, used, limit_, device_);
            }
        } while (!used_.compare_exchange_weak(used, used + bytes, std::memory_order_relaxed));
        try {
            return detail::allocate_with(upstream_, stream, bytes, alignment);
        } catch (...) {
            used_.fetch_sub(bytes, std::memory_order_relaxed);
            throw;
        }
    }

    /// @brief Frees through the upstream and gives the bytes back to the limit.
    void deallocate(stream_ref stream, void* pointer, std::size_t bytes,
                    std::size_t alignment = default_alignment) noexcept
    {
        detail::deallocate_with(upstream_, stream, pointer, bytes, alignment);
        if (pointer != nullptr) {
            used_.fetch_sub(bytes, std::memory_order_relaxed);
        }
    }

    /// @brief The bytes handed out now.
    [[nodiscard]] std::size_t allocated_bytes() const noexcept
    {
        return used_.load(std::memory_order_relaxed);
    }
    /// @brief The limit.
    [[nodiscard]] std::size_t limit_bytes() const noexcept { return limit_; }
    /// @brief The upstream.
    [[nodiscard]] Upstream& upstream() noexcept { return upstream_; }

    /// @brief Equal only to itself: its count is its own.
    friend bool operator==(const limiting_adaptor& a, const limiting_adaptor& b) noexcept
    {
        return &a == &b;
    }

    /// @brief The upstream's properties.
    template <class P>
    requires has_property<Upstream, P>
    friend void get_property(const limiting_adaptor&, P) noexcept {}

private:
    Upstream upstream_;
    std::size_t limit_;
    int device_;
    std::atomic<std::size_t> used_{0};
};

/// @brief What `oom_retry_adaptor` does between the failed allocation and the retry, as a
/// device's default resource has it: unless @p stream is being captured into a graph (waiting
/// would invalidate the capture), wait for the device (frees queued on other streams return
/// their blocks to the pool only when they complete) and give the pool's unused memory back to
/// the device (`cudaMemPoolTrimTo(pool, 0)`: a cached block of the wrong size cannot serve the
/// request). The synchronisation is what this costs, once per allocation that failed.
class synchronize_and_trim {
public:
    /// @brief Waits for @p dev and trims its current pool.
    explicit synchronize_and_trim(gpu::device dev) noexcept : device_(dev) {}
    /// @brief Waits for @p dev and trims @p pool.
    synchronize_and_trim(gpu::device dev, memory_pool pool) noexcept
        : device_(dev), pool_(pool.get())
    {}
    /// @brief Waits for @p upstream's device and trims its pool.
    template <class R>
    requires requires(const R& r)
    {
        {
            r.device()
            } -> std::convertible_to<gpu::device>;
        r.pool();
    }
    explicit synchronize_and_trim(const R& upstream) noexcept
        : device_(upstream.device()), pool_(upstream.pool() ? upstream.pool()->get() : nullptr)
    {}

    /// @brief Does it; returns whether a retry can succeed (false during a capture, or when a
    /// step failed, whose error is cleared).
    /// @throws gpu::cuda_error when the wait finds the context broken (a sticky error: the
    /// process must restart, which no retry or smaller batch fixes)
    bool operator()(stream_ref stream) const;

    /// @brief What it did, for the error of a retry that failed too.
    [[nodiscard]] static constexpr std::string_view description() noexcept
    {
        return "cudaDeviceSynchronize and cudaMemPoolTrimTo(pool, 0)";
    }

private:
    gpu::device device_;
    cudaMemPool_t pool_ = nullptr;
};

namespace detail {
/// @brief Throws @p failed again, its API text saying that the allocation was retried after
/// @p how (its numbers were read after the retry).
[[noreturn]] void throw_after_retry(const out_of_memory& failed, std::string_view how);
} // namespace detail

/// @brief The out-of-memory retry, as an explicit choice: when the upstream throws
/// `gpu::out_of_memory`, run @p Reclaim (free cached memory), and, when it says a retry can
/// succeed, allocate once more. A second failure throws the second error, which says that it
/// was retried. Other errors pass through untouched.
///
/// So that "out of memory" means out of memory: a stream-ordered pool fails while frees queued
/// on other streams have not yet returned their blocks, or while it caches memory in blocks that
/// cannot serve this request. PyTorch's caching allocator and RMM do the same (free the cache,
/// retry once). The cost is `Reclaim`'s, on the failure path only: with `synchronize_and_trim`,
/// a device synchronisation.
/// @tparam Upstream the resource that allocates
/// @tparam Reclaim a callable `bool(stream_ref)` (true: retry) with a `description()`
template <memory_resource Upstream, class Reclaim = synchronize_and_trim>
class oom_retry_adaptor {
public:
    /// @brief Retries @p upstream's failures after @p reclaim.
    oom_retry_adaptor(Upstream upstream, Reclaim reclaim)
        : upstream_(std::move(upstream)), reclaim_(std::move(reclaim))
    {}
    /// @brief Retries @p upstream's failures after a `Reclaim` made from it
    /// (`synchronize_and_trim` of a `pool_resource`: its device and pool).
    explicit oom_retry_adaptor(
        Upstream upstream) requires std::constructible_from<Reclaim, const Upstream&>
        : upstream_(std::move(upstream)), reclaim_(upstream_)
    {}

    /// @brief Allocates from the upstream, once more after `Reclaim` if it is out of memory.
    /// @throws gpu::out_of_memory when the retry fails too, or when `Reclaim` says not to retry
    /// (then the first error); what the upstream or `Reclaim` throw otherwise
    [[nodiscard]] void* allocate(stream_ref stream, std::size_t bytes,
                                 std::size_t alignment = default_alignment)
    {
        try {
            return detail::allocate_with(upstream_, stream, bytes, alignment);
        } catch (const out_of_memory&) {
            if (!reclaim_(stream)) {
                throw;
            }
        }
        try {
            return detail::allocate_with(upstream_, stream, bytes, alignment);
        } catch (const out_of_memory& again) {
            detail::throw_after_retry(again, reclaim_.description());
        }
    }

    /// @brief Frees through the upstream.
    void deallocate(stream_ref stream, void* pointer, std::size_t bytes,
                    std::size_t alignment = default_alignment) noexcept
    {
        detail::deallocate_with(upstream_, stream, pointer, bytes, alignment);
    }

    /// @brief The upstream.
    [[nodiscard]] Upstream& upstream() noexcept { return upstream_; }
    /// @brief What it runs before a retry.
    [[nodiscard]] const Reclaim& reclaim() const noexcept { return reclaim_; }

    /// @brief Equal when the upstreams are: the retry frees nothing itself.
    friend bool operator==(const oom_retry_adaptor& a, const oom_retry_adaptor& b)
    {
        return a.upstream_ == b.upstream_;
    }

    /// @brief The upstream's properties.
    template <class P>
    requires has_property<Upstream, P>
    friend void get_property(const oom_retry_adaptor&, P) noexcept {}

private:
    Upstream upstream_;
    Reclaim reclaim_;
};

} // namespace gpu
