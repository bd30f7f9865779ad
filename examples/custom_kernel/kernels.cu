// The kernels of kernels.hpp: your own device code goes here. nvcc compiles this file; nothing
// here needs a cudagap header.
#include "kernels.hpp"

#include <cub/device/device_reduce.cuh>

namespace kernels {

namespace {

__global__ void axpy_body(float a, const float* x, const float* y, float* out, std::size_t n)
{
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += stride) {
        out[i] = a * x[i] + y[i];
    }
}

} // namespace

axpy_kernel axpy()
{
    return axpy_body;
}

cudaError_t sum(cuda::stream_ref stream, const float* values, float* total, std::size_t n)
{
    std::size_t temp_bytes = 0;
    // The first call only asks how much temporary storage the reduction needs.
    cudaError_t status =
        cub::DeviceReduce::Sum(nullptr, temp_bytes, values, total, n, stream.get());
    if (status != cudaSuccess) {
        return status;
    }
    void* temp = nullptr;
    status = cudaMallocAsync(&temp, temp_bytes, stream.get());
    if (status != cudaSuccess) {
        return status;
    }
    status = cub::DeviceReduce::Sum(temp, temp_bytes, values, total, n, stream.get());
    const cudaError_t freed = cudaFreeAsync(temp, stream.get());
    return status != cudaSuccess ? status : freed;
}

} // namespace kernels
