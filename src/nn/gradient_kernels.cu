// The nn component's gradient kernels: FP32 accumulation of FP32/FP16/BF16 gradients (unless a
// device flag says skip), column sums (bias gradients), and the gradient through a fused ReLU.
#include "gradient_kernels.hpp"

#include "../core/widen.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gpu::nn::detail::kernels {

namespace {

using gpu::detail::kernels::widen;

template <class T>
__device__ inline bool positive(T value)
{
    return widen(value) > 0.0F;
}

template <class T>
__device__ inline T zero();
template <>
__device__ inline float zero<float>()
{
    return 0.0F;
}
template <>
__device__ inline __half zero<__half>()
{
    return __float2half(0.0F);
}
template <>
__device__ inline __nv_bfloat16 zero<__nv_bfloat16>()
{
    return __float2bfloat16(0.0F);
}

constexpr int threads = 256;

int grid_for(long long n)
{
    const long long wanted = (n + threads - 1) / threads;
    return static_cast<int>(wanted < 8192 ? wanted : 8192);
}

template <class From>
__global__ void accumulate_kernel(const From* from, float* to, long long n, const float* skip)
{
    if (skip != nullptr && *skip != 0.0F) {
        return;
    }
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        to[i] += widen(from[i]);
    }
}

// Each block sums 32 columns: thread (x, y) adds rows y, y + 8, ... of column x (reads of a
// row are coalesced across x), then row 0 of the block adds the 8 partial sums in order.
constexpr int columns_per_block = 32;
constexpr int row_slices = 8;

template <class From>
__global__ void column_sums_kernel(const From* from, long long rows, long long cols, float* to)
{
    __shared__ float partial[row_slices][columns_per_block + 1];
    const long long column = blockIdx.x * static_cast<long long>(columns_per_block) + threadIdx.x;
    float sum = 0.0F;
    if (column < cols) {
        for (long long row = threadIdx.y; row < rows; row += row_slices) {
            sum += widen(from[row * cols + column]);
        }
    }
    partial[threadIdx.y][threadIdx.x] = sum;
    __syncthreads();
    if (threadIdx.y == 0 && column < cols) {
        float total = 0.0F;
        for (int slice = 0; slice < row_slices; ++slice) {
            total += partial[slice][threadIdx.x];
        }
        to[column] += total;
    }
}

template <class T>
__global__ void relu_gradient_kernel(const T* output, const T* output_gradient, T* gradient,
                                     long long n)
{
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        gradient[i] = positive(output[i]) ? output_gradient[i] : zero<T>();
    }
}

template <class From>
cudaError_t launch_accumulate(const void* from, float* to, long long n, const float* skip,
                              cudaStream_t stream)
{
    accumulate_kernel<From>
        <<<grid_for(n), threads, 0, stream>>>(static_cast<const From*>(from), to, n, skip);
    return cudaGetLastError();
}

template <class From>
cudaError_t launch_column_sums(const void* from, long long rows, long long cols, float* to,
                               cudaStream_t stream)
{
    const dim3 block(columns_per_block, row_slices);
    const long long blocks = (cols + columns_per_block - 1) / columns_per_block;
    column_sums_kernel<From><<<static_cast<unsigned>(blocks), block, 0, stream>>>(
        static_cast<const From*>(from), rows, cols, to);
    return cudaGetLastError();
}

template <class T>
cudaError_t launch_relu_gradient(const void* output, const void* output_gradient, void* gradient,
                                 long long n, cudaStream_t stream)
{
    relu_gradient_kernel<T><<<grid_for(n), threads, 0, stream>>>(
        static_cast<const T*>(output), static_cast<const T*>(output_gradient),
        static_cast<T*>(gradient), n);
    return cudaGetLastError();
}

} // namespace

cudaError_t accumulate(int from_type, const void* from, float* to, long long n, const float* skip,
                       cudaStream_t stream)
{
    switch (from_type) {
    case fp16: return launch_accumulate<__half>(from, to, n, skip, stream);
    case bf16: return launch_accumulate<__nv_bfloat16>(from, to, n, skip, stream);
    default: return launch_accumulate<float>(from, to, n, skip, stream);
    }
}

cudaError_t accumulate_column_sums(int from_type, const void* from, long long rows, long long cols,
                                   float* to, cudaStream_t stream)
{
    switch (from_type) {
    case fp16: return launch_column_sums<__half>(from, rows, cols, to, stream);
    case bf16: return launch_column_sums<__nv_bfloat16>(from, rows, cols, to, stream);
    default: return launch_column_sums<float>(from, rows, cols, to, stream);
    }
}

cudaError_t relu_gradient(int type, const void* output, const void* output_gradient, void* gradient,
                          long long n, cudaStream_t stream)
{
    switch (type) {
    case fp16: return launch_relu_gradient<__half>(output, output_gradient, gradient, n, stream);
    case bf16:
        return launch_relu_gradient<__nv_bfloat16>(output, output_gradient, gradient, n, stream);
    default: return launch_relu_gradient<float>(output, output_gradient, gradient, n, stream);
    }
}

} // namespace gpu::nn::detail::kernels
