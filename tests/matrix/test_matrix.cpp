// gpu/matrix/matrix.hpp: the matrix view, its transposes, and the checked factories.
#include <gpu/matrix/matrix.hpp>

#include "catch.hpp"

#include <array>
#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;

static_assert(std::is_trivially_copyable_v<gpu::matrix::matrix_view<float>>);
static_assert(
    std::is_convertible_v<gpu::matrix::matrix_view<float>, gpu::matrix::matrix_view<const float>>);
static_assert(
    !std::is_convertible_v<gpu::matrix::matrix_view<const float>, gpu::matrix::matrix_view<float>>);

TEST_CASE("a view knows its shape, tight leading dimension, size and extent", "[matrix]")
{
    std::vector<float> storage(12);
    const auto r = gpu::matrix::row_major(storage.data(), 3, 4);
    CHECK(r.rows() == 3);
    CHECK(r.cols() == 4);
    CHECK(r.leading_dimension() == 4);
    CHECK(r.order() == gpu::matrix::layout::row_major);
    CHECK(r.size() == 12);
    CHECK(r.extent() == 12);
    CHECK(r.to_string() == "3x4 row-major (ld 4)");
    const auto c = gpu::matrix::column_major(storage.data(), 3, 4);
    CHECK(c.leading_dimension() == 3);
    CHECK(c.to_string() == "3x4 column-major (ld 3)");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CHECK(c.describe() == c.to_string()); // the old name, one release
#pragma GCC diagnostic pop
    // A block of a wider matrix: 2 rows of 3, rows 5 apart, spans 5 + 3 elements.
    const gpu::matrix::matrix_view<float> block(storage.data(), 2, 3, 5,
                                                gpu::matrix::layout::row_major);
    CHECK(block.extent() == 8);
    CHECK(block.min_leading_dimension() == 3);
    CHECK(gpu::matrix::matrix_view<float>(storage.data(), 0, 4).extent() == 0);
    CHECK(gpu::matrix::matrix_view<float>(storage.data(), 0, 0).leading_dimension() == 1);
}

TEST_CASE("a transpose is the same memory seen the other way", "[matrix]")
{
    std::array<double, 6> storage{1, 2, 3, 4, 5, 6};
    const auto a = gpu::matrix::row_major(storage.data(), 2, 3); // [[1 2 3] [4 5 6]]
    const auto t = a.transposed();
    CHECK(t.rows() == 3);
    CHECK(t.cols() == 2);
    CHECK(t.order() == gpu::matrix::layout::column_major);
    CHECK(t.leading_dimension() == 3);
    CHECK(t.data() == a.data());
    // (tᵀ)(i, j) = a(j, i): column-major element (2, 1) is at 2 + 1 * 3 = 5, a(1, 2) = 6.
    CHECK(t.data()[2 + 1 * t.leading_dimension()] == 6.0);
    const auto back = t.transposed();
    CHECK(back.order() == gpu::matrix::layout::row_major);
    CHECK(back.rows() == 2);
    CHECK(back.to_string() == a.to_string());
}

TEST_CASE("the container factories check the container holds the matrix", "[matrix]")
{
    std::vector<float> storage(12);
    const auto v = gpu::matrix::row_major(storage, 3, 4);
    static_assert(std::is_same_v<decltype(v), const gpu::matrix::matrix_view<float>>);
    const auto cv = gpu::matrix::row_major(std::as_const(storage), 3, 4);
    static_assert(std::is_same_v<decltype(cv), const gpu::matrix::matrix_view<const float>>);
    CHECK(gpu::matrix::column_major(storage, 4, 3).leading_dimension() == 4);
    CHECK(gpu::matrix::row_major(storage, 2, 3, 6).extent() == 9);
    CHECK_THROWS_WITH(
        gpu::matrix::row_major(storage, 4, 4),
        ContainsSubstring("gpu::matrix::row_major: a 4x4 row-major (ld 4) matrix spans 16 "
                          "elements but the storage holds 12"));
    CHECK_THROWS_WITH(gpu::matrix::column_major(storage, 3, 5),
                      ContainsSubstring("gpu::matrix::column_major") &&
                          ContainsSubstring("spans 15"));
    CHECK_THROWS_WITH(
        gpu::matrix::row_major(storage, 2, 4, 3),
        ContainsSubstring("leading dimension 3 is smaller than allowed for 2x4 row-major (ld 3) "
                          "(at least 4)"));
    CHECK_THROWS_WITH(gpu::matrix::row_major(storage, -1, 4),
                      ContainsSubstring("negative size -1x4"));
    std::array<float, 4> fixed{};
    CHECK(gpu::matrix::column_major(fixed, 2, 2).size() == 4);
}

