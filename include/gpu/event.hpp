/// @file event.hpp
/// @brief CUDA events: the non-owning `event_ref`, the owning `event`, and elapsed time.
#pragma once

#include <gpu/detail/expects.hpp>
#include <gpu/detail/unique_handle.hpp>
#include <gpu/error.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <stdexcept>

namespace gpu {

/// @brief Milliseconds as a float, the resolution CUDA events measure in (about 0.5 µs).
using event_duration = std::chrono::duration<float, std::milli>;

/// @brief A non-owning reference to a CUDA event; cheap to copy.
class event_ref {
public:
    /// @brief Refers to no event.
    constexpr event_ref() noexcept = default;

    /// @brief Refers to an event created elsewhere.
    constexpr explicit event_ref(cudaEvent_t handle) noexcept : handle_(handle) {}

    /// @brief The raw handle.
    [[nodiscard]] constexpr cudaEvent_t get() const noexcept { return handle_; }

    /// @brief Captures the work queued on @p stream so far; the event completes after it.
    void record(stream_ref stream = {}) const { GPU_CUDA_CHECK(cudaEventRecord(handle_, stream.get())); }

    /// @brief Blocks until the event has completed.
    void synchronize() const { GPU_CUDA_CHECK(cudaEventSynchronize(handle_)); }

    /// @brief Whether the event has completed; does not block.
    [[nodiscard]] bool is_ready() const
    {
        const cudaError_t status = cudaEventQuery(handle_);
        if (status == cudaErrorNotReady) {
            return false;
        }
        GPU_CUDA_CHECK(status);
        return true;
    }

    /// @brief References are equal when they name the same event.
    friend constexpr bool operator==(event_ref, event_ref) noexcept = default;

private:
    cudaEvent_t handle_ = nullptr;
};

/// @brief Options of a new event; combine with `|`.
enum class event_flags : unsigned {
    timing = cudaEventDefault,                ///< records timestamps (the default)
    blocking_sync = cudaEventBlockingSync,    ///< `synchronize()` sleeps instead of spinning
    disable_timing = cudaEventDisableTiming,  ///< no timestamps: cheaper, for synchronisation only
};

/// @brief Combines event flags.
[[nodiscard]] constexpr event_flags operator|(event_flags a, event_flags b) noexcept
{
    return static_cast<event_flags>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}

namespace detail {
/// @brief Destroys a CUDA event; failures are reported, never thrown.
struct event_deleter {
    void operator()(cudaEvent_t handle) const noexcept
    {
        detail::report_destroy_failure("cudaEventDestroy", cudaEventDestroy(handle));
    }
};
} // namespace detail

/// @brief An owning CUDA event. Move-only.
class event {
public:
    /// @brief Creates an event on the current device.
    /// @throws gpu::cuda_error when CUDA is unavailable
    explicit event(event_flags flags = event_flags::timing)
    {
        cudaEvent_t handle = nullptr;
        GPU_CUDA_CHECK(cudaEventCreateWithFlags(&handle, static_cast<unsigned>(flags)));
        handle_.reset(handle);
    }

    /// @brief Adopts an event created elsewhere; it will be destroyed with this object.
    [[nodiscard]] static event from_native_handle(cudaEvent_t handle) noexcept
    {
        return event(adopt, handle);
    }

    /// @brief A non-owning reference.
    /// @throws std::logic_error on an event that holds none (moved from or released), whose
    /// null handle would otherwise reach CUDA
    [[nodiscard]] event_ref ref() const
    {
        GPU_EXPECTS(handle_, std::logic_error,
                    "gpu::event: used after it was moved from or released (it holds no event)");
        return event_ref(handle_.get());
    }

    /// @brief Same as `ref()`, so that an `event` can be passed where an `event_ref` is taken.
    operator event_ref() const { return ref(); } // NOLINT(google-explicit-constructor)

    /// @brief The raw handle, still owned (null after a move).
    [[nodiscard]] cudaEvent_t get() const noexcept { return handle_.get(); }

    /// @brief Gives up ownership; the caller must destroy the event.
    /// @post this object is in the moved-from state.
    [[nodiscard]] cudaEvent_t release() noexcept { return handle_.release(); }

    /// @brief Captures the work queued on @p stream so far.
    void record(stream_ref stream = {}) const { ref().record(stream); }
    /// @brief Blocks until the event has completed.
    void synchronize() const { ref().synchronize(); }
    /// @brief Whether the event has completed; does not block.
    [[nodiscard]] bool is_ready() const { return ref().is_ready(); }

    /// @brief Moving leaves the source without an event.
    /// @post `other.get() == nullptr`
    event(event&& other) noexcept = default;
    /// @brief Destroys the owned event and takes @p other's.
    /// @post `other.get() == nullptr`
    event& operator=(event&& other) noexcept = default;
    event(const event&) = delete;
    event& operator=(const event&) = delete;
    /// @brief Destroys the event.
    ~event() = default;

private:
    struct adopt_tag {};
    static constexpr adopt_tag adopt{};
    event(adopt_tag, cudaEvent_t handle) noexcept : handle_(handle) {}

    detail::unique_handle<cudaEvent_t, detail::event_deleter> handle_;
};

/// @brief The time between two recorded timing events; waits for @p stop to complete.
/// @throws gpu::cuda_error when either event was created with `disable_timing` or not recorded
[[nodiscard]] inline event_duration elapsed(event_ref start, event_ref stop)
{
    GPU_CUDA_CHECK(cudaEventSynchronize(stop.get()));
    float milliseconds = 0.0F;
    GPU_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, start.get(), stop.get()));
    return event_duration(milliseconds);
}

} // namespace gpu
