// cudagap-demo's judging and sizes (examples/ecosystem_demo: accuracy.hpp, sizes.hpp), on the
// host: the bounds by precision, the verdicts (a NaN error, a NaN element anywhere, an error at
// the bound), the exit status, the rows the float64 reference recomputes, the comparison itself
// on small products with one element wrong, and the naive loop's cap on the CPU sizes.
#include "accuracy.hpp"
#include "sizes.hpp"

#include "catch.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using gpu::blas::precision;

namespace {

// What outputs are poisoned with before a run.
const float poison_value = std::numeric_limits<float>::quiet_NaN();

struct product {
    std::int64_t n;
    std::vector<float> a, b, out; // out: the float64 product rounded to float
};

// Random n x n inputs in [-1, 1) and their product as a correct GPU would give it.
product random_product(std::int64_t n, std::uint32_t seed)
{
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
    const auto count = static_cast<std::size_t>(n * n);
    product p{n, std::vector<float>(count), std::vector<float>(count), std::vector<float>(count)};
    for (std::size_t i = 0; i < count; ++i) {
        p.a[i] = dist(engine);
        p.b[i] = dist(engine);
    }
    for (std::int64_t i = 0; i < n; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            double sum = 0.0;
            for (std::int64_t k = 0; k < n; ++k) {
                sum += static_cast<double>(p.a[i * n + k]) * p.b[k * n + j];
            }
            p.out[i * n + j] = static_cast<float>(sum);
        }
    }
    return p;
}

demo::accuracy measured(double error, std::int64_t non_finite = 0)
{
    return {.relative_error = error, .rows_checked = 33, .rows = 4000, .non_finite = non_finite};
}

} // namespace

TEST_CASE("each precision's bound is the design's", "[demo]")
{
    CHECK(demo::error_bound(precision::fp32) == 1e-5);
    CHECK(demo::error_bound(precision::tf32) == 1e-3);
    CHECK(demo::error_bound(precision::fp16) == 1e-2);
    CHECK(demo::error_bound(precision::bf16) == 1e-2);
    CHECK(demo::error_bound(precision::fp64) == 1e-12);
}

TEST_CASE("a result is correct only below its bound, with no NaN anywhere", "[demo]")
{
    const demo::verdict good = demo::judge(precision::fp32, measured(2.1e-7));
    CHECK(good.correct);
    CHECK(good.bound == 1e-5);
    CHECK(good.to_string() == "FP32 result correct: relative error 2.1e-07 < bound 1e-05 "
                              "(float64 reference on 33 of 4000 rows)");

    const demo::verdict over = demo::judge(precision::fp32, measured(3.4e-2));
    CHECK_FALSE(over.correct);
    CHECK(over.to_string() == "WRONG: FP32 result's relative error 3.4e-02 is not below its "
                              "bound 1e-05 (float64 reference on 33 of 4000 rows)");
    // The same error is within FP16's bound: the bound follows the precision.
    CHECK(demo::judge(precision::fp16, measured(3.4e-3)).correct);
    CHECK_FALSE(demo::judge(precision::tf32, measured(3.4e-3)).correct);
    CHECK_FALSE(demo::judge(precision::bf16, measured(1e-2)).correct); // at the bound: not below

    const demo::verdict not_a_number =
        demo::judge(precision::bf16, measured(std::numeric_limits<double>::quiet_NaN()));
    CHECK_FALSE(not_a_number.correct);
    CHECK_THAT(not_a_number.to_string(), StartsWith("WRONG: BF16 result's relative error nan"));

    const demo::verdict poisoned = demo::judge(precision::tf32, measured(1e-4, 12));
    CHECK_FALSE(poisoned.correct);
    CHECK_THAT(poisoned.to_string(),
               StartsWith("WRONG: 12 of the TF32 result's 16000000 elements are NaN or Inf") &&
                   ContainsSubstring("bound 1e-03"));
}

TEST_CASE("the exit status is non-zero when any result is wrong", "[demo]")
{
    CHECK(demo::exit_status({}) == 0);
    const demo::verdict good = demo::judge(precision::fp16, measured(1e-4));
    const demo::verdict bad = demo::judge(precision::fp16, measured(0.5));
    CHECK(demo::exit_status({good, good}) == 0);
    CHECK(demo::exit_status({good, bad, good}) == demo::exit_wrong_result);
    CHECK(demo::exit_wrong_result != 0);
    CHECK(demo::exit_wrong_result != 1); // 1: something failed; 2: a bad command line
    CHECK(demo::exit_wrong_result != 2);
}