TEST_CASE("a shape whose span overflows 64 bits is refused, not wrapped to a small number",
          "[matrix]")
{
    // (outer - 1) * ld + inner wraps round to a few elements in 64-bit arithmetic for these, so
    // before the span was computed with overflow checks each seemed to fit a 12-element vector.
    std::vector<float> storage(12);
    constexpr std::int64_t big = std::int64_t{1} << 62;
    CHECK_THROWS_WITH(gpu::matrix::row_major(storage, 5, 1, big),
                      ContainsSubstring("gpu::matrix::row_major") &&
                          ContainsSubstring("more than 2^63") &&
                          ContainsSubstring("the storage holds 12"));
    CHECK_THROWS_WITH(gpu::matrix::column_major(storage, 1, 5, big),
                      ContainsSubstring("gpu::matrix::column_major") &&
                          ContainsSubstring("more than 2^63"));
    CHECK_THROWS_AS(gpu::matrix::row_major(storage, big, big), std::invalid_argument);
    CHECK_THROWS_AS(gpu::matrix::row_major(storage, INT64_MAX, 1), std::invalid_argument);
    // The unchecked constructor stores anything; the queries then refuse instead of overflowing.
    const gpu::matrix::matrix_view<float> huge(storage.data(), big, big);
    CHECK_THROWS_WITH(huge.size(), ContainsSubstring("more elements than 64 bits can count"));
    CHECK_THROWS_WITH(huge.extent(),
                      ContainsSubstring("spans more elements than 64 bits can count"));
    const gpu::matrix::matrix_view<float> wide(storage.data(), 3, 2, INT64_MAX,
                                               gpu::matrix::layout::row_major);
    CHECK_THROWS_AS(wide.extent(), std::invalid_argument);
    CHECK(gpu::matrix::matrix_view<float>(storage.data(), 1, 2, INT64_MAX,
                                          gpu::matrix::layout::row_major)
              .extent() == 2);
}

TEST_CASE("the checked arithmetic agrees with the compiler's overflow built-ins at the edges",
          "[matrix]")
{
    const std::int64_t edges[] = {INT64_MIN,
                                  INT64_MIN + 1,
                                  -(std::int64_t{1} << 32),
                                  -3,
                                  -1,
                                  0,
                                  1,
                                  2,
                                  3,
                                  std::int64_t{1} << 31,
                                  (std::int64_t{1} << 32) + 1,
                                  INT64_MAX - 1,
                                  INT64_MAX};
    for (const std::int64_t a : edges) {
        for (const std::int64_t b : edges) {
            std::int64_t reference = 0;
            std::int64_t result = 0;
            const bool product_fits = !__builtin_mul_overflow(a, b, &reference);
            REQUIRE(gpu::matrix::detail::checked_multiply(a, b, result) == product_fits);
            CHECK((!product_fits || result == reference));
            const bool sum_fits = !__builtin_add_overflow(a, b, &reference);
            REQUIRE(gpu::matrix::detail::checked_add(a, b, result) == sum_fits);
            CHECK((!sum_fits || result == reference));
        }
    }
}
