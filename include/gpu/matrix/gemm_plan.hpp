/// @file gemm_plan.hpp
/// @brief How a GEMM on `matrix_view`s maps onto a column-major BLAS call (cuBLAS, or a CPU
/// BLAS's Fortran interface), and every argument check made before that call.
///
/// Column-major BLAS computes `C = alpha·op(A)·op(B) + beta·C` with `C` stored by columns.
/// A row-major `C` (m x n) is the column-major `Cᵀ` (n x m), and `Cᵀ = Bᵀ·Aᵀ`: so for a
/// row-major `C` the plan swaps the operands and exchanges m and n. Each operand is then passed
/// as stored, with `transpose` exactly when its layout differs from `C`'s. No data moves.
///
/// `plan_gemm` is what `gpu::blas::gemm` and `gpu::host_blas::gemm` call first; it is public so
/// that the mapping can be inspected (and tested) without a GPU.
#pragma once

#include <gpu/matrix/matrix.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpu::matrix {

/// @brief What a column-major BLAS call does to an operand before multiplying.
enum class operation {
    none,      ///< use as stored (`CUBLAS_OP_N`, `'N'`)
    transpose, ///< use transposed (`CUBLAS_OP_T`, `'T'`)
};

/// @brief The BLAS character of an operation: `'N'` or `'T'`.
[[nodiscard]] constexpr char to_char(operation op) noexcept
{
    return op == operation::none ? 'N' : 'T';
}

/// @brief A strided batch: `count` GEMMs whose matrices start `stride_*` elements apart.
///
/// A stride of 0 for `a` or `b` reuses one matrix for every GEMM of the batch (broadcast);
/// `c`'s stride must keep the outputs apart.
struct strided_batch {
    std::int64_t count = 1;    ///< number of GEMMs; 0 does nothing
    std::int64_t stride_a = 0; ///< elements between consecutive A matrices
    std::int64_t stride_b = 0; ///< elements between consecutive B matrices
    std::int64_t stride_c = 0; ///< elements between consecutive C matrices
};

/// @brief A GEMM in column-major BLAS terms: the arguments of `cublasGemmEx` or `sgemm_`.
///
/// `first` and `second` are cuBLAS's `A` and `B`: the caller's `a` and `b`, or `b` and `a`
/// when `swapped` (row-major `C`).
struct gemm_plan {
    operation op_first = operation::none;  ///< `transa`
    operation op_second = operation::none; ///< `transb`
    std::int64_t m = 0;                    ///< rows of column-major C
    std::int64_t n = 0;                    ///< columns of column-major C
    std::int64_t k = 0;                    ///< the inner dimension
    std::int64_t ld_first = 1;             ///< `lda`
    std::int64_t ld_second = 1;            ///< `ldb`
    std::int64_t ldc = 1;                  ///< `ldc`
    bool swapped = false;                  ///< first is the caller's `b`, second its `a`
    std::int64_t stride_first = 0;         ///< `strideA` of a strided batch
    std::int64_t stride_second = 0;        ///< `strideB` of a strided batch
    std::int64_t stride_c = 0;             ///< `strideC` of a strided batch
    std::int64_t batch_count = 1;          ///< `batchCount`

    /// @brief cuBLAS's `A`: @p a, or @p b when swapped.
    template <class P>
    [[nodiscard]] constexpr P first(P a, P b) const noexcept
    {
        return swapped ? b : a;
    }
    /// @brief cuBLAS's `B`: @p b, or @p a when swapped.
    template <class P>
    [[nodiscard]] constexpr P second(P a, P b) const noexcept
    {
        return swapped ? a : b;
    }

    /// @brief Whether the call has nothing to compute (m, n or the batch count is 0); k = 0
    /// still scales C by beta.
    [[nodiscard]] constexpr bool empty() const noexcept
    {
        return m == 0 || n == 0 || batch_count == 0;
    }

    /// @brief Plans compare equal field by field.
    friend constexpr bool operator==(const gemm_plan&, const gemm_plan&) = default;
};

namespace detail {

/// @brief What the checks need to know about one operand, without its element type.
struct operand_shape {
    const char* name = "";            ///< `a`, `b` or `c`
    std::uintptr_t address = 0;       ///< the data pointer as an integer (0 for null)
    std::size_t element_size = 0;     ///< bytes per element
    std::int64_t rows = 0;            ///< rows
    std::int64_t cols = 0;            ///< columns
    std::int64_t ld = 0;              ///< leading dimension
    layout order = layout::row_major; ///< layout

