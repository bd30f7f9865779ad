/// @file numerics.hpp
/// @brief `check_finite`: counts NaN and Inf in device data (a buffer or a matrix) with a kernel,
/// the count a handle with `check_numerics` runs after every GEMM (it then throws
/// `gpu::numerics_error`, declared with `gpu::non_finite_report` in `<gpu/numerics.hpp>`).
///
/// @code
/// const gpu::non_finite_report report = gpu::blas::check_finite(c);   // on c's stream
/// if (!report.all_finite()) std::printf("%s\n", report.to_string().c_str());  // 3 NaN and 0 Inf in ...
/// @endcode
#pragma once

#include <gpu/blas/matrix.hpp>
#include <gpu/blas/types.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <type_traits>

namespace gpu::blas {

namespace detail {

/// @brief Counts NaN and Inf among `batch` blocks, `stride` elements apart, of `outer` runs of
/// `inner` contiguous elements `ld` apart (a buffer: 1, 0, 1, n, n). Waits for the result; the
/// report's `first_index` is the storage offset of the first NaN or Inf.
[[nodiscard]] gpu::non_finite_report count_non_finite(element_type type, const void* data,
                                                    std::int64_t batch, std::int64_t stride,
                                                    std::int64_t outer, std::int64_t inner,
                                                    std::int64_t ld, stream_ref stream);

} // namespace detail

/// @brief Counts NaN and Inf in @p count elements of device memory at @p data, on @p stream
/// (required: a pointer carries no stream); waits for the answer.
/// @throws gpu::cuda_error when the check cannot run (no GPU, a bad pointer)
template <blas_element T>
[[nodiscard]] gpu::non_finite_report check_finite(const T* data, std::size_t count, stream_ref stream)
{
    const auto n = static_cast<std::int64_t>(count);
    return detail::count_non_finite(detail::element_type_of<T>, data, 1, 0, 1, n, n, stream);
}

/// @brief Counts NaN and Inf in a device buffer, on @p stream; waits for the answer.
/// @throws gpu::cuda_error when the check cannot run
template <blas_element T>
[[nodiscard]] gpu::non_finite_report check_finite(const device_buffer<T>& buffer, stream_ref stream)
{
    return check_finite(buffer.data(), buffer.size(), stream);
}

/// @brief Counts NaN and Inf in a device buffer, on the buffer's stream (after the work queued
/// there); waits for the answer.
/// @throws gpu::cuda_error when the check cannot run
template <blas_element T>
[[nodiscard]] gpu::non_finite_report check_finite(const device_buffer<T>& buffer)
{
    return check_finite(buffer, buffer.stream());
}

/// @brief Counts NaN and Inf in the elements of a device matrix (its padding is not read), on
/// @p stream (required: a view carries no stream; pass the stream that wrote the matrix, e.g.
/// its buffer's or the handle's); waits for the answer. `first_index` counts from
/// `matrix.data()` in storage order, padding included.
/// @throws std::invalid_argument for a negative size or too small a leading dimension
/// @throws gpu::cuda_error when the check cannot run
template <class T>
    requires blas_element<std::remove_const_t<T>>
[[nodiscard]] gpu::non_finite_report check_finite(matrix_view<T> matrix, stream_ref stream)
{
    if (matrix.rows() < 0 || matrix.cols() < 0 || matrix.leading_dimension() < matrix.min_leading_dimension()) {
        throw std::invalid_argument("gpu::blas::check_finite: invalid matrix " + matrix.to_string());
    }
    const bool rows_contiguous = matrix.order() == layout::row_major;
    return detail::count_non_finite(detail::element_type_of<std::remove_const_t<T>>, matrix.data(), 1, 0,
                                    rows_contiguous ? matrix.rows() : matrix.cols(),
                                    rows_contiguous ? matrix.cols() : matrix.rows(),
                                    matrix.leading_dimension(), stream);
}

} // namespace gpu::blas
