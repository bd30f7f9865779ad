/// @file numerics.hpp
/// @brief `check_finite`: counts NaN and Inf in device data (a buffer or a matrix), and
/// `non_finite_error`, what a handle with `check_numerics` throws when an output has them.
///
/// @code
/// const gpu::blas::finite_report report = gpu::blas::check_finite(c);
/// if (!report.ok()) std::printf("%s\n", report.describe().c_str());  // 3 NaN, 0 Inf in 1000000 ...
/// @endcode
#pragma once

#include <gpu/blas/matrix.hpp>
#include <gpu/blas/types.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

namespace gpu::blas {

/// @brief What `check_finite` found.
struct finite_report {
    std::size_t elements = 0;     ///< elements checked
    std::size_t nan_count = 0;    ///< NaN among them
    std::size_t inf_count = 0;    ///< +Inf or -Inf among them
    /// Offset in elements from the start of the data of the first NaN or Inf, -1 when none.
    std::int64_t first_offset = -1;

    /// @brief No NaN and no Inf.
    [[nodiscard]] bool ok() const noexcept { return nan_count == 0 && inf_count == 0; }

    /// @brief `3 NaN and 1 Inf in 1000000 elements (the first at offset 42)`, or
    /// `all 1000000 elements are finite`.
    [[nodiscard]] std::string describe() const;
};

/// @brief An operation produced NaN or Inf while the handle's `check_numerics` was on (the
/// `torch.autograd.set_detect_anomaly` idea): says which operation and how many.
class non_finite_error : public std::runtime_error {
public:
    /// @brief Builds the error for @p operation (e.g. `gpu::blas::gemm`, FP16, 4096x4096).
    non_finite_error(std::string operation, const finite_report& report);

    /// @brief The operation whose output was checked.
    [[nodiscard]] const std::string& operation() const noexcept { return operation_; }
    /// @brief The counts.
    [[nodiscard]] const finite_report& report() const noexcept { return report_; }

private:
    std::string operation_;
    finite_report report_;
};

namespace detail {

/// @brief Counts NaN and Inf among `batch` blocks, `stride` elements apart, of `outer` runs of
/// `inner` contiguous elements `ld` apart (a buffer: 1, 1, n, n, 0). Waits for the result.
[[nodiscard]] finite_report count_non_finite(element_type type, const void* data, std::int64_t batch,
                                             std::int64_t stride, std::int64_t outer,
                                             std::int64_t inner, std::int64_t ld,
                                             stream_ref stream);

} // namespace detail

/// @brief Counts NaN and Inf in @p count elements of device memory at @p data, on @p stream;
/// waits for the answer.
/// @throws gpu::cuda_error when the check cannot run (no GPU, a bad pointer)
template <blas_element T>
[[nodiscard]] finite_report check_finite(const T* data, std::size_t count, stream_ref stream = {})
{
    const auto n = static_cast<std::int64_t>(count);
    return detail::count_non_finite(detail::element_type_of<T>, data, 1, 0, 1, n, n, stream);
}

/// @brief Counts NaN and Inf in a device buffer, on @p stream; waits for the answer.
/// @throws gpu::cuda_error when the check cannot run
template <blas_element T>
[[nodiscard]] finite_report check_finite(const device_buffer<T>& buffer, stream_ref stream = {})
{
    return check_finite(buffer.data(), buffer.size(), stream);
}

/// @brief Counts NaN and Inf in the elements of a device matrix (its padding is not read), on
/// @p stream; waits for the answer.
/// @throws std::invalid_argument for a negative size or too small a leading dimension
/// @throws gpu::cuda_error when the check cannot run
template <class T>
    requires blas_element<std::remove_const_t<T>>
[[nodiscard]] finite_report check_finite(matrix_view<T> matrix, stream_ref stream = {})
{
    if (matrix.rows() < 0 || matrix.cols() < 0 || matrix.leading_dimension() < matrix.min_leading_dimension()) {
        throw std::invalid_argument("gpu::blas::check_finite: invalid matrix " + matrix.describe());
    }
    const bool rows_contiguous = matrix.order() == layout::row_major;
    return detail::count_non_finite(detail::element_type_of<std::remove_const_t<T>>, matrix.data(), 1, 0,
                                    rows_contiguous ? matrix.rows() : matrix.cols(),
                                    rows_contiguous ? matrix.cols() : matrix.rows(),
                                    matrix.leading_dimension(), stream);
}

} // namespace gpu::blas
