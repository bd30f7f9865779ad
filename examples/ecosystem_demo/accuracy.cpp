// cudagap-demo's accuracy check (accuracy.hpp): a float64 reference on sampled rows, and the
// verdict by precision.
#include "accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

namespace demo {

double error_bound(gpu::blas::precision p) noexcept
{
    switch (p) {
    case gpu::blas::precision::fp64: return 1e-12;
    case gpu::blas::precision::fp32: return 1e-5;
    case gpu::blas::precision::tf32: return 1e-3;
    case gpu::blas::precision::fp16:
    case gpu::blas::precision::bf16: return 1e-2;
    }
    return 0.0; // an unknown precision has no bound: every result of it is wrong
}

std::vector<std::int64_t> rows_to_check(std::int64_t n, double budget)
{
    if (n < 1 || !(budget > 0.0)) {
        throw std::invalid_argument("rows_to_check: n " + std::to_string(n) + " and budget " +
                                    std::to_string(budget) + " must both be positive");
    }
    const double per_row = static_cast<double>(n) * static_cast<double>(n);
    const auto affordable = static_cast<std::int64_t>(std::min(budget / per_row, 1e18));
    const std::int64_t count = std::clamp(affordable, std::min<std::int64_t>(n, 8), n);
    std::vector<std::int64_t> rows(static_cast<std::size_t>(count));
    for (std::int64_t r = 0; r < count; ++r) {
        // Evenly spaced, 0 and n - 1 included; distinct because count - 1 < n - 1 when sampling.
        rows[static_cast<std::size_t>(r)] = count == n ? r : r * (n - 1) / (count - 1);
    }
    return rows;
}

namespace {

void check_size(const char* name, std::size_t size, std::int64_t n)
{
    const auto expected = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    if (size != expected) {
        throw std::invalid_argument(std::string("check_gemm: ") + name + " holds " +
                                    std::to_string(size) + " values, not " + std::to_string(n) +
                                    " x " + std::to_string(n));
    }
}

std::string scientific(double value, const char* format)
{
    char text[32];
    std::snprintf(text, sizeof text, format, value);
    return text;
}

} // namespace

accuracy check_gemm(std::span<const float> a, std::span<const float> b, std::span<const float> out,
                    std::int64_t n, double budget)
{
    if (n < 1) {
        throw std::invalid_argument("check_gemm: n is " + std::to_string(n) + "; it must be >= 1");
    }
    check_size("a", a.size(), n);
    check_size("b", b.size(), n);
    check_size("out", out.size(), n);
    accuracy result;
    result.rows = n;
    result.non_finite =
        std::count_if(out.begin(), out.end(), [](float v) { return !std::isfinite(v); });
    const auto width = static_cast<std::size_t>(n);
    std::vector<double> reference(width);
    double difference = 0.0;
    double norm = 0.0;
    for (const std::int64_t row : rows_to_check(n, budget)) {
        // Row `row` of a·b in float64: the rows of b, each scaled by one element of a's row.
        std::fill(reference.begin(), reference.end(), 0.0);
        const float* a_row = a.data() + static_cast<std::size_t>(row) * width;
        for (std::size_t k = 0; k < width; ++k) {
            const double scale = a_row[k];
            const float* b_row = b.data() + k * width;
            for (std::size_t j = 0; j < width; ++j) {
                reference[j] += scale * static_cast<double>(b_row[j]);
            }
        }
        const float* out_row = out.data() + static_cast<std::size_t>(row) * width;
        for (std::size_t j = 0; j < width; ++j) {
            const double d = static_cast<double>(out_row[j]) - reference[j];
            difference += d * d;
            norm += reference[j] * reference[j];
        }
        ++result.rows_checked;
    }
    if (norm == 0.0) {
        throw std::invalid_argument("check_gemm: the reference rows are all zeros, so no relative "
                                    "error exists; use random, non-zero inputs");
    }
    result.relative_error = std::sqrt(difference) / std::sqrt(norm);
    return result;
}

verdict judge(gpu::blas::precision which, const accuracy& measured)
{
    verdict v;
    v.which = which;
    v.measured = measured;
    v.bound = error_bound(which);
    // Written so that a NaN error (which compares false) is wrong.
    v.correct = measured.non_finite == 0 && measured.relative_error < v.bound;
    return v;
}

std::string verdict::to_string() const
{
    const std::string name(gpu::blas::to_string(which));
    const std::string error = scientific(measured.relative_error, "%.1e");
    const std::string limit = scientific(bound, "%.0e");
    const std::string basis = "float64 reference on " + std::to_string(measured.rows_checked) +
                              " of " + std::to_string(measured.rows) + " rows";
    if (correct) {
        return name + " result correct: relative error " + error + " < bound " + limit + " (" +
               basis + ")";
    }
    if (measured.non_finite > 0) {
        return "WRONG: " + std::to_string(measured.non_finite) + " of the " + name + " result's " +
               std::to_string(measured.rows * measured.rows) +
               " elements are NaN or Inf (relative error " + error + ", bound " + limit + "; " +
               basis + ")";
    }
    return "WRONG: " + name + " result's relative error " + error + " is not below its bound " +
           limit + " (" + basis + ")";
}

int exit_status(const std::vector<verdict>& verdicts) noexcept
{
    const bool all_correct =
        std::all_of(verdicts.begin(), verdicts.end(), [](const verdict& v) { return v.correct; });
    return all_correct ? 0 : exit_wrong_result;
}

} // namespace demo
