/// @file stream.hpp
/// @brief CUDA streams: the non-owning `stream_ref` that functions take, and the owning `stream`.
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/error.hpp>

#include <cuda_runtime_api.h>

#include <source_location>
#include <utility>

namespace gpu {

class event_ref;

/// @brief A non-owning reference to a CUDA stream; cheap to copy, what functions take by value.
///
/// A default-constructed `stream_ref` is the legacy default stream (handle 0).
///
/// Which stream cudagap's work runs on, everywhere:
/// - a function given a `stream_ref` runs there;
/// - otherwise a function that takes a `device_buffer` runs on the buffer's stream
///   (`device_buffer::stream()`): `fill_uniform`, `converted`, `check_finite`, `copy_to_host`;
///   one that writes a buffer from another (`blas::convert(from, to)`) runs on the output's;
/// - an object with a stream of its own runs there: a `blas::handle` (GEMMs), a `dnn::handle`
///   (convolutions), a `blas::random_generator` (its fills);
/// - raw pointers and matrix views carry no stream, so functions on them take one explicitly.
///
/// Nothing falls back to the legacy default stream unless it was asked for: an owner made
/// without a stream (`device_buffer(n)`, `blas::handle()`) lives on it, visibly. When a call
/// reads data that other streams wrote, the caller orders those streams before it (an event, or
/// one stream for all), as with any CUDA library.
class stream_ref {
public:
    /// @brief The legacy default stream.
    constexpr stream_ref() noexcept = default;

    /// @brief Refers to a stream created elsewhere (by a library, by raw CUDA code).
    constexpr explicit stream_ref(cudaStream_t handle) noexcept : handle_(handle) {}

    /// @brief The raw handle (0 for the legacy default stream).
    [[nodiscard]] constexpr cudaStream_t get() const noexcept { return handle_; }

    /// @brief Whether this is the legacy default stream.
    [[nodiscard]] constexpr bool is_default() const noexcept { return handle_ == nullptr; }

    /// @brief Blocks until all work queued on the stream has finished.
    void synchronize() const { GPU_CUDA_CHECK(cudaStreamSynchronize(handle_)); }

    /// @brief Whether all work queued on the stream has finished; does not block.
    [[nodiscard]] bool is_ready() const
    {
        const cudaError_t status = cudaStreamQuery(handle_);
        if (status == cudaErrorNotReady) {
            return false;
        }
        GPU_CUDA_CHECK(status);
        return true;
    }

    /// @brief Makes later work on this stream wait until @p event has completed.
    void wait(event_ref event) const;

    /// @brief References are equal when they name the same stream.
    friend constexpr bool operator==(stream_ref, stream_ref) noexcept = default;

private:
    cudaStream_t handle_ = nullptr;
};

/// @brief How a new stream synchronises with the legacy default stream.
enum class stream_flags : unsigned {
    blocking = cudaStreamDefault,          ///< waits for and is waited on by the default stream
    non_blocking = cudaStreamNonBlocking,  ///< runs concurrently with the default stream
};

/// @brief The range of stream priorities the current device offers.
struct stream_priority_range {
    int least = 0;    ///< the lowest priority (numerically largest), also the default
    int greatest = 0; ///< the highest priority (numerically smallest)
};

/// @brief The priorities a new `stream` may have on the current device.
[[nodiscard]] stream_priority_range stream_priorities();

namespace detail {
/// @brief Destroys a CUDA stream; failures are reported, never thrown.
struct stream_deleter {
    void operator()(cudaStream_t handle) const noexcept
    {
        detail::report_destroy_failure("cudaStreamDestroy", cudaStreamDestroy(handle));
    }
};
} // namespace detail

/// @brief An owning CUDA stream on the device that was current when it was created. Move-only.
class stream {
public:
    /// @brief Creates a stream on the current device.
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

    /// @brief Adopts a stream created elsewhere; it will be destroyed with this object.
    [[nodiscard]] static stream from_native_handle(cudaStream_t handle) noexcept
    {
        return stream(adopt, handle);
    }

    /// @brief A non-owning reference, to pass to functions.
    /// @throws std::logic_error on a moved-from stream (which would otherwise silently name the
    /// default stream)
    [[nodiscard]] stream_ref ref() const;

    /// @brief Same as `ref()`, so that a `stream` can be passed where a `stream_ref` is taken.
    operator stream_ref() const { return ref(); } // NOLINT(google-explicit-constructor)

    /// @brief The raw handle, still owned (null after a move).
    [[nodiscard]] cudaStream_t get() const noexcept { return handle_.get(); }

    /// @brief Gives up ownership; the caller must destroy the stream.
    /// @post this object is in the moved-from state.
    [[nodiscard]] cudaStream_t release() noexcept { return handle_.release(); }

    /// @brief Blocks until all work queued on the stream has finished.
    void synchronize() const { ref().synchronize(); }

    /// @brief Whether all queued work has finished; does not block.
    [[nodiscard]] bool is_ready() const { return ref().is_ready(); }

    /// @brief Makes later work on this stream wait until @p event has completed.
    void wait(event_ref event) const;

    /// @brief The stream's priority.
    [[nodiscard]] int priority() const;

    /// @brief The flags it was created with.
    [[nodiscard]] stream_flags flags() const;

    /// @brief Moving leaves the source without a stream.
    /// @post `other.get() == nullptr`
    stream(stream&& other) noexcept = default;
    /// @brief Destroys the owned stream and takes @p other's.
    /// @post `other.get() == nullptr`
    stream& operator=(stream&& other) noexcept = default;
    stream(const stream&) = delete;
    stream& operator=(const stream&) = delete;
    /// @brief Destroys the stream (pending work still completes; CUDA defers the release).
    ~stream() = default;

private:
    struct adopt_tag {};
    static constexpr adopt_tag adopt{};
    stream(adopt_tag, cudaStream_t handle) noexcept : handle_(handle) {}

    detail::unique_handle<cudaStream_t, detail::stream_deleter> handle_;
};

} // namespace gpu
