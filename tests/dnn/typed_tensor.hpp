// Device tensors of float, __half or __nv_bfloat16 for the [gpu] tests of the typed operations
// (pooling, activation, softmax, dropout): values in logical order as doubles (exactly what the
// device holds, after rounding to the type), stored in a layout, outputs poisoned with NaN.
// Test code only.
#pragma once

#include "reference_convolution.hpp" // to_storage, from_storage

#include <gpu/dnn/element.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

namespace gpu::test {

/// @p value rounded to T.
template <class T>
T to_element(double value)
{
    const auto single = static_cast<float>(value);
    if constexpr (std::is_same_v<T, float>) {
        return single;
    } else if constexpr (std::is_same_v<T, __half>) {
        return __float2half(single);
    } else {
        return __float2bfloat16(single);
    }
}

/// @p value as a double (exact).
template <class T>
double to_double_value(T value)
{
    if constexpr (std::is_same_v<T, float>) {
        return value;
    } else if constexpr (std::is_same_v<T, __half>) {
        return static_cast<double>(__half2float(value));
    } else {
        return static_cast<double>(__bfloat162float(value));
    }
}

/// The tolerance of DESIGN.md for a relative error in T: 1e-5 for fp32, 1e-2 for fp16/bf16.
template <class T>
constexpr double tolerance_of()
{
    return std::is_same_v<T, float> ? 1e-5 : 1e-2;
}

/// @p n distinct values in a random order: the integers -n/2 ... n/2 - 1 divided by 2^scale_bits
/// (exact in every type when n <= 512: bf16 holds the integers up to 256 exactly). Distinct
/// values give max pooling one maximum per window, so its gradient has one place to go.
inline std::vector<double> distinct_values(std::size_t n, std::uint32_t seed, int scale_bits = 8)
{
    std::vector<double> values(n);
    std::iota(values.begin(), values.end(), -static_cast<double>(n / 2));
    std::shuffle(values.begin(), values.end(), std::mt19937(seed));
    for (double& v : values) {
        v = std::ldexp(v, -scale_bits);
    }
    return values;
}

/// @p n values uniform in [-1, -1/64] and [1/64, 1), from a fixed seed: never zero, so that
/// the derivative of ReLU (and the kept/zeroed test of dropout) is defined at every one.
inline std::vector<double> nonzero_values(std::size_t n, std::uint32_t seed)
{
    std::mt19937 engine(seed);
    std::uniform_real_distribution<double> magnitude(1.0 / 64, 1.0);
    std::bernoulli_distribution negative(0.5);
    std::vector<double> values(n);
    for (double& v : values) {
        v = negative(engine) ? -magnitude(engine) : magnitude(engine);
    }
    return values;
}

/// A packed device tensor of T in a layout, with the logical values it was given.
template <class T>
struct device_tensor {
    std::vector<int> dims;
    dnn::tensor_layout layout;
    gpu::device_buffer<T> buffer;
    std::vector<double> values; // logical order, as the device holds them

    device_tensor(std::vector<int> d, dnn::tensor_layout l, gpu::stream_ref s)
        : dims(std::move(d)), layout(l), buffer(element_count(), s)
    {
        poison();
    }

    [[nodiscard]] std::size_t element_count() const
    {
        std::size_t count = 1;
        for (const int d : dims) {
            count *= static_cast<std::size_t>(d);
        }
        return count;
    }

    /// Rounds @p logical to T, stores it in the layout, and keeps the rounded values.
    void upload(const std::vector<double>& logical)
    {
        std::vector<T> typed(logical.size());
        values.resize(logical.size());
        for (std::size_t i = 0; i < logical.size(); ++i) {
            typed[i] = to_element<T>(logical[i]);
            values[i] = to_double_value(typed[i]);
        }
        buffer.copy_from_host(to_storage(typed, dims, layout));
    }

    /// Fills the buffer with NaN, so that an element an operation does not write shows.
    void poison()
    {
        buffer.copy_from_host(std::vector<T>(element_count(), to_element<T>(std::numeric_limits<double>::quiet_NaN())));
        values.clear();
    }

    /// The device's values in logical order; waits for @p s first.
    [[nodiscard]] std::vector<double> download(gpu::stream_ref s) const
    {
        s.synchronize();
        const std::vector<T> logical = from_storage(buffer.to_host(), dims, layout);
        std::vector<double> result(logical.size());
        for (std::size_t i = 0; i < logical.size(); ++i) {
            result[i] = to_double_value(logical[i]);
        }
        return result;
    }
};

/// A handle object that holds a pointer which is no cuDNN context, for the checks that must
/// refuse an argument (a null buffer pointer) before any cuDNN call, on a machine without a GPU.
/// It is never used for a call, and released unused.
class fake_handle {
public:
    fake_handle() : handle(gpu::dnn::handle::from_native_handle(reinterpret_cast<cudnnHandle_t>(&storage_))) {}
    ~fake_handle() { static_cast<void>(handle.release()); }
    fake_handle(const fake_handle&) = delete;
    fake_handle& operator=(const fake_handle&) = delete;

private:
    int storage_ = 0;

public:
    gpu::dnn::handle handle;
};

} // namespace gpu::test
