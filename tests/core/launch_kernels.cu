// The kernels of launch_kernels.hpp.
#include "launch_kernels.hpp"

#include <cuda_runtime_api.h>

namespace gpu::test {

namespace {

__device__ int flag_value = 0;

__global__ void saxpy_kernel_body(float a, const float* x, float* y, std::size_t n)
{
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
         i += stride) {
        y[i] = a * x[i] + y[i];
    }
}

__global__ void widths_kernel_body(std::uint64_t wide, std::int16_t narrow, std::uint64_t* out)
{
    out[0] = wide;
    out[1] = static_cast<std::uint64_t>(static_cast<std::int64_t>(narrow));
}

__global__ void shape_kernel_body(unsigned* out)
{
    if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0 && threadIdx.x == 0 &&
        threadIdx.y == 0 && threadIdx.z == 0) {
        out[0] = gridDim.x;
        out[1] = gridDim.y;
        out[2] = gridDim.z;
        out[3] = blockDim.x;
        out[4] = blockDim.y;
        out[5] = blockDim.z;
    }
}

__global__ void raise_flag_body()
{
    flag_value = 1;
}

} // namespace

saxpy_kernel saxpy()
{
    return saxpy_kernel_body;
}

widths_kernel widths()
{
    return widths_kernel_body;
}

shape_kernel shape()
{
    return shape_kernel_body;
}

no_parameters_kernel raise_flag()
{
    return raise_flag_body;
}

int read_flag(bool reset)
{
    int value = -1;
    if (cudaMemcpyFromSymbol(&value, flag_value, sizeof value) != cudaSuccess) {
        return -1;
    }
    if (reset) {
        const int zero = 0;
        cudaMemcpyToSymbol(flag_value, &zero, sizeof zero);
    }
    return value;
}

} // namespace gpu::test
