/// @file event.hpp
/// @brief CUDA events: the non-owning `event_ref`, the owning `event`, and elapsed time.
#pragma once

#include <gpu/detail/expects.hpp>
#include <gpu/detail/unique_handle.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <chrono>
#include <stdexcept>
#include <string>

namespace gpu {

/// @brief Milliseconds as a float, the resolution CUDA events measure in (about 0.5 µs).
using event_duration = std::chrono::duration<float, std::milli>;

namespace detail {
/// @brief @p handle, or the `std::logic_error` for an `event_ref` that refers to no event
/// (CUDA would reject a null event only after the call was made, with a less clear error).
[[nodiscard]] inline cudaEvent_t checked_event(cudaEvent_t handle, const char* operation)
{
    if (handle == nullptr) {
        throw std::logic_error(std::string(operation) +
                               ": the gpu::event_ref refers to no event (default-constructed, "
                               "or made from a null handle)");
    }
    return handle;
}
} // namespace detail

/// @brief The operations every event type offers, written once for `event_ref` and `event`.
///
/// Both derive from it (CRTP) and give it their handle through `ref()`, as with
/// `stream_operations`: a moved-from `event` throws `std::logic_error` from `ref()` and from
/// every operation, and an `event_ref` to no event throws it from every operation; neither ever
/// passes a null handle to CUDA. Not used on its own.
/// @tparam Self `event_ref` or `event`
template <class Self>
class event_operations {
public:
    /// @brief Captures the work queued on @p stream so far; the event completes after it
    /// (`cudaEventRecord`). Recording is stream-ordered work: the stream is always named.
    ///
    /// CUDA records an event only on a stream of the event's own device. An `event` knows its
    /// device and refuses another device's stream before the call, naming both; an `event_ref`
    /// does not know it (CUDA cannot say), and CUDA's own error comes back instead.
    /// @throws std::logic_error on a moved-from `event` or an `event_ref` to no event
    /// @throws std::invalid_argument when an `event` of one device is recorded on a stream of
    /// another (both devices named)
    void record(stream_ref stream) const
    {
        const cudaEvent_t handle = native("gpu::event::record");
        const int own = static_cast<const Self&>(*this).known_device();
        if (own >= 0) {
            detail::require_same_device("gpu::event::record", "the event", own, "the stream",
                                        stream.device().id());
        }
        GPU_CUDA_CHECK(cudaEventRecord(handle, stream.get()));
    }

    /// @brief Blocks until the event has completed (`cudaEventSynchronize`).
    /// @throws std::logic_error on a moved-from `event` or an `event_ref` to no event
    void synchronize() const
    {
        const cudaEvent_t handle = native("gpu::event::synchronize");
        GPU_CUDA_CHECK(cudaEventSynchronize(handle));
    }

    /// @brief Whether the event has completed; does not block (`cudaEventQuery`).
    /// @throws std::logic_error on a moved-from `event` or an `event_ref` to no event
    [[nodiscard]] bool is_ready() const
    {
        const cudaError_t status = cudaEventQuery(native("gpu::event::is_ready"));
        if (status == cudaErrorNotReady) {
            // The runtime records "not ready" as the thread's last error, in place of any
            // earlier one; cleared, so that the next launch check (cudaGetLastError after a
            // kernel, synchronous_checks after a call) does not report it as a failure.
            static_cast<void>(cudaGetLastError());
            return false;
        }
        GPU_CUDA_CHECK(status);
        return true;
    }

protected:
    /// @brief Only as a base of `event_ref` and `event`.
    constexpr event_operations() noexcept = default;

private:
    [[nodiscard]] cudaEvent_t native(const char* operation) const
    {
        return detail::checked_event(static_cast<const Self&>(*this).ref().get(), operation);
    }
};

/// @brief A non-owning reference to a CUDA event; cheap to copy.
class event_ref : public event_operations<event_ref> {
public:
    /// @brief Refers to no event: every operation throws `std::logic_error` until one is assigned.
    constexpr event_ref() noexcept = default;

    /// @brief Refers to an event created elsewhere.
    constexpr explicit event_ref(cudaEvent_t handle) noexcept : handle_(handle) {}

    /// @brief The raw handle (null for an `event_ref` to no event).
    [[nodiscard]] constexpr cudaEvent_t get() const noexcept { return handle_; }

    /// @brief Itself (what `event_operations` and generic code ask every event type for).
    [[nodiscard]] constexpr event_ref ref() const noexcept { return *this; }

    /// @brief References are equal when they name the same event.
    friend constexpr bool operator==(event_ref a, event_ref b) noexcept
    {
        return a.handle_ == b.handle_;
    }

private:
    friend class event_operations<event_ref>;
    // A reference does not know its event's device, and CUDA has no query for it.
    [[nodiscard]] static constexpr int known_device() noexcept { return -1; }

