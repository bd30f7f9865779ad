/// @file handle.hpp
/// @brief `gpu::dnn::handle`: the owner of a cuDNN context (`cudnnHandle_t`), bound to a stream.
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/stream.hpp>

#include <cudnn_graph.h>

namespace gpu::dnn {

namespace detail {
/// @brief Destroys a cuDNN handle; failures are reported, never thrown.
struct handle_deleter {
    void operator()(cudnnHandle_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cudnnDestroy", cudnnDestroy(raw));
    }
};
} // namespace detail

/// @brief An owning cuDNN context on the device of the stream it was made with (which it
/// records), bound to one stream. Move-only.
///
/// **One handle per thread.** cuDNN lets several threads share a handle only if they never use
/// it at the same time, and every call works on the stream the handle is bound to; give each
/// thread its own handle (as PyTorch keeps one per thread and device). Creating a handle costs
/// milliseconds and some device memory, so create it once and keep it.
///
/// All cuDNN work issued through the handle (convolutions, their algorithm searches) runs on the
/// bound stream; `set_stream` rebinds it. Destroying the handle destroys the context
/// (`cudnnDestroy`).
class handle : public gpu::detail::handle_owner<handle, cudnnHandle_t, detail::handle_deleter> {
public:
    /// @brief Creates a cuDNN context on @p stream's device (made with that device current; the
    /// caller's is restored) and binds @p stream (required: the handle's convolutions and
    /// searches are stream-ordered work there).
    /// @throws gpu::dnn::dnn_error `CUDNN_STATUS_NOT_INITIALIZED` when there is no usable driver or
    /// GPU, when the loaded cuDNN does not match the CUDA runtime, or when the device is out of
    /// memory; the hint says which, with this machine's versions, and the message carries
    /// cuDNN's own text
    explicit handle(stream_ref stream);

    /// @brief Binds @p stream: later cuDNN work through this handle runs there.
    /// @throws std::logic_error on a handle that holds nothing
    /// @throws std::invalid_argument when @p stream belongs to another device than the handle
    /// (both named)
    void set_stream(stream_ref stream);

    /// @brief The device the handle belongs to: recorded when it was made; for an adopted
    /// handle, its bound stream's (`stream_ref::device`). cudagap's convolutions run with it
    /// current, and plan per device with it.
    /// @throws std::logic_error on a handle that holds nothing
    [[nodiscard]] gpu::device device() const;

    /// @brief The bound stream, as cuDNN reports it (`cudnnGetStream`).
    /// @throws std::logic_error on a handle that holds nothing
    [[nodiscard]] stream_ref stream() const;

private:
    friend handle_owner;
    handle(adopt_t, cudnnHandle_t raw) noexcept : handle_owner(raw) {}
    int device_ = -1; ///< recorded at creation; -1 for an adopted handle (asked of its stream)
};

} // namespace gpu::dnn
