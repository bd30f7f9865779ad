/// @file stream.hpp
/// @brief CUDA streams: the non-owning `stream_ref` that functions take, and the owning `stream`.
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/host_function.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <optional>
#include <source_location>
#include <utility>

namespace gpu {

class event_ref;
class stream_ref;

/// @brief How a new stream synchronises with the legacy default stream.
///
/// `gpu::stream` defaults to `blocking`, CUDA's own default, where CCCL's `cuda::stream` makes
/// every stream non-blocking; docs/architecture.md ("Stream flags") says why.
enum class stream_flags : unsigned {
    blocking = cudaStreamDefault,         ///< waits for and is waited on by the default stream
    non_blocking = cudaStreamNonBlocking, ///< runs concurrently with the default stream
};

/// @brief The operations every stream type offers, written once for `stream_ref` and `stream`.
///
/// Both derive from it (CRTP) and give it their handle through `ref()`: a `stream_ref` is its
/// own reference, a `stream` checks that it still owns a stream first. So each operation exists
/// once, and a moved-from `stream` throws `std::logic_error` from every one of them instead of
/// passing a null handle, which CUDA would read as the legacy default stream. (CCCL derives its
/// `cuda::stream` from `cuda::stream_ref` and marks a moved-from stream with an invalid-handle
/// sentinel; here null already means the default stream, hence the check through `ref()`.)
/// Not used on its own.
/// @tparam Self `stream_ref` or `stream`
template <class Self>
class stream_operations {
public:
    /// @brief Blocks until all work queued on the stream has finished.
    /// @throws std::logic_error on a moved-from or released `stream`
    void synchronize() const
    {
        const cudaStream_t handle = native();
        GPU_CUDA_CHECK(cudaStreamSynchronize(handle));
    }

