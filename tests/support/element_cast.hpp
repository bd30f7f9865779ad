// Host conversions between double and the element types of device data (float, __half,
// __nv_bfloat16), for the float64 references of the tests: `narrow` rounds once to nearest even,
// `widen` is exact. The one home of these conversions for every test suite (blas, dnn, nn).
// Header-only, test code only.
#pragma once

#include "test_support.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>

#include <type_traits>
#include <vector>

namespace gpu::test {

/// @p value rounded to T (through float for FP16 and BF16, as the device's data would be made).
template <class T>
T narrow(double value)
{
    if constexpr (std::is_same_v<T, __half>) {
        return __float2half(static_cast<float>(value));
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        return __float2bfloat16(static_cast<float>(value));
    } else {
        return static_cast<T>(value);
    }
}

/// @p value as a double (exact).
template <class T>
double widen(T value)
{
    if constexpr (std::is_same_v<T, __half>) {
        return static_cast<double>(__half2float(value));
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        return static_cast<double>(__bfloat162float(value));
    } else {
        return static_cast<double>(value);
    }
}

/// Every element of @p values (any arithmetic type) rounded to T, one `narrow` each.
template <class T, class From>
std::vector<T> narrowed(const std::vector<From>& values)
{
    std::vector<T> out;
    out.reserve(values.size());
    for (const From v : values) {
        out.push_back(narrow<T>(static_cast<double>(v)));
    }
    return out;
}

/// Every element of @p values as a double.
template <class T>
std::vector<double> widened(const std::vector<T>& values)
{
    std::vector<double> out;
    out.reserve(values.size());
    for (const T v : values) {
        out.push_back(widen(v));
    }
    return out;
}

/// Values rounded to T as the device stores them, and the same values as doubles.
template <class T>
struct rounded_values {
    std::vector<T> stored;      ///< what goes to the device
    std::vector<double> values; ///< the same, exactly, for the reference
};

/// @p n values uniform in [-1, 1) from @p seed, rounded to T.
template <class T>
rounded_values<T> rounded_random(std::size_t n, std::uint32_t seed)
{
    rounded_values<T> out;
    for (const double x : random_doubles(n, seed)) {
        out.stored.push_back(narrow<T>(x));
        out.values.push_back(widen(out.stored.back()));
    }
    return out;
}

} // namespace gpu::test
