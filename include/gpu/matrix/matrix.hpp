/// @file matrix.hpp
/// @brief `matrix_view`: a non-owning view of a dense matrix (pointer, rows, columns, leading
/// dimension, layout) that `gpu::blas::gemm` and `gpu::host_blas::gemm` take.
///
/// A view says what the memory holds, in the caller's terms. Row-major is the default, as in
/// C++ and NumPy; cuBLAS's column-major convention is handled inside `gemm` (by swapping
/// operands), so the caller never thinks about it. A transpose is a view too:
/// `a.transposed()` names the same memory as a `cols x rows` matrix of the other layout.
///
/// @code
/// gpu::device_buffer<float> a(m * k, stream), b(k * n, stream), c(m * n, stream);
/// gpu::blas::gemm(handle, gpu::matrix::row_major(a, m, k), gpu::matrix::row_major(b, k, n),
///                 gpu::matrix::row_major(c, m, n));                      // C = A·B
/// gpu::blas::gemm(handle, gpu::matrix::row_major(a, k, m).transposed(),  // C = Aᵀ·B
///                 gpu::matrix::row_major(b, k, n), gpu::matrix::row_major(c, m, n));
/// @endcode
///
/// This header is shared by the cuBLAS wrapper and the CPU baseline (`cudagap::host_blas`): it is
/// header-only and includes no vendor header.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace gpu::matrix {

/// @brief How a matrix's elements are laid out in memory.
enum class layout {
    row_major,    ///< rows are contiguous: element (i, j) is at `i * ld + j` (C, C++, NumPy)
    column_major, ///< columns are contiguous: element (i, j) is at `i + j * ld` (Fortran, BLAS)
};

/// @brief `row-major` or `column-major`.
[[nodiscard]] constexpr std::string_view to_string(layout order) noexcept
{
    return order == layout::row_major ? "row-major" : "column-major";
}

namespace detail {

/// @brief `result = a * b` when the product fits in `std::int64_t`; false (and @p result
/// untouched) when it would overflow. Any signs: a view stores what it was given, checked or not.
[[nodiscard]] constexpr bool checked_multiply(std::int64_t a, std::int64_t b,
                                              std::int64_t& result) noexcept
{
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t min = std::numeric_limits<std::int64_t>::min();
    const bool overflows =
        a > 0 ? (b > 0 ? a > max / b : b < min / a) : (b > 0 ? a < min / b : a != 0 && b < max / a);
    if (overflows) {
        return false;
    }
    result = a * b;
    return true;
}

/// @brief `result = a + b` when the sum fits in `std::int64_t`; false otherwise.
[[nodiscard]] constexpr bool checked_add(std::int64_t a, std::int64_t b,
                                         std::int64_t& result) noexcept
{
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t min = std::numeric_limits<std::int64_t>::min();
    if ((b > 0 && a > max - b) || (b < 0 && a < min - b)) {
        return false;
    }
    result = a + b;
    return true;
}

/// @brief `result = (outer - 1) * ld + inner`, the elements a matrix of @p outer rows (row-major;
/// columns when column-major) of @p inner elements @p ld apart spans; false on overflow.
[[nodiscard]] constexpr bool checked_extent(std::int64_t outer, std::int64_t inner, std::int64_t ld,
                                            std::int64_t& result) noexcept
{
    std::int64_t before_last = 0;
    return outer > std::numeric_limits<std::int64_t>::min() &&
           checked_multiply(outer - 1, ld, before_last) && checked_add(before_last, inner, result);
}

} // namespace detail

/// @brief A non-owning view of a dense `rows x cols` matrix; cheap to copy.
///
/// The view stores what it is given; `gemm` checks it (sizes, leading dimension, null data)
/// before any library call. The factories `row_major()` and `column_major()` that take a
/// container also check that the container holds the whole matrix.
///
/// @tparam T the element type, `const` for a read-only operand
template <class T>
class matrix_view {
public:
    /// @brief The element type (with its `const`).
    using element_type = T;

    /// @brief An empty 0 x 0 view.
    constexpr matrix_view() noexcept = default;

    /// @brief A view with the tightest leading dimension: `cols` for row-major, `rows` for
    /// column-major.
    constexpr matrix_view(T* data, std::int64_t rows, std::int64_t cols,
                          layout order = layout::row_major) noexcept
        : data_(data), rows_(rows), cols_(cols),
          ld_(std::max<std::int64_t>(1, order == layout::row_major ? cols : rows)), order_(order)
    {}

