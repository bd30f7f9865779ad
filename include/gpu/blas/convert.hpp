/// @file convert.hpp
/// @brief Element-type conversion of device data (FP32 to FP16 or BF16 and back, and every
/// other pair of `float`, `double`, `__half`, `__nv_bfloat16`), stream-ordered, on the GPU.
///
/// @code
/// gpu::device_buffer<float> a32(n * n, stream);
/// gpu::blas::fill_uniform(a32, 42);                      // on a32's stream
/// const auto a16 = gpu::blas::converted<__half>(a32);   // on a32's stream too, for FP16 GEMMs
/// @endcode
///
/// Values are rounded to nearest (ties to even) once; values beyond the target's range become
/// infinite (FP16's largest finite value is 65504), and NaN stays NaN.
///
/// Streams: `converted(from)` allocates and converts on `from.stream()`; `convert(from, to)`
/// runs on `to.stream()`, the output's stream (the stream that will free it), and the caller
/// orders the work that writes `from` on another stream before it (an event, or one stream for
/// both). Pass a stream to choose another; raw pointers carry no stream, so there it is required.
#pragma once

#include <gpu/blas/types.hpp>
#include <gpu/detail/allocation.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/stream.hpp>

#include <cstddef>

namespace gpu::blas {

namespace detail {

/// @brief `to[i] = From→To(from[i] * scale + shift)` for @p count elements, on @p stream,
/// computed in double precision and rounded once.
void convert(element_type from_type, const void* from, element_type to_type, void* to,
             std::size_t count, double scale, double shift, stream_ref stream);

} // namespace detail

/// @brief Queues the conversion of @p count elements of device memory at @p from into @p to on
/// @p stream (required: raw pointers carry no stream to default to).
/// @throws std::invalid_argument when a pointer is null and @p count is not 0
/// @throws gpu::cuda_error when the kernel cannot run (no GPU, no kernel for this GPU)
template <blas_element From, blas_element To>
void convert(const From* from, To* to, std::size_t count, stream_ref stream)
{
    detail::convert(detail::element_type_of<From>, from, detail::element_type_of<To>, to, count,
                    1.0, 0.0, stream);
}

/// @brief Queues the conversion of a whole device buffer into another of the same size, on
/// @p stream; the caller orders the buffers' own streams with it.
/// @throws std::invalid_argument when the sizes differ (both are named)
/// @throws gpu::cuda_error when the kernel cannot run
template <blas_element From, blas_element To>
void convert(const device_buffer<From>& from, device_buffer<To>& to, stream_ref stream)
{
    if (from.size() != to.size()) {
        gpu::detail::throw_size_mismatch("gpu::blas::convert", from.size(), to.size());
    }
    convert(from.data(), to.data(), from.size(), stream);
}

/// @brief Queues the conversion of a whole device buffer into another of the same size, on the
/// output's stream (`to.stream()`): when `from` lives on another stream, the caller orders the
/// work that writes it before this call.
/// @throws std::invalid_argument when the sizes differ (both are named)
/// @throws gpu::cuda_error when the kernel cannot run
template <blas_element From, blas_element To>
void convert(const device_buffer<From>& from, device_buffer<To>& to)
{
    convert(from, to, to.stream());
}

/// @brief A new buffer holding @p from converted to @p To, allocated, filled (and later freed)
/// on @p stream; the caller orders `from.stream()` with it.
/// @throws gpu::out_of_memory when the new buffer does not fit
/// @throws gpu::cuda_error when the kernel cannot run
template <blas_element To, blas_element From>
[[nodiscard]] device_buffer<To> converted(const device_buffer<From>& from, stream_ref stream)
{
    device_buffer<To> to(from.size(), stream);
    convert(from, to, stream);
    return to;
}

/// @brief A new buffer holding @p from converted to @p To, on `from.stream()`: allocated and
/// filled there, ordered after the work already queued on it, and freed there.
/// @throws gpu::out_of_memory when the new buffer does not fit
/// @throws gpu::cuda_error when the kernel cannot run
template <blas_element To, blas_element From>
[[nodiscard]] device_buffer<To> converted(const device_buffer<From>& from)
{
    return converted<To>(from, from.stream());
}

} // namespace gpu::blas
