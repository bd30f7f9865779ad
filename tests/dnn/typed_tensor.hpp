// Device tensors of float, __half or __nv_bfloat16 for the [gpu] tests of the typed operations
// (pooling, activation, softmax, dropout): values in logical order as doubles (exactly what the
// device holds, after rounding to the type), stored in a layout, outputs poisoned with NaN; the
// conversions, tolerances and transfers are typed_values.hpp's. Test code only.
#pragma once

#include "typed_values.hpp" // upload_rounded, download, poison, tolerance_of, error_of

#include <gpu/dnn/element.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <random>
#include <utility>
#include <vector>

namespace gpu::test {

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

    [[nodiscard]] std::size_t element_count() const { return gpu::test::element_count(dims); }

    /// Rounds @p logical to T, stores it in the layout, and keeps the rounded values.
    void upload(const std::vector<double>& logical)
    {
        values = upload_rounded(buffer, logical, dims, layout);
    }

    /// Fills the buffer with NaN, so that an element an operation does not write shows.
    void poison()
    {
        gpu::test::poison(buffer);
        values.clear();
    }

    /// The device's values in logical order; waits for @p s first.
    [[nodiscard]] std::vector<double> download(gpu::stream_ref s) const
    {
        return gpu::test::download(buffer, dims, layout, s);
    }
};

/// A handle object that holds a pointer which is no cuDNN context, for the checks that must
/// refuse an argument (a null buffer pointer) before any cuDNN call, on a machine without a GPU.
/// It is never used for a call, and released unused.
class fake_handle {
public:
    fake_handle()
        : handle(gpu::dnn::handle::from_native_handle(reinterpret_cast<cudnnHandle_t>(&storage_)))
    {}
    ~fake_handle() { static_cast<void>(handle.release()); }
    fake_handle(const fake_handle&) = delete;
    fake_handle& operator=(const fake_handle&) = delete;

private:
    int storage_ = 0;

public:
    gpu::dnn::handle handle;
};

} // namespace gpu::test