    /// @brief Whether all work queued on the stream has finished; does not block.
    /// @throws std::logic_error on a moved-from or released `stream`
    [[nodiscard]] bool is_ready() const
    {
        const cudaError_t status = cudaStreamQuery(native());
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

    /// @brief Makes later work on this stream wait until @p event has completed
    /// (`cudaStreamWaitEvent`; defined in `<gpu/event.hpp>`, which any caller holding an
    /// `event_ref` has included).
    /// @throws std::logic_error on a moved-from `stream` or an `event_ref` to no event
    void wait(event_ref event) const;

    /// @brief The stream's priority (`cudaStreamGetPriority`).
    /// @throws std::logic_error on a moved-from or released `stream`
    [[nodiscard]] int priority() const
    {
        int value = 0;
        const cudaStream_t handle = native();
        GPU_CUDA_CHECK(cudaStreamGetPriority(handle, &value));
        return value;
    }

    /// @brief The flags the stream was created with (`cudaStreamGetFlags`).
    /// @throws std::logic_error on a moved-from or released `stream`
    [[nodiscard]] stream_flags flags() const
    {
        unsigned value = 0;
        const cudaStream_t handle = native();
        GPU_CUDA_CHECK(cudaStreamGetFlags(handle, &value));
        return static_cast<stream_flags>(value & cudaStreamNonBlocking);
    }

    /// @brief Queues a call of @p callable on the host after the work queued so far; later work
    /// on the stream waits for it to return (`cudaLaunchHostFunc`, run with the stream's device
    /// current).
    ///
    /// The callable is moved to the heap and owned until it has run (`<gpu/host_function.hpp>`
    /// says who owns it when): outside a capture it runs once and is destroyed; inside a
    /// capture the graph keeps it, and
    /// every replay of an executable graph made from it calls the same callable again (so it must
    /// be callable many times, and concurrently when two executable graphs of one capture run
    /// at once), until the last of them is destroyed. It runs on a CUDA thread: it must not
    /// call CUDA (CUDA forbids it and may deadlock), nor must its destructor. An exception that
    /// escapes it is caught there and reported (stderr, the first time, with its `what()`;
    /// counted in `gpu::host_function_exceptions()`): it never crosses into CUDA's C code.
    /// @param callable anything callable with no arguments (a lambda, a function object)
    /// @param where the caller's source location, for errors
    /// @throws std::logic_error on a moved-from or released `stream`
    /// @throws gpu::cuda_error when CUDA refuses (the callable is then destroyed unrun)
    template <class F>
    void launch_host_func(F&& callable,
                          std::source_location where = std::source_location::current()) const
    {
        const cudaStream_t handle = native();
        std::unique_ptr<detail::host_callback> callback =
            detail::make_host_callback(std::forward<F>(callable));
        const scoped_device on(static_cast<const Self&>(*this).device());
        detail::launch_host_callback(handle, std::move(callback), where);
    }

protected:
    /// @brief Only as a base of `stream_ref` and `stream`.
    constexpr stream_operations() noexcept = default;

private:
    [[nodiscard]] cudaStream_t native() const;
};

/// @brief A non-owning reference to a CUDA stream; cheap to copy, what functions take by value.
///
/// It always names a stream: there is no default constructor, and neither `nullptr` nor `0`
/// converts to one (as with CCCL's `cuda::stream_ref` and RMM's `cuda_stream_view`), because
/// both would silently mean the legacy default stream. Name that stream as
/// `gpu::legacy_default_stream` where it is really wanted.
///
/// Which stream cudagap's work runs on, everywhere:
/// - a function given a `stream_ref` runs there;
/// - otherwise a function that takes a `device_buffer` runs on the buffer's stream
///   (`device_buffer::stream()`): `fill_uniform`, `converted`, `check_finite`, `copy_to_host`;
///   one that writes a buffer from another (`blas::convert(from, to)`) runs on the output's;
/// - an object with a stream of its own runs there: a `blas::handle` (GEMMs), a `dnn::handle`
///   (convolutions), a `blas::random_generator` (its fills); each is given its stream when it is
///   made;
/// - raw pointers and matrix views carry no stream, so functions on them take one explicitly.
///
/// Nothing falls back to the legacy default stream: every allocation and every owner that queues
/// work takes its stream when it is made. When a call reads data that other streams wrote, the
/// caller orders those streams before it (an event, or one stream for all), as with any CUDA
/// library.
class stream_ref : public stream_operations<stream_ref> {
public:
    /// @brief No default: say which stream (`gpu::legacy_default_stream` for CUDA's default).
    stream_ref() = delete;
    /// @brief `0` would silently mean the legacy default stream.
    stream_ref(int) = delete;
    /// @brief `nullptr` would silently mean the legacy default stream.
    stream_ref(std::nullptr_t) = delete;

    /// @brief Refers to a stream created elsewhere (by a library, by raw CUDA code). A null
    /// `cudaStream_t` variable is the legacy default stream, as in CUDA.
    constexpr explicit stream_ref(cudaStream_t handle) noexcept : handle_(handle) {}

    /// @brief The raw handle (0 for the legacy default stream).
    [[nodiscard]] constexpr cudaStream_t get() const noexcept { return handle_; }

    /// @brief Whether this is the legacy default stream.
    [[nodiscard]] constexpr bool is_default() const noexcept { return handle_ == nullptr; }

    /// @brief Itself (what `stream_operations` and generic code ask every stream type for).
    [[nodiscard]] constexpr stream_ref ref() const noexcept { return *this; }

    /// @brief The device the stream belongs to, as CUDA says (`cudaStreamGetDevice`: a reference
    /// to a stream made elsewhere records nothing). For the legacy default stream, the device
    /// current on the calling thread: each device has its own.
    /// @throws gpu::cuda_error when CUDA is unavailable or the handle names no stream
    [[nodiscard]] gpu::device device() const
    {
        int id = -1;
        GPU_CUDA_CHECK(cudaStreamGetDevice(handle_, &id));
        return detail::device_from_cuda(id);
    }

