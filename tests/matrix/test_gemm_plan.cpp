// gpu/matrix/gemm_plan.hpp: how views map onto a column-major BLAS call, and every argument
// check, without a GPU. (The mapping is also verified numerically by the host_blas tests, which
// run it through OpenBLAS for every layout combination.)
#include <gpu/matrix/gemm_plan.hpp>

#include "catch.hpp"

#include <cstdint>
#include <limits>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {
// Distinct, non-overlapping fake device addresses (the plan never dereferences them).
float* const a_data = reinterpret_cast<float*>(std::uintptr_t{0x100000});
float* const b_data = reinterpret_cast<float*>(std::uintptr_t{0x200000});
float* const c_data = reinterpret_cast<float*>(std::uintptr_t{0x300000});
constexpr auto row = gpu::matrix::layout::row_major;
constexpr auto col = gpu::matrix::layout::column_major;
constexpr auto N = gpu::matrix::operation::none;
constexpr auto T = gpu::matrix::operation::transpose;
} // namespace

TEST_CASE("row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: operands swapped, no transposes",
          "[matrix]")
{
    const gpu::matrix::matrix_view<const float> a(a_data, 3, 5, row); // m x k
    const gpu::matrix::matrix_view<const float> b(b_data, 5, 4, row); // k x n
    const gpu::matrix::matrix_view<float> c(c_data, 3, 4, row);       // m x n
    const gpu::matrix::gemm_plan plan = gpu::matrix::plan_gemm(a, b, c);
    CHECK(plan.swapped);
    CHECK(plan.op_first == N);
    CHECK(plan.op_second == N);
    CHECK(plan.m == 4); // column-major Cᵀ is n x m
    CHECK(plan.n == 3);
    CHECK(plan.k == 5);
    CHECK(plan.ld_first == 4);  // B's row length
    CHECK(plan.ld_second == 5); // A's row length
    CHECK(plan.ldc == 4);
    CHECK(plan.first(a.data(), b.data()) == b.data());
    CHECK(plan.second(a.data(), b.data()) == a.data());
    CHECK(plan.batch_count == 1);
    CHECK_FALSE(plan.empty());
}

TEST_CASE("column-major C = A·B maps straight through", "[matrix]")
{
    const gpu::matrix::gemm_plan plan =
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, 3, 5, col),
                               gpu::matrix::matrix_view<const float>(b_data, 5, 4, col),
                               gpu::matrix::matrix_view<float>(c_data, 3, 4, col));
    CHECK_FALSE(plan.swapped);
    CHECK(plan == gpu::matrix::gemm_plan{N, N, 3, 4, 5, 3, 5, 3, false, 0, 0, 0, 1});
}

TEST_CASE("an operand whose layout differs from C's is passed transposed", "[matrix]")
{
    SECTION("column-major C, row-major A")
    {
        const auto plan =
            gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, 3, 5, row),
                                   gpu::matrix::matrix_view<const float>(b_data, 5, 4, col),
                                   gpu::matrix::matrix_view<float>(c_data, 3, 4, col));
        CHECK(plan == gpu::matrix::gemm_plan{T, N, 3, 4, 5, 5, 5, 3, false, 0, 0, 0, 1});
    }
    SECTION("row-major C, column-major B")
    {
        const auto plan =
            gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, 3, 5, row),
                                   gpu::matrix::matrix_view<const float>(b_data, 5, 4, col),
                                   gpu::matrix::matrix_view<float>(c_data, 3, 4, row));
        CHECK(plan == gpu::matrix::gemm_plan{T, N, 4, 3, 5, 5, 5, 4, true, 0, 0, 0, 1});
    }
}

TEST_CASE("transposed() views become transposes, explicitly and without copies", "[matrix]")
{
    // C (3x4, row-major) = Aᵀ·B with A stored as a 5x3 row-major matrix.
    const gpu::matrix::matrix_view<const float> a_stored(a_data, 5, 3, row);
    const gpu::matrix::matrix_view<const float> b(b_data, 5, 4, row);
    const gpu::matrix::matrix_view<float> c(c_data, 3, 4, row);
    const auto plan = gpu::matrix::plan_gemm(a_stored.transposed(), b, c);
    CHECK(plan.swapped);
    CHECK(plan.op_first == N);  // B as stored
    CHECK(plan.op_second == T); // Aᵀ: column-major view of a row-major matrix
    CHECK(plan.k == 5);
    CHECK(plan.ld_second == 3);
    CHECK_THROWS_WITH(gpu::matrix::plan_gemm(a_stored, b, c),
                      ContainsSubstring("the inner dimensions differ"));
}