TEST_CASE("the reference recomputes every row of small results, spread rows of large ones",
          "[demo]")
{
    CHECK(demo::rows_to_check(1) == std::vector<std::int64_t>{0});
    CHECK(demo::rows_to_check(812).size() == 812);
    const std::vector<std::int64_t> large = demo::rows_to_check(4000);
    REQUIRE(large.size() == 33);
    CHECK(large.front() == 0);
    CHECK(large.back() == 3999);
    for (std::size_t i = 1; i < large.size(); ++i) {
        CHECK(large[i] > large[i - 1]);
    }
    CHECK(demo::rows_to_check(32768).size() == 8); // at least 8, whatever the budget
    CHECK(demo::rows_to_check(5, 1.0).size() == 5);
    CHECK(demo::rows_to_check(100, 100.0 * 100 * 10).size() == 10);
    CHECK_THROWS_AS(demo::rows_to_check(0), std::invalid_argument);
    CHECK_THROWS_AS(demo::rows_to_check(10, 0.0), std::invalid_argument);
}

TEST_CASE("the comparison finds a wrong element, a NaN, and an unwritten output", "[demo]")
{
    product p = random_product(48, 7);
    const double every_row = 48.0 * 48 * 48;
    const demo::accuracy exact = demo::check_gemm(p.a, p.b, p.out, p.n, every_row);
    CHECK(exact.rows_checked == 48);
    CHECK(exact.rows == 48);
    CHECK(exact.non_finite == 0);
    CHECK(exact.relative_error < 1e-7); // float rounding of the product only
    CHECK(demo::judge(precision::fp32, exact).correct);

    // One element 1 off (of 2304 around 2.3 in size): an error near 1e-2, far over FP32's bound.
    p.out[5 * 48 + 17] += 1.0F;
    const demo::accuracy off = demo::check_gemm(p.a, p.b, p.out, p.n, every_row);
    CHECK(off.relative_error > 1e-5);
    CHECK_FALSE(demo::judge(precision::fp32, off).correct);
    CHECK(demo::judge(precision::fp16, off).correct == (off.relative_error < 1e-2));
    p.out[5 * 48 + 17] -= 1.0F;

    // Eight of 48 rows checked: a NaN in a row the reference skips is still found.
    const std::vector<std::int64_t> checked = demo::rows_to_check(48, 48.0 * 48 * 8);
    REQUIRE(checked.size() == 8);
    REQUIRE(checked[1] > 1); // row 1 is not checked
    p.out[1 * 48 + 3] = poison_value;
    const demo::accuracy hidden = demo::check_gemm(p.a, p.b, p.out, p.n, 48.0 * 48 * 8);
    CHECK(hidden.rows_checked == 8);
    CHECK(hidden.non_finite == 1);
    CHECK(std::isfinite(hidden.relative_error));
    CHECK_FALSE(demo::judge(precision::bf16, hidden).correct);

    // An output the GPU never wrote stays the NaN it was poisoned with.
    const std::vector<float> untouched(p.out.size(), poison_value);
    const demo::accuracy unwritten = demo::check_gemm(p.a, p.b, untouched, p.n, every_row);
    CHECK(unwritten.non_finite == 48 * 48);
    CHECK(std::isnan(unwritten.relative_error));
    CHECK_THAT(demo::judge(precision::fp16, unwritten).to_string(),
               StartsWith("WRONG: 2304 of the FP16 result's 2304 elements are NaN or Inf"));
}

TEST_CASE("the comparison refuses sizes that do not match and an all-zero reference", "[demo]")
{
    const product p = random_product(4, 1);
    CHECK_THROWS_WITH(demo::check_gemm(p.a, p.b, std::vector<float>(15), 4),
                      ContainsSubstring("out holds 15 values, not 4 x 4"));
    CHECK_THROWS_WITH(demo::check_gemm(std::vector<float>(9), p.b, p.out, 4),
                      ContainsSubstring("a holds 9 values"));
    CHECK_THROWS_AS(demo::check_gemm(p.a, p.b, p.out, 0), std::invalid_argument);
    const std::vector<float> zeros(16, 0.0F);
    CHECK_THROWS_WITH(demo::check_gemm(zeros, p.b, p.out, 4), ContainsSubstring("all zeros"));
}

TEST_CASE("the naive loop times only sizes up to 500, as bench/gemm does", "[demo]")
{
    const auto blas = demo::plan_sizes({1000, 2000, 4000}, false);
    REQUIRE(blas.size() == 3);
    for (const demo::size_plan& s : blas) {
        CHECK(s.cpu);
        CHECK_FALSE(s.added);
    }

    // The default sizes on the naive loop: 500 added first, the others without the CPU side.
    const auto naive = demo::plan_sizes({1000, 2000, 4000}, true);
    REQUIRE(naive.size() == 4);
    CHECK(naive[0].n == demo::naive_size_cap);
    CHECK(naive[0].cpu);
    CHECK(naive[0].added);
    for (std::size_t i = 1; i < naive.size(); ++i) {
        CHECK_FALSE(naive[i].cpu);
        CHECK_FALSE(naive[i].added);
    }
    CHECK(naive[3].n == 4000);

    // A small size asked for is timed; nothing is added then.
    const auto small = demo::plan_sizes({256, 512, 500}, true);
    REQUIRE(small.size() == 3);
    CHECK(small[0].cpu);
    CHECK_FALSE(small[1].cpu);
    CHECK(small[2].cpu);
    CHECK_FALSE(small[0].added);
}
