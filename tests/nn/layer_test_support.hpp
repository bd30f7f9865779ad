// Helpers of the tests of the layers on the dnn wrapper (conv2d, relu, max_pool2d, dropout, and the
// stack of them): the dnn tests' typed device tensors (tests/dnn/typed_tensor.hpp) as layer
// tensors, the store's parameters read back as doubles, and central finite differences of a
// float64 function. Test code only; the device helpers need a GPU.
#pragma once

#include "typed_tensor.hpp" // gpu::test::device_tensor, the float64 references' layouts
#include <element_cast.hpp> // gpu::test::widened
#include <test_support.hpp> // gpu::test::relative_error, random_doubles

#include <gpu/element_type.hpp>
#include <gpu/error.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/nn/tensor.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace gpu::test {

/// The element_type of @p T: float, __half or __nv_bfloat16.
template <class T>
constexpr element_type element_type_of()
{
    return std::is_same_v<T, float>    ? element_type::fp32
           : std::is_same_v<T, __half> ? element_type::fp16
                                       : element_type::bf16;
}

/// The layer spec of a typed device tensor: its dimensions, type and layout.
template <class T>
nn::tensor_spec spec_of(const device_tensor<T>& t)
{
    return nn::tensor_spec{std::vector<std::int64_t>(t.dims.begin(), t.dims.end()),
                           element_type_of<T>(), t.layout};
}

/// A typed device tensor as a layer's argument.
template <class T>
nn::tensor_ref ref_of(device_tensor<T>& t)
{
    return nn::tensor_ref{t.buffer.data(), spec_of(t)};
}

/// @p count elements of T at device address @p data, as doubles; waits for @p stream first.
template <class T>
std::vector<double> read_device(const void* data, std::size_t count, stream_ref stream)
{
    stream.synchronize();
    std::vector<T> values(count);
    GPU_CUDA_CHECK(cudaMemcpy(values.data(), data, count * sizeof(T), cudaMemcpyDeviceToHost));
    return widened(values);
}

/// The FP32 gradient of parameter @p index.
inline std::vector<double> gradient_of(nn::parameters& store, std::size_t index, stream_ref stream)
{
    const nn::parameter_view view = store.view(index);
    return read_device<float>(view.gradient, view.count, stream);
}

/// The working copy of parameter @p index (what the layers read), in T.
template <class T>
std::vector<double> working_of(nn::parameters& store, std::size_t index, stream_ref stream)
{
    const nn::parameter_view view = store.view(index);
    return read_device<T>(view.working, view.count, stream);
}

/// Allocates and initialises @p store (seed 5) on @p stream, before a context over it is made.
inline stream_ref prepared(nn::parameters& store, stream_ref stream)
{
    store.allocate(stream);
    store.initialize(5, stream);
    return stream;
}

/// dL/dv[i] by central differences with step @p h, where @p loss() reads @p v.
template <class Loss>
double central_difference(std::vector<double>& v, std::size_t i, double h, Loss&& loss)
{
    const double keep = v[i];
    v[i] = keep + h;
    const double up = loss();
    v[i] = keep - h;
    const double down = loss();
    v[i] = keep;
    return (up - down) / (2.0 * h);
}

/// dL/dv by central differences at every element of @p v.
template <class Loss>
std::vector<double> central_differences(std::vector<double>& v, double h, Loss&& loss)
{
    std::vector<double> gradient(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) {
        gradient[i] = central_difference(v, i, h, loss);
    }
    return gradient;
}

} // namespace gpu::test
