/// @file numerics.hpp
/// @brief `gpu::blas::check_finite`: the core's NaN/Inf check (`gpu::check_finite`, one kernel for
/// every wrapper) on this one's typed data, a pointer, a buffer or a matrix view. It is the count a
/// handle with `check_numerics` runs after every GEMM (it then throws `gpu::numerics_error`,
/// declared with `gpu::non_finite_report` in `<gpu/numerics.hpp>`).
///
/// @code
/// const gpu::non_finite_report report = gpu::blas::check_finite(c);   // on c's stream
/// if (!report.all_finite()) {
///     std::printf("%s\n", report.to_string().c_str()); // 3 NaN and 0 Inf in ...
/// }
/// @endcode
#pragma once

#include <gpu/matrix/matrix.hpp>
#include <gpu/blas/types.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <stdexcept>
#include <type_traits>

namespace gpu::blas {

/// @brief Counts NaN and Inf in @p count elements of device memory at @p data, on @p stream
/// (required: a pointer carries no stream); waits for the answer. `gpu::check_finite` with the
/// element type of @p T.
/// @throws std::invalid_argument for null @p data with a non-zero count
/// @throws gpu::cuda_error when the check cannot run (no GPU, a bad pointer)
template <blas_element T>
[[nodiscard]] gpu::non_finite_report check_finite(const T* data, std::size_t count,
                                                  stream_ref stream)
{
    return gpu::check_finite(data, count, detail::element_type_of<T>, stream);
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
[[nodiscard]] gpu::non_finite_report check_finite(gpu::matrix::matrix_view<T> matrix,
                                                  stream_ref stream)
{
    if (matrix.rows() < 0 || matrix.cols() < 0 ||
        matrix.leading_dimension() < matrix.min_leading_dimension()) {
        throw std::invalid_argument("gpu::blas::check_finite: invalid matrix " +
                                    matrix.to_string());
    }
    const bool rows_contiguous = matrix.order() == gpu::matrix::layout::row_major;
    const gpu::detail::strided_elements where{
        .batch = 1,
        .batch_stride = 0,
        .runs = rows_contiguous ? matrix.rows() : matrix.cols(),
        .run_length = rows_contiguous ? matrix.cols() : matrix.rows(),
        .run_stride = matrix.leading_dimension(),
    };
    return gpu::detail::check_finite_strided(
        matrix.data(), detail::element_type_of<std::remove_const_t<T>>, where, stream);
}

} // namespace gpu::blas
