// Fuzzes gpu::matrix::matrix_view and its checked factories (include/gpu/matrix/matrix.hpp): any
// rows, columns, leading dimension and container size. A view is accepted exactly when a
// 128-bit reference says the container holds it; size() and extent() either equal the
// reference or, when it does not fit in 64 bits, throw std::invalid_argument.
#include <gpu/matrix/matrix.hpp>

#include "fuzz_support.hpp"

#include <cstdint>
#include <string>

namespace {

using wide = __int128;

// A container of any size that owns nothing (the factories only ask for data() and size()).
struct fake_storage {
    float* pointer;
    std::size_t count;
    [[nodiscard]] float* data() const noexcept { return pointer; }
    [[nodiscard]] std::size_t size() const noexcept { return count; }
};

bool fits(wide value)
{
    return value >= std::numeric_limits<std::int64_t>::min() &&
           value <= std::numeric_limits<std::int64_t>::max();
}

std::string shape_text(std::int64_t rows, std::int64_t cols, std::int64_t ld, bool row_major)
{
    return std::to_string(rows) + "x" + std::to_string(cols) + " ld " + std::to_string(ld) +
           (row_major ? " row-major" : " column-major");
}

// The unchecked view's queries against the reference, for any values at all.
void check_queries(const gpu::matrix::matrix_view<float>& view)
{
    const std::int64_t rows = view.rows();
    const std::int64_t cols = view.cols();
    const bool row = view.order() == gpu::matrix::layout::row_major;
    const wide size = static_cast<wide>(rows) * cols;
    std::int64_t got = 0;
    const bool size_ok = fuzz::accepted([&] { got = view.size(); }, "matrix_view::size");
    fuzz::require(size_ok == fits(size) && (!size_ok || got == size), [&] {
        return "size() of " + shape_text(rows, cols, view.leading_dimension(), row) + " is wrong";
    });
    const wide outer = row ? rows : cols;
    const wide inner = row ? cols : rows;
    // Documented: refused when the product or the sum does not fit (the product alone can only
    // overflow while the sum fits for a negative leading dimension, which spans nothing real).
    const wide before_last = (outer - 1) * view.leading_dimension();
    const wide extent = view.empty() ? 0 : before_last + inner;
    const bool extent_fits = view.empty() || (fits(before_last) && fits(extent));
    const bool extent_ok = fuzz::accepted([&] { got = view.extent(); }, "matrix_view::extent");
    fuzz::require(extent_ok == extent_fits && (!extent_ok || got == extent), [&] {
        return "extent() of " + shape_text(rows, cols, view.leading_dimension(), row) + " is wrong";
    });
    const auto back = view.transposed().transposed();
    fuzz::require(back.rows() == rows && back.cols() == cols && back.order() == view.order() &&
                      back.leading_dimension() == view.leading_dimension(),
                  "transposing twice changed the view");
    static_cast<void>(view.to_string());
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzz::input in(data, size);
    const std::int64_t rows = in.take_edgy();
    const std::int64_t cols = in.take_edgy();
    const std::int64_t ld = in.take_edgy();
    const bool row = in.take<bool>();
    const auto available = static_cast<std::size_t>(in.take_edgy());
    float* const pointer = reinterpret_cast<float*>(std::uintptr_t{0x10000}); // never read
    const fake_storage storage{pointer, available};

    // The reference: sizes not negative, leading dimension (0: the tightest) at least the
    // tightest, and the span, computed in 128 bits, within the container and 64 bits.
    const std::int64_t tight = std::max<std::int64_t>(1, row ? cols : rows);
    const std::int64_t effective_ld = ld == 0 ? tight : ld;
    const wide outer = row ? rows : cols;
    const wide inner = row ? cols : rows;
    const wide span = rows <= 0 || cols <= 0 ? 0 : (outer - 1) * effective_ld + inner;
    const bool valid = rows >= 0 && cols >= 0 && effective_ld >= tight && fits(span) &&
                       span <= static_cast<wide>(available);

    gpu::matrix::matrix_view<float> view;
    const bool ok = fuzz::accepted(
        [&] {
            view = row ? gpu::matrix::row_major(storage, rows, cols, ld)
                       : gpu::matrix::column_major(storage, rows, cols, ld);
        },
        "the matrix factory");
    fuzz::require(ok == valid, [&] {
        return std::string(ok ? "accepted" : "refused") + " a " + shape_text(rows, cols, ld, row) +
               " view of " + std::to_string(available) + " elements";
    });
    if (ok) {
        fuzz::require(view.data() == pointer && view.rows() == rows && view.cols() == cols &&
                          view.leading_dimension() == effective_ld && view.extent() == span,
                      "the accepted view is not what was asked for");
        check_queries(view);
    }
    check_queries(gpu::matrix::matrix_view<float>(pointer, rows, cols, ld,
                                                  row ? gpu::matrix::layout::row_major
                                                      : gpu::matrix::layout::column_major));
    check_queries(gpu::matrix::matrix_view<float>(pointer, rows, cols,
                                                  row ? gpu::matrix::layout::row_major
                                                      : gpu::matrix::layout::column_major));
    return 0;
}
