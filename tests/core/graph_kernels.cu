// The kernels of graph_kernels.hpp.
#include "graph_kernels.hpp"

namespace gpu::test {

namespace {

constexpr unsigned block = 256;

__global__ void add_into_kernel(float* x, const float* y, std::size_t n)
{
    const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        x[i] += y[i];
    }
}

__global__ void scale_kernel(float* x, float factor, std::size_t n)
{
    const std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x;
    if (i < n) {
        x[i] *= factor;
    }
}

unsigned blocks_for(std::size_t n)
{
    return static_cast<unsigned>((n + block - 1) / block);
}

} // namespace

cudaError_t add_into(float* x, const float* y, std::size_t n, cudaStream_t stream)
{
    add_into_kernel<<<blocks_for(n), block, 0, stream>>>(x, y, n);
    return cudaGetLastError();
}

cudaError_t scale(float* x, float factor, std::size_t n, cudaStream_t stream)
{
    scale_kernel<<<blocks_for(n), block, 0, stream>>>(x, factor, n);
    return cudaGetLastError();
}

} // namespace gpu::test