TEST_CASE("leading dimensions of blocks in larger matrices carry over", "[matrix]")
{
    const auto plan =
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, 3, 5, 8, row),
                               gpu::matrix::matrix_view<const float>(b_data, 5, 4, 16, row),
                               gpu::matrix::matrix_view<float>(c_data, 3, 4, 32, row));
    CHECK(plan.ld_first == 16);
    CHECK(plan.ld_second == 8);
    CHECK(plan.ldc == 32);
}

TEST_CASE("mismatched shapes are rejected with both shapes named", "[matrix]")
{
    const gpu::matrix::matrix_view<const float> a(a_data, 3, 4, row);
    const gpu::matrix::matrix_view<const float> b(b_data, 5, 2, row);
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(a, b, gpu::matrix::matrix_view<float>(c_data, 3, 2, row)),
        ContainsSubstring("gpu::blas::gemm: the inner dimensions differ: a is 3x4 row-major (ld 4) "
                          "and b is 5x2 row-major (ld 2) (a has 4 columns, b has 5 rows)"));
    const gpu::matrix::matrix_view<const float> b4(b_data, 4, 2, row);
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(a, b4, gpu::matrix::matrix_view<float>(c_data, 2, 3, col)),
        ContainsSubstring("c is 2x3 column-major (ld 2) but a (3x4 row-major (ld 4)) times b "
                          "(4x2 row-major (ld 2)) is 3x2"));
}

TEST_CASE("a leading dimension below the minimum is rejected with the minimum", "[matrix]")
{
    const gpu::matrix::matrix_view<const float> b(b_data, 4, 2, row);
    const gpu::matrix::matrix_view<float> c(c_data, 3, 2, row);
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, 3, 4, 3, row), b, c),
        ContainsSubstring("a's leading dimension 3 is smaller than allowed for a 3x4 row-major "
                          "(ld 3) matrix (at least 4)"));
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, 3, 4, 2, col), b, c),
        ContainsSubstring("at least 3"));
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, 3, 4, 4, row), b,
                               gpu::matrix::matrix_view<float>(c_data, 3, 2, 0, row)),
        ContainsSubstring("c's leading dimension 0"));
}

TEST_CASE("negative sizes and null data with a non-zero size are rejected", "[matrix]")
{
    const gpu::matrix::matrix_view<const float> b(b_data, 4, 2, row);
    const gpu::matrix::matrix_view<float> c(c_data, 3, 2, row);
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, -3, 4, 4, row), b, c),
        ContainsSubstring("a has a negative size: -3x4"));
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(nullptr, 3, 4), b, c),
        ContainsSubstring("a is 3x4 row-major (ld 4) but its data pointer is null"));
    CHECK_THROWS_WITH(gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, 3, 4), b,
                                             gpu::matrix::matrix_view<float>(nullptr, 3, 2)),
                      ContainsSubstring("c is 3x2"));
}

TEST_CASE("zero sizes are allowed: m or n = 0 is empty, k = 0 scales C", "[matrix]")
{
    const auto empty_m =
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(nullptr, 0, 4),
                               gpu::matrix::matrix_view<const float>(b_data, 4, 2),
                               gpu::matrix::matrix_view<float>(nullptr, 0, 2));
    CHECK(empty_m.empty());
    const auto k0 = gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(nullptr, 3, 0),
                                           gpu::matrix::matrix_view<const float>(nullptr, 0, 2),
                                           gpu::matrix::matrix_view<float>(c_data, 3, 2));
    CHECK_FALSE(k0.empty());
    CHECK(k0.k == 0);
    CHECK(k0.ld_second >= 1); // BLAS needs ld >= 1 even for empty operands
}

TEST_CASE("sizes beyond the 32-bit int of the BLAS interface are rejected", "[matrix]")
{
    const std::int64_t huge = std::int64_t{std::numeric_limits<std::int32_t>::max()} + 1;
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const float>(a_data, 1, huge),
                               gpu::matrix::matrix_view<const float>(b_data, huge, 1, 1, col),
                               gpu::matrix::matrix_view<float>(c_data, 1, 1)),
        ContainsSubstring("beyond the 32-bit int range"));
}