    /// @brief `3x4 row-major (ld 4)`.
    [[nodiscard]] std::string to_string() const
    {
        return std::to_string(rows) + "x" + std::to_string(cols) + " " +
               std::string(matrix::to_string(order)) + " (ld " + std::to_string(ld) + ")";
    }
};

/// @brief The shape of @p view under the name @p name.
template <class T>
[[nodiscard]] operand_shape shape_of(const char* name, const matrix_view<T>& view) noexcept
{
    return {name,        reinterpret_cast<std::uintptr_t>(view.data()),
            sizeof(T),   view.rows(),
            view.cols(), view.leading_dimension(),
            view.order()};
}

/// @brief Throws `std::invalid_argument("<function>: <what>")`.
[[noreturn]] inline void throw_gemm_argument(std::string_view function, const std::string& what)
{
    throw std::invalid_argument(std::string(function) + ": " + what);
}

/// @brief The largest value cuBLAS's (and LP64 BLAS's) `int` arguments hold.
inline constexpr std::int64_t max_blas_int = std::numeric_limits<std::int32_t>::max();

/// @brief Sizes, leading dimension, null data, and the `int` range of one operand.
inline void check_operand(std::string_view function, const operand_shape& s)
{
    const std::string name(s.name);
    if (s.rows < 0 || s.cols < 0) {
        throw_gemm_argument(function, name + " has a negative size: " + s.to_string());
    }
    const std::int64_t min_ld =
        std::max<std::int64_t>(1, s.order == layout::row_major ? s.cols : s.rows);
    if (s.ld < min_ld) {
        throw_gemm_argument(function, name + "'s leading dimension " + std::to_string(s.ld) +
                                          " is smaller than allowed for a " + s.to_string() +
                                          " matrix (at least " + std::to_string(min_ld) + ")");
    }
    if (s.address == 0 && s.rows > 0 && s.cols > 0) {
        throw_gemm_argument(function,
                            name + " is " + s.to_string() + " but its data pointer is null");
    }
    if (s.rows > max_blas_int || s.cols > max_blas_int || s.ld > max_blas_int) {
        throw_gemm_argument(function, name + " is " + s.to_string() +
                                          ", beyond the 32-bit int range of the BLAS interface (" +
                                          std::to_string(max_blas_int) + ")");
    }
}

/// @brief The elements one matrix of shape @p s spans, from its first to one past its last
/// (0 when empty). Cannot overflow after `check_operand` (both factors are below 2³¹).
[[nodiscard]] inline std::int64_t extent_elements(const operand_shape& s) noexcept
{
    if (s.rows == 0 || s.cols == 0) {
        return 0;
    }
    const std::int64_t outer = s.order == layout::row_major ? s.rows : s.cols;
    const std::int64_t inner = s.order == layout::row_major ? s.cols : s.rows;
    return (outer - 1) * s.ld + inner;
}

/// @brief The extent in bytes of @p s repeated @p count times @p stride elements apart (the
/// caller has checked that this fits: see `check_batch_span`).
[[nodiscard]] inline std::uintptr_t span_bytes(const operand_shape& s, std::int64_t count,
                                               std::int64_t stride) noexcept
{
    const std::int64_t extent = extent_elements(s);
    if (extent == 0 || count == 0) {
        return 0;
    }
    return static_cast<std::uintptr_t>((count - 1) * stride + extent) * s.element_size;
}

/// @brief Throws when @p count matrices of shape @p s, @p stride elements apart, span more bytes
/// than a 64-bit signed integer holds (more memory than exists: a shape or stride that is surely
/// a mistake). Checked for one matrix too, since `span_bytes` must not wrap round.
inline void check_batch_span(std::string_view function, const operand_shape& s, std::int64_t count,
                             std::int64_t stride)
{
    const std::int64_t extent = extent_elements(s);
    if (extent == 0 || count == 0) {
        return;
    }
    const std::int64_t limit = std::numeric_limits<std::int64_t>::max() /
                               static_cast<std::int64_t>(s.element_size == 0 ? 1 : s.element_size);
    const bool too_large = extent > limit || (count > 1 && stride > (limit - extent) / (count - 1));
    if (too_large) {
        throw_gemm_argument(function, std::to_string(count) +
                                          (count == 1 ? " matrix " : " matrices ") + s.name + " (" +
                                          s.to_string() + ") " + std::to_string(stride) +
                                          " elements apart span more memory than exists");
    }
}

/// @brief The smallest distance between `t * stride` and a multiple of @p ld over
/// `1 <= t <= last` (requires `0 < stride`, `0 < ld <= 2³¹` and `last >= 1`).
///
/// `t * stride / ld` is best approximated by whole numbers at the denominators of the
/// continued fraction of `stride / ld` (Lagrange: for `1 <= t < q[k+1]`, `t * stride` is no
/// closer to a multiple of @p ld than `q[k] * stride` is), so only those denominators up to
/// @p last are tried: O(log ld) steps however large @p last is.
[[nodiscard]] inline std::int64_t closest_to_multiple(std::int64_t stride, std::int64_t ld,
                                                      std::int64_t last) noexcept
{
    const auto distance = [&](std::int64_t t) {
        const std::int64_t r = (t % ld) * (stride % ld) % ld; // both factors below 2³¹
        return std::min(r, ld - r);
    };
    std::int64_t best = distance(1); // q[0] = 1
    std::int64_t q_before = 0;       // q[-1]
    std::int64_t q = 1;
    std::int64_t numerator = ld;            // Euclid's algorithm on ld and stride % ld gives the
    std::int64_t denominator = stride % ld; // partial quotients a[1], a[2], ...
    while (denominator != 0 && best != 0) {
        const std::int64_t a = numerator / denominator;
        const std::int64_t remainder = numerator % denominator;
        numerator = denominator;
        denominator = remainder;
        const std::int64_t next = a * q + q_before; // at most ld / gcd(stride, ld)
        if (next > last) {
            break;
        }
        best = std::min(best, distance(next));
        q_before = q;
        q = next;
    }
    return best;
}

/// @brief Whether @p count matrices of shape @p s, @p stride elements apart, share an element
/// (their padding does not count). A stride below one matrix's extent is fine when the matrices
/// interleave through each other's padding, as the batch of a `[rows, batch, cols]` tensor does
/// (stride `cols`, leading dimension `batch * cols`); cuBLAS computes those correctly.
/// Requires `check_operand` and `check_batch_span` to have passed.
[[nodiscard]] inline bool batch_overlaps(const operand_shape& s, std::int64_t count,
                                         std::int64_t stride) noexcept
{
    const std::int64_t extent = extent_elements(s);
    if (count <= 1 || extent == 0 || stride >= extent) {
        return false;
    }
    if (stride == 0) {
        return true;
    }
    const std::int64_t inner = s.order == layout::row_major ? s.cols : s.rows;
    // Matrices t apart share an element when d = t * stride is the distance between two elements
    // of one matrix, q * ld + r with 0 <= q < outer and |r| < inner. Every d < extent has such a
    // q, and in the last row r >= 0 already, so d is one exactly when it lies within inner - 1 of
    // a multiple of ld; d >= extent never is.
    const std::int64_t last = std::min(count - 1, (extent - 1) / stride);
    return closest_to_multiple(stride, s.ld, last) < inner;
}

/// @brief Throws when the output's memory overlaps an input's (BLAS results are undefined then).
inline void check_no_overlap(std::string_view function, const operand_shape& input,
                             std::int64_t input_stride, const operand_shape& output,
                             std::int64_t output_stride, std::int64_t count)
{
    const std::uintptr_t in_bytes = span_bytes(input, count, input_stride);
    const std::uintptr_t out_bytes = span_bytes(output, count, output_stride);
    if (in_bytes == 0 || out_bytes == 0) {
        return;
    }
    // Differences, not sums: an address near the top of the address space must not wrap round.
    const bool overlaps = input.address >= output.address
                              ? input.address - output.address < out_bytes
                              : output.address - input.address < in_bytes;
    if (overlaps) {
        throw_gemm_argument(function, std::string(output.name) + " overlaps " + input.name +
                                          " in memory; the output must not alias an input "
                                          "(the result would be undefined)");
    }
}

/// @brief The plan for `c = a·b` (every shape already in logical, caller's terms), after every
/// check; see `gpu::matrix::plan_gemm`.
inline gemm_plan plan_gemm(std::string_view function, const operand_shape& a,
                           const operand_shape& b, const operand_shape& c,
                           const strided_batch& batch)
{
    check_operand(function, a);
    check_operand(function, b);
    check_operand(function, c);
    if (a.cols != b.rows) {
        throw_gemm_argument(function, "the inner dimensions differ: a is " + a.to_string() +
                                          " and b is " + b.to_string() + " (a has " +
                                          std::to_string(a.cols) + " columns, b has " +
                                          std::to_string(b.rows) + " rows)");
    }
    if (c.rows != a.rows || c.cols != b.cols) {
        throw_gemm_argument(function, "c is " + c.to_string() + " but a (" + a.to_string() +
                                          ") times b (" + b.to_string() + ") is " +
                                          std::to_string(a.rows) + "x" + std::to_string(b.cols));
    }
    if (batch.count < 0 || batch.count > max_blas_int) {
        throw_gemm_argument(function, "batch count " + std::to_string(batch.count) +
                                          " is outside [0, " + std::to_string(max_blas_int) + "]");
    }
    if (batch.stride_a < 0 || batch.stride_b < 0 || batch.stride_c < 0) {
        throw_gemm_argument(function, "negative batch stride (a " + std::to_string(batch.stride_a) +
                                          ", b " + std::to_string(batch.stride_b) + ", c " +
                                          std::to_string(batch.stride_c) + ")");
    }
    check_batch_span(function, a, batch.count, batch.stride_a);
    check_batch_span(function, b, batch.count, batch.stride_b);
    check_batch_span(function, c, batch.count, batch.stride_c);
    if (batch_overlaps(c, batch.count, batch.stride_c)) {
        throw_gemm_argument(function, "c's batch stride " + std::to_string(batch.stride_c) +
                                          " is smaller than one c (" + c.to_string() + " spans " +
                                          std::to_string(extent_elements(c)) +
                                          " elements): the outputs of the batch would overlap");
    }
    check_no_overlap(function, a, batch.stride_a, c, batch.stride_c, batch.count);
    check_no_overlap(function, b, batch.stride_b, c, batch.stride_c, batch.count);

    gemm_plan plan;
    const operand_shape& first = c.order == layout::column_major ? a : b;
    const operand_shape& second = c.order == layout::column_major ? b : a;
    plan.swapped = c.order == layout::row_major;
    plan.op_first = first.order == c.order ? operation::none : operation::transpose;
    plan.op_second = second.order == c.order ? operation::none : operation::transpose;
    plan.m = plan.swapped ? c.cols : c.rows;
    plan.n = plan.swapped ? c.rows : c.cols;
    plan.k = a.cols;
    plan.ld_first = first.ld;
    plan.ld_second = second.ld;
    plan.ldc = c.ld;
    plan.stride_first = plan.swapped ? batch.stride_b : batch.stride_a;
    plan.stride_second = plan.swapped ? batch.stride_a : batch.stride_b;
    plan.stride_c = batch.stride_c;
    plan.batch_count = batch.count;
    return plan;
}

} // namespace detail