    /// @brief References are equal when they name the same stream.
    friend constexpr bool operator==(stream_ref a, stream_ref b) noexcept
    {
        return a.handle_ == b.handle_;
    }

private:
    cudaStream_t handle_;
};

/// @brief CUDA's legacy default stream (handle 0), named: it synchronises with every blocking
/// stream of the device, so work on it serialises with theirs. Pass it where that is what you
/// mean (code that mixes with libraries using stream 0); cudagap never picks it for you.
inline constexpr stream_ref legacy_default_stream{cudaStream_t{}};

/// @brief The range of stream priorities the current device offers.
struct stream_priority_range {
    int least = 0;    ///< the lowest priority (numerically largest), also the default
    int greatest = 0; ///< the highest priority (numerically smallest)
};

/// @brief The priorities a new `stream` may have on the current device
/// (`cudaDeviceGetStreamPriorityRange`).
/// @throws gpu::cuda_error when CUDA is unavailable
[[nodiscard]] inline stream_priority_range stream_priorities()
{
    stream_priority_range range;
    GPU_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&range.least, &range.greatest));
    return range;
}

/// @brief The priorities a new `stream` may have on @p dev (asked with @p dev current; the
/// caller's device is restored).
/// @throws gpu::cuda_error when CUDA is unavailable
[[nodiscard]] inline stream_priority_range stream_priorities(device dev)
{
    const scoped_device on(dev);
    return stream_priorities();
}

namespace detail {
/// @brief @p stream's device, or -1 when CUDA cannot say (no driver, no such stream), for the
/// constructors of library handles, whose own create call must be the one that fails without a
/// driver (it carries the library's diagnosis). Never throws; leaves no CUDA error behind.
[[nodiscard]] inline int device_or_unknown(stream_ref stream) noexcept
{
    int id = -1;
    if (cudaStreamGetDevice(stream.get(), &id) != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        return -1;
    }
    return id;
}

/// @brief A guard that keeps device @p id current while it lives, or none when @p id is -1
/// (`device_or_unknown` could not say): what a library handle's constructor holds while it
/// makes and sets up the handle on its stream's device (the caller's comes back at the end).
/// @throws gpu::cuda_error when @p id cannot be made current
[[nodiscard]] inline std::optional<scoped_device> scoped_device_or_none(int id)
{
    if (id < 0) {
        return std::nullopt;
    }
    return std::optional<scoped_device>(std::in_place, device_from_cuda(id));
}

/// @brief Destroys a CUDA stream; failures are reported, never thrown.
struct stream_deleter {
    void operator()(cudaStream_t handle) const noexcept
    {
        detail::report_destroy_failure("cudaStreamDestroy", cudaStreamDestroy(handle));
    }
};
} // namespace detail

/// @brief An owning CUDA stream on the device it was made for, which it records. Move-only.
///
/// Every operation of `stream_ref` works on it too (both derive from `stream_operations`), and a
/// `stream` converts to a `stream_ref` wherever one is taken. Synchronising, querying and
/// waiting on an event work whatever device is current (CUDA allows them across devices); the
/// operations that CUDA ties to the stream's device (`launch_host_func`; allocations and
/// memsets ordered on it) switch to that device through `gpu::scoped_device` and back.
class stream : public stream_operations<stream> {
public:
    /// @brief Creates a stream on the current device (the device is recorded: see `device()`).
    /// @param flags whether it synchronises with the legacy default stream
    /// @param priority a value in `stream_priorities()`; 0 is the default priority
    /// @param where the caller's source location, for errors
    /// @throws gpu::cuda_error when CUDA is unavailable or the stream cannot be created; its
    /// `api()` names the request, then the CUDA call that failed, e.g.
    /// `gpu::stream(non_blocking, priority 0): cudaDeviceGetStreamPriorityRange`
    /// @throws std::invalid_argument when @p priority is outside `stream_priorities()` (CUDA
    /// would clamp it silently)
    explicit stream(stream_flags flags = stream_flags::blocking, int priority = 0,
                    std::source_location where = std::source_location::current());