    /// @brief A view with an explicit leading dimension: the distance in elements between the
    /// starts of two rows (row-major) or two columns (column-major), e.g. to view a block of a
    /// larger matrix.
    constexpr matrix_view(T* data, std::int64_t rows, std::int64_t cols,
                          std::int64_t leading_dimension, layout order) noexcept
        : data_(data), rows_(rows), cols_(cols), ld_(leading_dimension), order_(order)
    {}

    /// @brief A read-only view of a writable one.
    template <class U>
    requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>) constexpr matrix_view(
        const matrix_view<U>& other) noexcept // NOLINT(google-explicit-constructor)
        : data_(other.data()), rows_(other.rows()), cols_(other.cols()),
          ld_(other.leading_dimension()), order_(other.order())
    {}

    /// @brief The first element (may be a device address).
    [[nodiscard]] constexpr T* data() const noexcept { return data_; }
    /// @brief The number of rows.
    [[nodiscard]] constexpr std::int64_t rows() const noexcept { return rows_; }
    /// @brief The number of columns.
    [[nodiscard]] constexpr std::int64_t cols() const noexcept { return cols_; }
    /// @brief The leading dimension, in elements.
    [[nodiscard]] constexpr std::int64_t leading_dimension() const noexcept { return ld_; }
    /// @brief The memory layout.
    [[nodiscard]] constexpr layout order() const noexcept { return order_; }

    /// @brief `rows() * cols()`: the number of elements of the matrix.
    /// @throws std::invalid_argument when the product does not fit in 64 bits (no memory holds
    /// such a matrix)
    [[nodiscard]] constexpr std::int64_t size() const
    {
        std::int64_t count = 0;
        if (!detail::checked_multiply(rows_, cols_, count)) {
            throw std::invalid_argument("gpu::matrix::matrix_view::size: a " + to_string() +
                                        " matrix has more elements than 64 bits can count");
        }
        return count;
    }

    /// @brief Whether the matrix has no elements.
    [[nodiscard]] constexpr bool empty() const noexcept { return rows_ <= 0 || cols_ <= 0; }

    /// @brief The smallest leading dimension this shape allows: `max(1, cols)` for row-major,
    /// `max(1, rows)` for column-major (what BLAS and cuBLAS require).
    [[nodiscard]] constexpr std::int64_t min_leading_dimension() const noexcept
    {
        return std::max<std::int64_t>(1, order_ == layout::row_major ? cols_ : rows_);
    }

    /// @brief The number of elements the matrix spans in memory, from the first to one past the
    /// last: `(outer - 1) * ld + inner`, 0 when empty.
    /// @throws std::invalid_argument when the product or the sum does not fit in 64 bits (no
    /// memory holds such a matrix)
    [[nodiscard]] constexpr std::int64_t extent() const
    {
        if (empty()) {
            return 0;
        }
        const std::int64_t outer = order_ == layout::row_major ? rows_ : cols_;
        const std::int64_t inner = order_ == layout::row_major ? cols_ : rows_;
        std::int64_t span = 0;
        if (!detail::checked_extent(outer, inner, ld_, span)) {
            throw std::invalid_argument("gpu::matrix::matrix_view::extent: a " + to_string() +
                                        " matrix spans more elements than 64 bits can count");
        }
        return span;
    }

    /// @brief The transpose as a view of the same memory: `cols x rows`, the other layout,
    /// the same leading dimension. Nothing is copied or computed.
    [[nodiscard]] constexpr matrix_view transposed() const noexcept
    {
        return matrix_view(data_, cols_, rows_, ld_,
                           order_ == layout::row_major ? layout::column_major : layout::row_major);
    }

    /// @brief `rows x cols` with layout and leading dimension, e.g. `3x4 row-major (ld 4)`.
    [[nodiscard]] std::string to_string() const
    {
        return std::to_string(rows_) + "x" + std::to_string(cols_) + " " +
               std::string(matrix::to_string(order_)) + " (ld " + std::to_string(ld_) + ")";
    }

    /// @brief The old name of `to_string()`.
    [[deprecated("use to_string()")]] [[nodiscard]] std::string describe() const
    {
        return to_string();
    }

private:
    T* data_ = nullptr;
    std::int64_t rows_ = 0;
    std::int64_t cols_ = 0;
    std::int64_t ld_ = 1;
    layout order_ = layout::row_major;
};