TEST_CASE("an output overlapping an input is rejected", "[matrix]")
{
    std::vector<float> storage(64);
    const gpu::matrix::matrix_view<const float> a(storage.data(), 4, 4);
    const gpu::matrix::matrix_view<const float> b(storage.data() + 16, 4, 4);
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(a, b, gpu::matrix::matrix_view<float>(storage.data() + 8, 4, 4)),
        ContainsSubstring("c overlaps a in memory"));
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(a, b, gpu::matrix::matrix_view<float>(storage.data() + 31, 4, 4)),
        ContainsSubstring("c overlaps b in memory"));
    CHECK_NOTHROW(
        gpu::matrix::plan_gemm(a, b, gpu::matrix::matrix_view<float>(storage.data() + 32, 4, 4)));
}

TEST_CASE("a strided batch carries its strides, swapped with the operands", "[matrix]")
{
    const gpu::matrix::matrix_view<const float> a(a_data, 3, 5, row);
    const gpu::matrix::matrix_view<const float> b(b_data, 5, 4, row);
    const gpu::matrix::matrix_view<float> c(c_data, 3, 4, row);
    const auto plan = gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{7, 15, 0, 12});
    CHECK(plan.batch_count == 7);
    CHECK(plan.stride_first == 0);   // b, broadcast
    CHECK(plan.stride_second == 15); // a
    CHECK(plan.stride_c == 12);
    CHECK(gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{0, 15, 20, 12}).empty());
}

TEST_CASE("bad batches are rejected: counts, strides, overlapping outputs", "[matrix]")
{
    const gpu::matrix::matrix_view<const float> a(a_data, 3, 5, row);
    const gpu::matrix::matrix_view<const float> b(b_data, 5, 4, row);
    const gpu::matrix::matrix_view<float> c(c_data, 3, 4, row);
    CHECK_THROWS_WITH(gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{-1, 15, 20, 12}),
                      ContainsSubstring("gpu::blas::gemm_strided_batched: batch count -1"));
    CHECK_THROWS_WITH(gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{2, -15, 20, 12}),
                      ContainsSubstring("negative batch stride (a -15, b 20, c 12)"));
    CHECK_THROWS_WITH(gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{2, 15, 20, 11}),
                      ContainsSubstring("c's batch stride 11 is smaller than one c") &&
                          ContainsSubstring("spans 12"));
    CHECK_NOTHROW(gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{1, 0, 0, 0}));
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(
            a, b, c,
            gpu::matrix::strided_batch{3, std::numeric_limits<std::int64_t>::max() / 2, 20, 12}),
        ContainsSubstring("span more memory than exists"));
}

TEST_CASE("outputs that interleave through each other's padding are a valid batch", "[matrix]")
{
    // Row-major [m, count, n] storage, the batch in the middle (attention heads): each c is m x n
    // with leading dimension count * n, the next one n elements on. cuBLAS computes this.
    const std::int64_t m = 3;
    const std::int64_t n = 4;
    const std::int64_t count = 5;
    const gpu::matrix::matrix_view<const float> a(a_data, m, 6, row);
    const gpu::matrix::matrix_view<const float> b(b_data, 6, n, row);
    const gpu::matrix::matrix_view<float> c(c_data, m, n, count * n, row);
    const auto plan = gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{count, 0, 0, n});
    CHECK(plan.stride_c == n);
    CHECK(plan.ldc == count * n);
    // One more GEMM would write over the second row of the first c.
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{count + 1, 0, 0, n}),
        ContainsSubstring("the outputs of the batch would overlap"));
    // A stride that lands inside a row (or, column-major, a column) of another output overlaps.
    CHECK_THROWS_WITH(gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{2, 0, 0, n - 1}),
                      ContainsSubstring("c's batch stride 3"));
    CHECK_THROWS_AS(
        gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{2, 0, 0, count * n + 1}),
        std::invalid_argument);
    // Column-major: 2 x 3 outputs in columns 7 apart, interleaved 2 and 4 elements on.
    const gpu::matrix::matrix_view<const float> ac(a_data, 2, 6, col);
    const gpu::matrix::matrix_view<const float> bc(b_data, 6, 3, col);
    const gpu::matrix::matrix_view<float> cc(c_data, 2, 3, 7, col);
    CHECK_NOTHROW(gpu::matrix::plan_gemm(ac, bc, cc, gpu::matrix::strided_batch{3, 0, 0, 2}));
    CHECK_THROWS_AS(gpu::matrix::plan_gemm(ac, bc, cc, gpu::matrix::strided_batch{4, 0, 0, 2}),
                    std::invalid_argument);
    CHECK_THROWS_AS(gpu::matrix::plan_gemm(ac, bc, cc, gpu::matrix::strided_batch{2, 0, 0, 1}),
                    std::invalid_argument);
    // A stride of 0 overlaps whenever there is more than one output.
    CHECK_THROWS_AS(gpu::matrix::plan_gemm(ac, bc, cc, gpu::matrix::strided_batch{2, 0, 0, 0}),
                    std::invalid_argument);
}