    /// @brief Creates a stream on @p dev, whatever device is current (it is made with @p dev
    /// current, and the caller's current device is restored).
    /// @param dev the device the stream belongs to (`device()` after)
    /// @param flags whether it synchronises with @p dev's legacy default stream
    /// @param priority a value in `stream_priorities(dev)`; 0 is the default priority
    /// @param where the caller's source location, for errors
    /// @throws gpu::cuda_error as the other constructor, its `api()` naming the request
    /// @throws std::invalid_argument when @p priority is outside `stream_priorities(dev)`
    stream(gpu::device dev, stream_flags flags = stream_flags::blocking, int priority = 0,
           std::source_location where = std::source_location::current());

    /// @brief Adopts a stream created elsewhere; it will be destroyed with this object. Its
    /// device is asked of CUDA (`cudaStreamGetDevice`) and recorded.
    /// @throws gpu::cuda_error when @p handle is not null and CUDA cannot say its device
    [[nodiscard]] static stream from_native_handle(cudaStream_t handle)
    {
        int id = -1;
        if (handle != nullptr) {
            GPU_CUDA_CHECK(cudaStreamGetDevice(handle, &id));
        }
        return stream(adopt, handle, id);
    }

    /// @brief The device the stream was made on (recorded, no CUDA call).
    /// @throws std::logic_error on a moved-from or released stream
    [[nodiscard]] gpu::device device() const
    {
        static_cast<void>(ref());
        return detail::device_from_cuda(device_);
    }

    /// @brief A non-owning reference, to pass to functions.
    /// @throws std::logic_error on a moved-from or released stream (which would otherwise
    /// silently name the default stream)
    [[nodiscard]] stream_ref ref() const
    {
        if (!handle_) {
            // A null handle would silently mean the legacy default stream: refused instead.
            detail::throw_empty_owner("gpu::stream", "gpu::stream", "CUDA stream");
        }
        return stream_ref(handle_.get());
    }

    /// @brief Same as `ref()`, so that a `stream` can be passed where a `stream_ref` is taken.
    /// @throws std::logic_error on a moved-from or released stream
    operator stream_ref() const { return ref(); } // NOLINT(google-explicit-constructor)

    /// @brief The raw handle, still owned (null after a move).
    [[nodiscard]] cudaStream_t get() const noexcept { return handle_.get(); }

    /// @brief Whether a stream is owned (false after a move or `release`).
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

    /// @brief Gives up ownership; the caller must destroy the stream.
    /// @post this object is in the moved-from state: `get() == nullptr`, and every operation
    /// throws `std::logic_error`.
    [[nodiscard]] cudaStream_t release() noexcept { return handle_.release(); }

    /// @brief Moving leaves the source without a stream.
    /// @post `other.get() == nullptr`; using `other` (`ref()`, `synchronize()`, ...) throws
    /// `std::logic_error` until a stream is assigned to it
    stream(stream&& other) noexcept = default;
    /// @brief Destroys the owned stream and takes @p other's.
    /// @post `other.get() == nullptr`, as after the move constructor
    stream& operator=(stream&& other) noexcept = default;
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;
    /// @brief Destroys the stream (pending work still completes; CUDA defers the release).
    ~stream() = default;

private:
    struct adopt_tag {};
    static constexpr adopt_tag adopt{};
    stream(adopt_tag, cudaStream_t handle, int device) noexcept : handle_(handle), device_(device)
    {}
    // Makes the stream on device @p device (current or not) and returns it, owned.
    [[nodiscard]] static cudaStream_t create(int device, stream_flags flags, int priority,
                                             std::source_location where);

    detail::unique_handle<cudaStream_t, detail::stream_deleter> handle_;
    int device_ = -1; ///< the device it was made on; a plain value, so moving copies it
};

template <class Self>
cudaStream_t stream_operations<Self>::native() const
{
    return static_cast<const Self&>(*this).ref().get();
}

} // namespace gpu
