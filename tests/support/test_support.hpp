// Helpers shared by cudagap's tests: accuracy against float64 references, poisoning, random
// inputs. Header-only, test code only.
#pragma once

#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpu::test {

/// ‖out − ref‖₂ / ‖ref‖₂, the accuracy measure of DESIGN.md. NaN anywhere in @p out (an
/// unwritten, poisoned element) makes the result NaN, which fails every bound.
template <class Out>
double relative_error(std::span<const Out> out, std::span<const double> ref)
{
    if (out.size() != ref.size()) {
        throw std::invalid_argument("relative_error: " + std::to_string(out.size()) +
                                    " outputs against " + std::to_string(ref.size()) + " references");
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

/// @p n values uniform in [-1, 1) from a fixed seed; never all zeros.
inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed)
{
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
    std::vector<float> values(n);
    for (auto& v : values) {
        v = dist(engine);
    }
    return values;
}

/// A vector of @p n quiet NaNs, to fill outputs before a run so unwritten elements show.
template <class T = float>
std::vector<T> poisoned(std::size_t n)
{
    return std::vector<T>(n, std::numeric_limits<T>::quiet_NaN());
}

} // namespace gpu::test