TEST_CASE("the batch overlap check is quick and right with 2^31 outputs", "[matrix]")
{
    // c: two rows of one element, 2^31 - 2 apart. Outputs 1 element apart first meet when the
    // second row of the first is the first row of the last of 2^31 - 1: the old check tried
    // each of the 2^31 - 2 distances in turn to find that out.
    const std::int64_t ld = std::numeric_limits<std::int32_t>::max() - 1;
    const gpu::matrix::matrix_view<const float> a(a_data, 2, 1, row);
    const gpu::matrix::matrix_view<const float> b(b_data, 1, 1, row);
    const gpu::matrix::matrix_view<float> c(c_data, 2, 1, ld, row);
    CHECK_THROWS_WITH(gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{ld + 1, 0, 0, 1}),
                      ContainsSubstring("the outputs of the batch would overlap"));
    CHECK(gpu::matrix::plan_gemm(a, b, c, gpu::matrix::strided_batch{ld, 0, 0, 1}).batch_count ==
          ld);
}

TEST_CASE("the batch overlap check agrees with comparing every element of every output", "[matrix]")
{
    // Every small shape, leading dimension, stride and count against a brute-force reference.
    for (const auto order : {row, col}) {
        for (std::int64_t outer = 1; outer <= 4; ++outer) {
            for (std::int64_t inner = 1; inner <= 4; ++inner) {
                for (std::int64_t ld = inner; ld <= inner + 5; ++ld) {
                    const gpu::matrix::detail::operand_shape shape{"c",
                                                                   0x1000,
                                                                   sizeof(float),
                                                                   order == row ? outer : inner,
                                                                   order == row ? inner : outer,
                                                                   ld,
                                                                   order};
                    std::vector<std::int64_t> offsets; // of one matrix's elements
                    for (std::int64_t q = 0; q < outer; ++q) {
                        for (std::int64_t r = 0; r < inner; ++r) {
                            offsets.push_back(q * ld + r);
                        }
                    }
                    const std::int64_t extent = (outer - 1) * ld + inner;
                    for (std::int64_t stride = 0; stride <= extent; ++stride) {
                        for (std::int64_t count = 0; count <= 12; ++count) {
                            std::vector<int> hits(static_cast<std::size_t>(12 * extent + extent),
                                                  0);
                            bool expected = false;
                            for (std::int64_t t = 0; t < count; ++t) {
                                for (const std::int64_t offset : offsets) {
                                    expected |=
                                        ++hits[static_cast<std::size_t>(t * stride + offset)] > 1;
                                }
                            }
                            INFO("outer " << outer << " inner " << inner << " ld " << ld
                                          << " stride " << stride << " count " << count);
                            REQUIRE(gpu::matrix::detail::batch_overlaps(shape, count, stride) ==
                                    expected);
                        }
                    }
                }
            }
        }
    }
}

TEST_CASE("a matrix spanning more bytes than an address holds is refused, not wrapped", "[matrix]")
{
    // (2^30 + 1) * (2^31 - 1) + 1 elements of 8 bytes are 2^64 + 2^33 bytes: the overlap check
    // used to wrap that round to 8 GiB.
    const std::int64_t rows = (std::int64_t{1} << 30) + 2;
    const std::int64_t ld = std::numeric_limits<std::int32_t>::max();
    auto* const a = reinterpret_cast<const double*>(std::uintptr_t{0x100000});
    auto* const b = reinterpret_cast<const double*>(std::uintptr_t{0x200000});
    auto* const c = reinterpret_cast<double*>(std::uintptr_t{0x300000});
    CHECK_THROWS_WITH(
        gpu::matrix::plan_gemm(gpu::matrix::matrix_view<const double>(a, rows, 1, ld, row),
                               gpu::matrix::matrix_view<const double>(b, 1, 1, row),
                               gpu::matrix::matrix_view<double>(c, rows, 1, row)),
        ContainsSubstring("1 matrix a") && ContainsSubstring("span more memory than exists"));
}