/// @brief Checks `c = a·b` and returns the column-major BLAS call that computes it.
///
/// Checks, in this order, and throws `std::invalid_argument` naming the shapes: negative sizes,
/// a leading dimension below `max(1, cols)` (row-major) or `max(1, rows)` (column-major), null
/// data with a non-zero size, sizes beyond the 32-bit `int` of the BLAS interface, mismatched
/// inner dimensions (`a.cols() != b.rows()`), a `c` that is not `a.rows() x b.cols()`, and a
/// `c` whose memory overlaps `a` or `b`. Zero sizes are allowed: m or n = 0 does nothing, k = 0
/// scales `c` by beta.
/// @param a the left operand, m x k
/// @param b the right operand, k x n
/// @param c the result, m x n
/// @param function the name used in error messages
template <class TA, class TB, class TC>
[[nodiscard]] gemm_plan plan_gemm(const matrix_view<TA>& a, const matrix_view<TB>& b,
                                  const matrix_view<TC>& c,
                                  std::string_view function = "gpu::blas::gemm")
{
    return detail::plan_gemm(function, detail::shape_of("a", a), detail::shape_of("b", b),
                             detail::shape_of("c", c), strided_batch{});
}

/// @brief `plan_gemm` for a strided batch of `batch.count` GEMMs whose first matrices are the
/// views @p a, @p b and @p c.
///
/// Also checks: the count is in [0, 2³¹), strides are not negative, each operand's batch spans
/// fewer bytes than a 64-bit signed integer holds, and no two outputs of the batch share an
/// element (decided in O(log ld) steps, whatever the count). A `c` stride below one `c`'s
/// extent is accepted when the outputs interleave through the padding without touching (e.g.
/// `c` stride `n` and leading dimension `count * n` for a row-major `[m, count, n]` tensor), as
/// cuBLAS allows.
/// @param a the first left operand, m x k
/// @param b the first right operand, k x n
/// @param c the first result, m x n
/// @param batch the count and the strides, in elements
/// @param function the name used in error messages
template <class TA, class TB, class TC>
[[nodiscard]] gemm_plan plan_gemm(const matrix_view<TA>& a, const matrix_view<TB>& b,
                                  const matrix_view<TC>& c, const strided_batch& batch,
                                  std::string_view function = "gpu::blas::gemm_strided_batched")
{
    return detail::plan_gemm(function, detail::shape_of("a", a), detail::shape_of("b", b),
                             detail::shape_of("c", c), batch);
}

} // namespace gpu::matrix