namespace detail {

/// @brief A contiguous range with `std::data` and `std::size`: `std::vector`, `std::span`,
/// `std::array`, `gpu::device_buffer`, `gpu::pinned_buffer`.
template <class Storage>
concept contiguous_storage = requires(Storage& storage)
{
    std::data(storage);
    std::size(storage);
};

/// @brief The element type of a view over @p Storage (`const` when the storage is).
template <class Storage>
using storage_element_t = std::remove_pointer_t<decltype(std::data(std::declval<Storage&>()))>;

/// @brief A view of @p storage in @p order (a leading dimension of 0 means the tightest),
/// checked against the storage's size; throws `std::invalid_argument` naming @p factory.
template <contiguous_storage Storage>
constexpr auto checked_view(Storage& storage, std::int64_t rows, std::int64_t cols,
                            std::int64_t leading_dimension, layout order, const char* factory)
{
    using T = storage_element_t<Storage>;
    const std::int64_t tight = std::max<std::int64_t>(1, order == layout::row_major ? cols : rows);
    const matrix_view<T> view(std::data(storage), rows, cols,
                              leading_dimension == 0 ? tight : leading_dimension, order);
    if (rows < 0 || cols < 0) {
        throw std::invalid_argument(std::string(factory) + ": negative size " + view.to_string());
    }
    if (view.leading_dimension() < view.min_leading_dimension()) {
        throw std::invalid_argument(
            std::string(factory) + ": leading dimension " +
            std::to_string(view.leading_dimension()) + " is smaller than allowed for " +
            view.to_string() + " (at least " + std::to_string(view.min_leading_dimension()) + ")");
    }
    // Computed without overflow: a shape whose span does not even fit in 64 bits must be
    // refused, not wrapped round to a small number that the storage seems to hold.
    const std::size_t available = std::size(storage);
    const std::int64_t outer = order == layout::row_major ? rows : cols;
    const std::int64_t inner = order == layout::row_major ? cols : rows;
    std::int64_t span = 0;
    const bool fits = view.empty() || checked_extent(outer, inner, view.leading_dimension(), span);
    if (!fits || static_cast<std::uint64_t>(span) > available) {
        throw std::invalid_argument(std::string(factory) + ": a " + view.to_string() +
                                    " matrix spans " +
                                    (fits ? std::to_string(span) : std::string("more than 2^63")) +
                                    " elements but the storage holds " + std::to_string(available));
    }
    return view;
}

} // namespace detail

/// @brief A row-major view of @p data (tight leading dimension `cols`).
template <class T>
[[nodiscard]] constexpr matrix_view<T> row_major(T* data, std::int64_t rows,
                                                 std::int64_t cols) noexcept
{
    return matrix_view<T>(data, rows, cols, layout::row_major);
}

/// @brief A column-major view of @p data (tight leading dimension `rows`).
template <class T>
[[nodiscard]] constexpr matrix_view<T> column_major(T* data, std::int64_t rows,
                                                    std::int64_t cols) noexcept
{
    return matrix_view<T>(data, rows, cols, layout::column_major);
}

/// @brief A row-major view of a container's elements (a `std::vector`, a
/// `gpu::device_buffer`, ...), checked against the container's size.
/// @param storage the elements; a `const` container gives a read-only view
/// @param rows number of rows
/// @param cols number of columns
/// @param leading_dimension distance between row starts; 0 means `cols`
/// @throws std::invalid_argument when a size is negative, the leading dimension is smaller
/// than `cols`, or the container holds fewer elements than the matrix spans (all named)
template <detail::contiguous_storage Storage>
[[nodiscard]] constexpr auto row_major(Storage& storage, std::int64_t rows, std::int64_t cols,
                                       std::int64_t leading_dimension = 0)
{
    return detail::checked_view(storage, rows, cols, leading_dimension, layout::row_major,
                                "gpu::matrix::row_major");
}

/// @brief A column-major view of a container's elements, checked against its size.
/// @param storage the elements; a `const` container gives a read-only view
/// @param rows number of rows
/// @param cols number of columns
/// @param leading_dimension distance between column starts; 0 means `rows`
/// @throws std::invalid_argument when a size is negative, the leading dimension is smaller
/// than `rows`, or the container holds fewer elements than the matrix spans (all named)
template <detail::contiguous_storage Storage>
[[nodiscard]] constexpr auto column_major(Storage& storage, std::int64_t rows, std::int64_t cols,
                                          std::int64_t leading_dimension = 0)
{
    return detail::checked_view(storage, rows, cols, leading_dimension, layout::column_major,
                                "gpu::matrix::column_major");
}

} // namespace gpu::matrix