    cudaEvent_t handle_ = nullptr;
};

/// @brief Options of a new event; combine with `|`.
enum class event_flags : unsigned {
    timing = cudaEventDefault,               ///< records timestamps (the default)
    blocking_sync = cudaEventBlockingSync,   ///< `synchronize()` sleeps instead of spinning
    disable_timing = cudaEventDisableTiming, ///< no timestamps: cheaper, for synchronisation only
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

/// @brief An owning CUDA event on the device it was made for, which it records. Move-only.
///
/// Every operation of `event_ref` works on it too (both derive from `event_operations`), and an
/// `event` converts to an `event_ref` wherever one is taken. Recording refuses a stream of
/// another device; synchronising, querying and being waited on by any device's stream work
/// whatever device is current (CUDA allows them across devices).
class event : public event_operations<event> {
public:
    /// @brief Creates an event on the current device (`cudaEventCreateWithFlags`), and records
    /// that device.
    /// @throws gpu::cuda_error when CUDA is unavailable
    explicit event(event_flags flags = event_flags::timing) : event(device::current(), flags) {}

    /// @brief Creates an event on @p dev, whatever device is current (made with @p dev current,
    /// and the caller's device restored).
    /// @throws gpu::cuda_error when CUDA is unavailable
    explicit event(gpu::device dev, event_flags flags = event_flags::timing) : device_(dev.id())
    {
        const scoped_device on(dev);
        cudaEvent_t handle = nullptr;
        GPU_CUDA_CHECK(cudaEventCreateWithFlags(&handle, static_cast<unsigned>(flags)));
        handle_.reset(handle);
    }

    /// @brief Adopts an event created elsewhere on @p dev; it will be destroyed with this object.
    /// (CUDA cannot say an event's device, so the caller does.)
    [[nodiscard]] static event from_native_handle(cudaEvent_t handle, gpu::device dev) noexcept
    {
        return event(adopt, handle, dev.id());
    }

    /// @brief Adopts an event created elsewhere on the current device (or a null handle, the
    /// moved-from state); it will be destroyed with this object.
    /// @throws gpu::cuda_error when @p handle is not null and CUDA is unavailable
    [[nodiscard]] static event from_native_handle(cudaEvent_t handle)
    {
        return event(adopt, handle, handle == nullptr ? -1 : device::current().id());
    }

    /// @brief The device the event was made on (recorded, no CUDA call).
    /// @throws std::logic_error on a moved-from or released event
    [[nodiscard]] gpu::device device() const
    {
        static_cast<void>(ref());
        return detail::device_from_cuda(device_);
    }

    /// @brief A non-owning reference.
    /// @throws std::logic_error on a moved-from or released event, like `stream::ref()` (a null
    /// `event_ref` would only fail later, inside CUDA)
    [[nodiscard]] event_ref ref() const
    {
        if (!handle_) {
            detail::throw_empty_owner("gpu::event", "gpu::event", "CUDA event");
        }
        return event_ref(handle_.get());
    }

    /// @brief Same as `ref()`, so that an `event` can be passed where an `event_ref` is taken.
    /// @throws std::logic_error on a moved-from or released event
    operator event_ref() const { return ref(); } // NOLINT(google-explicit-constructor)

    /// @brief The raw handle, still owned (null after a move).
    [[nodiscard]] cudaEvent_t get() const noexcept { return handle_.get(); }

    /// @brief Whether an event is owned (false after a move or `release`).
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

    /// @brief Gives up ownership; the caller must destroy the event.
    /// @post this object is in the moved-from state: `get() == nullptr`, and every operation
    /// throws `std::logic_error`.
    [[nodiscard]] cudaEvent_t release() noexcept { return handle_.release(); }

    /// @brief Moving leaves the source without an event.
    /// @post `other.get() == nullptr`; using `other` (`ref()`, `record()`, ...) throws
    /// `std::logic_error` until an event is assigned to it
    event(event&& other) noexcept = default;
    /// @brief Destroys the owned event and takes @p other's.
    /// @post `other.get() == nullptr`, as after the move constructor
    event& operator=(event&& other) noexcept = default;
    event(const event&) = delete;
    event& operator=(const event&) = delete;
    /// @brief Destroys the event.
    ~event() = default;

private:
    struct adopt_tag {};
    static constexpr adopt_tag adopt{};
    event(adopt_tag, cudaEvent_t handle, int device) noexcept : handle_(handle), device_(device) {}

    friend class event_operations<event>;
    [[nodiscard]] int known_device() const noexcept { return device_; }

    detail::unique_handle<cudaEvent_t, detail::event_deleter> handle_;
    int device_ = -1; ///< the device it was made on; a plain value, so moving copies it
};

/// @brief The time between two recorded timing events; waits for @p stop to complete.
/// @throws std::logic_error when either refers to no event
/// @throws gpu::cuda_error when either event was created with `disable_timing` or not recorded
[[nodiscard]] inline event_duration elapsed(event_ref start, event_ref stop)
{
    const cudaEvent_t from = detail::checked_event(start.get(), "gpu::elapsed (start)");
    const cudaEvent_t to = detail::checked_event(stop.get(), "gpu::elapsed (stop)");
    GPU_CUDA_CHECK(cudaEventSynchronize(to));
    float milliseconds = 0.0F;
    GPU_CUDA_CHECK(cudaEventElapsedTime(&milliseconds, from, to));
    return event_duration(milliseconds);
}

template <class Self>
void stream_operations<Self>::wait(event_ref event) const
{
    const cudaStream_t handle = native();
    const cudaEvent_t awaited = detail::checked_event(event.get(), "gpu::stream::wait");
    GPU_CUDA_CHECK(cudaStreamWaitEvent(handle, awaited, 0));
}

} // namespace gpu
