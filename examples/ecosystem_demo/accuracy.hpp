// cudagap-demo's accuracy check: each GPU GEMM result against a float64 reference computed on the
// CPU, judged by the bound of its precision. Pure functions over numbers (no GPU, no CUDA call),
// so that the judging is tested on any host (tests/examples/test_demo_accuracy.cpp).
#pragma once

#include <gpu/blas/capabilities.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace demo {

/// The exit status of a run in which a GPU result was past its bound.
inline constexpr int exit_wrong_result = 3;

/// The largest relative error ‖out − ref‖ / ‖ref‖ that a GEMM of precision @p p may have against
/// a float64 reference: FP64 1e-12, FP32 1e-5, TF32 1e-3, FP16 and BF16 1e-2 (cudagap's design
/// bounds, the ones its tests hold every GEMM to).
[[nodiscard]] double error_bound(gpu::blas::precision p) noexcept;

/// What comparing one result with its reference found.
struct accuracy {
    /// ‖out − ref‖ / ‖ref‖ over the rows checked; NaN when a NaN reached those rows.
    double relative_error = 0.0;
    std::int64_t rows_checked = 0; ///< rows of the result compared with the reference
    std::int64_t rows = 0;         ///< rows of the result
    /// NaN or Inf elements anywhere in the result (an element left unwritten stays the NaN it
    /// was poisoned with before the run).
    std::int64_t non_finite = 0;
};

/// The default work of a reference: 2^29 multiply-adds, under a second on one core (every row up
/// to n = 812, 33 rows at n = 4000).
inline constexpr double reference_budget = 536870912.0;

/// The rows of an @p n x @p n result that the reference recomputes: every row while the
/// reference's n x n x rows multiply-adds fit @p budget, else as many rows as fit (at least
/// min(n, 8)), evenly spaced with the first and the last among them, in increasing order.
/// @throws std::invalid_argument when @p n < 1 or @p budget <= 0
[[nodiscard]] std::vector<std::int64_t> rows_to_check(std::int64_t n,
                                                      double budget = reference_budget);

/// Compares @p out (row-major @p n x @p n) with the float64 product of @p a and @p b (row-major
/// @p n x @p n, the values the GPU multiplied) on `rows_to_check(n, budget)`, and counts NaN and
/// Inf in all of @p out.
/// @throws std::invalid_argument when a span does not hold n x n values, for a bad @p n or
/// @p budget, or when the reference rows are all zeros
[[nodiscard]] accuracy check_gemm(std::span<const float> a, std::span<const float> b,
                                  std::span<const float> out, std::int64_t n,
                                  double budget = reference_budget);

/// The judgement of one result.
struct verdict {
    gpu::blas::precision which = gpu::blas::precision::fp32; ///< the precision it ran in
    accuracy measured{};                                     ///< what the check found
    double bound = 0.0;                                      ///< `error_bound(which)`
    /// Every element finite and the relative error below the bound.
    bool correct = false;

    /// One line: `FP32 result correct: relative error 2.1e-07 < bound 1e-05 (float64 reference
    /// on 536 of 1000 rows)`, or one that starts with `WRONG:` and gives the error (or the count
    /// of NaN/Inf elements) and the bound.
    [[nodiscard]] std::string to_string() const;
};

/// Judges @p measured by the bound of @p which. A NaN error is wrong, as is any NaN or Inf
/// element: a result is correct only when its error is a number below the bound.
[[nodiscard]] verdict judge(gpu::blas::precision which, const accuracy& measured);

/// 0 when every verdict is correct (or there is none), `exit_wrong_result` otherwise.
[[nodiscard]] int exit_status(const std::vector<verdict>& verdicts) noexcept;

} // namespace demo
