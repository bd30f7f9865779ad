// Fuzzes gpu::matrix::plan_gemm (include/gpu/matrix/gemm_plan.hpp), strided batches included: any
// shapes, layouts, leading dimensions, addresses, element sizes, counts and strides. Every
// decision is compared with a reference written independently in 128-bit arithmetic (and, for
// batches of outputs, the direct search over every distance, when it is short enough); an
// accepted plan must be the column-major call that computes c = a·b.
#include <gpu/matrix/gemm_plan.hpp>

#include "fuzz_support.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

namespace {

using wide = __int128;
using gpu::matrix::detail::operand_shape;

constexpr wide int_max = std::numeric_limits<std::int32_t>::max();
constexpr wide int64_max = std::numeric_limits<std::int64_t>::max();

struct operand {
    std::uintptr_t address = 0;
    std::int64_t rows = 0;
    std::int64_t cols = 0;
    std::int64_t ld = 1;
    gpu::matrix::layout order = gpu::matrix::layout::row_major;
};

std::uintptr_t take_address(fuzz::input& in, std::size_t element_size)
{
    // A few bases, so that operands often share memory, plus an offset in elements.
    static constexpr std::uintptr_t bases[] = {0, 0x10000, 0x7fff00000000, 0xfffffffffffff000};
    const std::uintptr_t base = bases[in.take<std::uint8_t>() % 4];
    return base + static_cast<std::uintptr_t>(in.take<std::uint16_t>()) * element_size;
}

std::int64_t take_dimension(fuzz::input& in, std::int64_t suggested)
{
    // Mostly the dimension that makes the shapes agree, sometimes anything.
    const std::uint8_t mode = in.take<std::uint8_t>();
    return mode < 200 ? suggested : in.take_edgy();
}

operand take_operand(fuzz::input& in, std::int64_t rows, std::int64_t cols,
                     std::size_t element_size)
{
    operand op;
    op.address = take_address(in, element_size);
    op.rows = take_dimension(in, rows);
    op.cols = take_dimension(in, cols);
    op.order = in.take<bool>() ? gpu::matrix::layout::row_major : gpu::matrix::layout::column_major;
    const std::int64_t tight =
        std::max<std::int64_t>(1, op.order == gpu::matrix::layout::row_major ? op.cols : op.rows);
    const std::uint8_t mode = in.take<std::uint8_t>();
    const std::int64_t padding = in.take<std::uint8_t>();
    const bool pad =
        mode >= 100 && mode < 220 && tight <= std::numeric_limits<std::int64_t>::max() - padding;
    op.ld = mode < 100 ? tight : pad ? tight + padding : in.take_edgy();
    return op;
}

std::int64_t extent_guess(const operand& op); // below

// A stride near where batches start or stop overlapping: 0 (a broadcast), just past one
// matrix's extent, a few leading dimensions plus a little, or anything.
std::int64_t take_stride(fuzz::input& in, const operand& op)
{
    const std::uint8_t mode = in.take<std::uint8_t>();
    const wide small = static_cast<std::int8_t>(in.take<std::uint8_t>());
    wide stride = 0;
    if (mode < 40) {
        return 0;
    }
    if (mode < 110) {
        stride = extent_guess(op) + small;
    } else if (mode < 200) {
        stride = static_cast<wide>(op.ld) * (mode % 8) + small;
    } else {
        return in.take_edgy();
    }
    return static_cast<std::int64_t>(
        std::clamp<wide>(stride, 0, std::numeric_limits<std::int64_t>::max()));
}

// --- the reference ---------------------------------------------------------------------------

wide extent_of(const operand& op)
{
    if (op.rows == 0 || op.cols == 0) {
        return 0;
    }
    const bool row = op.order == gpu::matrix::layout::row_major;
    return (static_cast<wide>(row ? op.rows : op.cols) - 1) * op.ld + (row ? op.cols : op.rows);
}

std::int64_t extent_guess(const operand& op)
{
    const wide extent = op.rows < 0 || op.cols < 0 ? 0 : extent_of(op);
    return static_cast<std::int64_t>(
        std::clamp<wide>(extent, 0, std::numeric_limits<std::int64_t>::max()));
}

bool operand_valid(const operand& op)
{
    const wide tight =
        std::max<std::int64_t>(1, op.order == gpu::matrix::layout::row_major ? op.cols : op.rows);
    return op.rows >= 0 && op.cols >= 0 && op.ld >= tight &&
           !(op.address == 0 && op.rows > 0 && op.cols > 0) && op.rows <= int_max &&
           op.cols <= int_max && op.ld <= int_max;
}

// Bytes spanned by count matrices stride elements apart, or nothing beyond int64.
std::optional<wide> span_bytes(const operand& op, std::int64_t count, std::int64_t stride,
                               std::size_t size)
{
    const wide extent = extent_of(op);
    if (extent == 0 || count == 0) {
        return 0;
    }
    const wide elements = static_cast<wide>(count - 1) * stride + extent;
    if (elements > int64_max / static_cast<wide>(size)) {
        return std::nullopt;
    }
    return elements * size;
}

// Whether outputs share an element, by trying every distance (the old, slow algorithm, which
// the unit tests prove right against a full comparison); nothing when that is too long.
std::optional<bool> outputs_overlap(const operand& c, std::int64_t count, std::int64_t stride)
{
    const wide extent = extent_of(c);
    if (count <= 1 || extent == 0 || stride >= extent) {
        return false;
    }
    if (stride == 0) {
        return true;
    }
    const bool row = c.order == gpu::matrix::layout::row_major;
    const wide outer = row ? c.rows : c.cols;
    const wide inner = row ? c.cols : c.rows;
    const wide last = std::min<wide>(count - 1, (extent - 1) / stride);
    if (last > 20000) {
        return std::nullopt;
    }
    for (wide t = 1; t <= last; ++t) {
        const wide d = t * stride;
        const wide q = d / c.ld;
        const wide r = d % c.ld;
        if ((q < outer && r < inner) || (q + 1 < outer && c.ld - r < inner)) {
            return true;
        }
    }
    return false;
}

bool intervals_meet(std::uintptr_t a, wide a_bytes, std::uintptr_t b, wide b_bytes)
{
    return a_bytes > 0 && b_bytes > 0 && static_cast<wide>(a) < static_cast<wide>(b) + b_bytes &&
           static_cast<wide>(b) < static_cast<wide>(a) + a_bytes;
}

// true: must be accepted; false: must be refused; nothing: the reference cannot tell quickly.
std::optional<bool> reference_accepts(const operand& a, const operand& b, const operand& c,
                                      const gpu::matrix::strided_batch& batch,
                                      const std::size_t sizes[3])
{
    if (!operand_valid(a) || !operand_valid(b) || !operand_valid(c) || a.cols != b.rows ||
        c.rows != a.rows || c.cols != b.cols || batch.count < 0 || batch.count > int_max ||
        batch.stride_a < 0 || batch.stride_b < 0 || batch.stride_c < 0) {
        return false;
    }
    const auto bytes_a = span_bytes(a, batch.count, batch.stride_a, sizes[0]);
    const auto bytes_b = span_bytes(b, batch.count, batch.stride_b, sizes[1]);
    const auto bytes_c = span_bytes(c, batch.count, batch.stride_c, sizes[2]);
    if (!bytes_a || !bytes_b || !bytes_c) {
        return false;
    }
    const std::optional<bool> overlap = outputs_overlap(c, batch.count, batch.stride_c);
    if (!overlap) {
        return std::nullopt;
    }
    return !*overlap && !intervals_meet(a.address, *bytes_a, c.address, *bytes_c) &&
           !intervals_meet(b.address, *bytes_b, c.address, *bytes_c);
}

// The plan computes c = a·b: column-major C (or Cᵀ when c is row-major) = op(first)·op(second).
void check_plan(const gpu::matrix::gemm_plan& plan, const operand& a, const operand& b,
                const operand& c, const gpu::matrix::strided_batch& batch)
{
    const bool swapped = c.order == gpu::matrix::layout::row_major;
    const operand& first = swapped ? b : a;
    const operand& second = swapped ? a : b;
    const auto op = [&](const operand& x) {
        return x.order == c.order ? gpu::matrix::operation::none
                                  : gpu::matrix::operation::transpose;
    };
    fuzz::require(plan.swapped == swapped && plan.m == (swapped ? c.cols : c.rows) &&
                      plan.n == (swapped ? c.rows : c.cols) && plan.k == a.cols &&
                      plan.op_first == op(first) && plan.op_second == op(second) &&
                      plan.ld_first == first.ld && plan.ld_second == second.ld &&
                      plan.ldc == c.ld &&
                      plan.stride_first == (swapped ? batch.stride_b : batch.stride_a) &&
                      plan.stride_second == (swapped ? batch.stride_a : batch.stride_b) &&
                      plan.stride_c == batch.stride_c && plan.batch_count == batch.count,
                  "the plan does not compute c = a·b");
}

template <class TA, class TB, class TC>
void plan_and_check(const operand& a, const operand& b, const operand& c,
                    const gpu::matrix::strided_batch& batch, bool batched)
{
    const auto view = [](const operand& op, auto* typed) {
        using T = std::remove_pointer_t<decltype(typed)>;
        return gpu::matrix::matrix_view<T>(reinterpret_cast<T*>(op.address), op.rows, op.cols,
                                           op.ld, op.order);
    };
    const auto va = view(a, static_cast<const TA*>(nullptr));
    const auto vb = view(b, static_cast<const TB*>(nullptr));
    const auto vc = view(c, static_cast<TC*>(nullptr));
    const std::size_t sizes[3] = {sizeof(TA), sizeof(TB), sizeof(TC)};
    const gpu::matrix::strided_batch used = batched ? batch : gpu::matrix::strided_batch{};
    gpu::matrix::gemm_plan plan;
    const bool ok = fuzz::accepted(
        [&] {
            plan = batched ? gpu::matrix::plan_gemm(va, vb, vc, batch)
                           : gpu::matrix::plan_gemm(va, vb, vc);
        },
        "plan_gemm");
    const std::optional<bool> expected = reference_accepts(a, b, c, used, sizes);
    fuzz::require(!expected || *expected == ok, [&] {
        return std::string("plan_gemm ") + (ok ? "accepted" : "refused") + " a " + va.to_string() +
               " times " + vb.to_string() + " into " + vc.to_string() + ", batch of " +
               std::to_string(used.count) + " strides " + std::to_string(used.stride_a) + "/" +
               std::to_string(used.stride_b) + "/" + std::to_string(used.stride_c) +
               "; the reference says otherwise";
    });
    if (ok) {
        check_plan(plan, a, b, c, used);
    }
}

// closest_to_multiple against the direct minimum over every t, for short ranges.
void check_closest(fuzz::input& in)
{
    const std::int64_t ld = 1 + in.take<std::uint32_t>() % std::numeric_limits<std::int32_t>::max();
    const std::int64_t stride =
        1 + static_cast<std::int64_t>(in.take<std::uint32_t>() % (ld + 1000));
    const std::int64_t last = 1 + in.take<std::uint16_t>() % 5000;
    std::int64_t expected = ld;
    for (std::int64_t t = 1; t <= last; ++t) {
        const std::int64_t r = static_cast<std::int64_t>(static_cast<wide>(t) * stride % ld);
        expected = std::min({expected, r, ld - r});
    }
    const std::int64_t got = gpu::matrix::detail::closest_to_multiple(stride, ld, last);
    fuzz::require(got == expected, [&] {
        return "closest_to_multiple(" + std::to_string(stride) + ", " + std::to_string(ld) + ", " +
               std::to_string(last) + ") is " + std::to_string(got) + ", the direct search says " +
               std::to_string(expected);
    });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzz::input in(data, size);
    // The element types, as gemm's instantiations would see them: a, b, c float or double.
    const std::uint8_t types = in.take<std::uint8_t>();
    const bool batched = (types & 8U) != 0;
    const std::size_t size_a = (types & 1U) != 0 ? 8 : 4;
    const std::size_t size_b = (types & 2U) != 0 ? 8 : 4;
    const std::size_t size_c = (types & 4U) != 0 ? 8 : 4;
    const std::int64_t m = in.take_edgy();
    const std::int64_t n = in.take_edgy();
    const std::int64_t k = in.take_edgy();
    const operand a = take_operand(in, m, k, size_a);
    const operand b = take_operand(in, k, n, size_b);
    const operand c = take_operand(in, m, n, size_c);
    gpu::matrix::strided_batch batch;
    batch.count = in.take<std::uint8_t>() < 128 ? in.take<std::uint8_t>() : in.take_edgy();
    batch.stride_a = take_stride(in, a);
    batch.stride_b = take_stride(in, b);
    batch.stride_c = take_stride(in, c);
    switch (types & 7U) {
    case 0: plan_and_check<float, float, float>(a, b, c, batch, batched); break;
    case 1: plan_and_check<double, float, float>(a, b, c, batch, batched); break;
    case 2: plan_and_check<float, double, float>(a, b, c, batch, batched); break;
    case 3: plan_and_check<double, double, float>(a, b, c, batch, batched); break;
    case 4: plan_and_check<float, float, double>(a, b, c, batch, batched); break;
    case 5: plan_and_check<double, float, double>(a, b, c, batch, batched); break;
    case 6: plan_and_check<float, double, double>(a, b, c, batch, batched); break;
    default: plan_and_check<double, double, double>(a, b, c, batch, batched); break;
    }
    check_closest(in);
    return 0;
}
