// Helpers shared by cudagap's tests: accuracy against float64 references, poisoning, random
// inputs. Header-only, test code only.
#pragma once

#include "catch.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace gpu::test {

/// ‖out − ref‖₂ / ‖ref‖₂, the accuracy measure of docs/precisions.md. NaN anywhere in @p out (an
/// unwritten, poisoned element) makes the result NaN, which fails every bound.
template <class Out>
double relative_error(std::span<const Out> out, std::span<const double> ref)
{
    if (out.size() != ref.size()) {
        throw std::invalid_argument("relative_error: " + std::to_string(out.size()) +
                                    " outputs against " + std::to_string(ref.size()) +
                                    " references");
    }
    double diff = 0.0;
    double norm = 0.0;
    for (std::size_t i = 0; i < out.size(); ++i) {
        const double value = static_cast<double>(out[i]);
        diff += (value - ref[i]) * (value - ref[i]);
        norm += ref[i] * ref[i];
    }
    if (norm == 0.0) {
        throw std::invalid_argument("relative_error: the reference is all zeros");
    }
    return std::sqrt(diff) / std::sqrt(norm);
}

/// @p n values of type T uniform in [-1, 1) from a fixed seed; never all zeros.
template <class T>
std::vector<T> random_uniform(std::size_t n, std::uint32_t seed)
{
    std::mt19937 engine(seed);
    std::uniform_real_distribution<T> dist(T(-1), T(1));
    std::vector<T> values(n);
    for (auto& v : values) {
        v = dist(engine);
    }
    return values;
}

/// @p n floats uniform in [-1, 1) from a fixed seed; never all zeros.
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed)
{
    return random_uniform<float>(n, seed);
}

/// A vector of @p n quiet NaNs, to fill outputs before a run so unwritten elements show.
template <class T = float>
std::vector<T> poisoned(std::size_t n)
{
    return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
}

/// Element (i, j) of a host matrix view (anything with data(), leading_dimension() and an
/// order() whose enum has row_major, such as gpu::matrix::matrix_view), as a double.
template <class View>
double element_at(const View& view, std::int64_t i, std::int64_t j)
{
    using order_type = std::decay_t<decltype(view.order())>;
    const std::int64_t offset = view.order() == order_type::row_major
                                    ? i * view.leading_dimension() + j
                                    : i + j * view.leading_dimension();
    return static_cast<double>(view.data()[offset]);
}

/// The logical elements of a host matrix view, row by row, as doubles (padding left out).
template <class View>
std::vector<double> gather(const View& view)
{
    std::vector<double> values;
    values.reserve(static_cast<std::size_t>(view.rows() * view.cols()));
    for (std::int64_t i = 0; i < view.rows(); ++i) {
        for (std::int64_t j = 0; j < view.cols(); ++j) {
            values.push_back(element_at(view, i, j));
        }
    }
    return values;
}

/// The float64 reference of alpha·a·b + beta·c for host views, row by row (c is read only when
/// beta is not 0, as in BLAS).
template <class A, class B, class C>
std::vector<double> reference_gemm(const A& a, const B& b, const C& c, double alpha, double beta)
{
    if (a.cols() != b.rows() || c.rows() != a.rows() || c.cols() != b.cols()) {
        throw std::invalid_argument("reference_gemm: shapes do not match");
    }
    std::vector<double> result;
    result.reserve(static_cast<std::size_t>(c.rows() * c.cols()));
    for (std::int64_t i = 0; i < c.rows(); ++i) {
        for (std::int64_t j = 0; j < c.cols(); ++j) {
            double sum = 0.0;
            for (std::int64_t p = 0; p < a.cols(); ++p) {
                sum += element_at(a, i, p) * element_at(b, p, j);
            }
            result.push_back(alpha * sum + (beta == 0.0 ? 0.0 : beta * element_at(c, i, j)));
        }
    }
    return result;
}

/// @p n doubles uniform in [-1, 1) from a fixed seed.
inline std::vector<double> random_doubles(std::size_t n, std::uint32_t seed)
{
    return random_uniform<double>(n, seed);
}

} // namespace gpu::test
