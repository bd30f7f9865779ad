// The kernels of gpu::nn::shuffle_order and gpu::nn::gather_batch: one thread per position of
// the order, one thread per element of the batch. The batch number is read from device memory
// by every thread of the gather and advanced by a second, one-thread kernel queued after it, so
// no thread of the gather can see the advanced value.
#include "data_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gpu::nn::detail::kernels {

namespace {

constexpr int threads = 256;
constexpr unsigned long long max_blocks = 65535;

__device__ inline void store(float* data, unsigned long long i, float value)
{
    data[i] = value;
}
__device__ inline void store(__half* data, unsigned long long i, float value)
{
    data[i] = __float2half_rn(value);
}
__device__ inline void store(__nv_bfloat16* data, unsigned long long i, float value)
{
    data[i] = __float2bfloat16_rn(value);
}

__global__ void shuffle_kernel(uint32_t* order, uint64_t count, uint64_t seed, uint64_t epoch)
{
    for (uint64_t i = blockIdx.x * static_cast<uint64_t>(blockDim.x) + threadIdx.x; i < count;
         i += static_cast<uint64_t>(gridDim.x) * blockDim.x) {
        order[i] = shuffle_at(i, count, seed, epoch);
    }
}

template <class T>
__global__ void gather_kernel(const uint8_t* pixels, const uint8_t* labels, const uint32_t* order,
                              uint64_t count, uint64_t item_elements, unsigned long long batch,
                              float mean, float inv_std, T* output, int32_t* out_labels,
                              const uint32_t* batch_number)
{
    const unsigned long long first = static_cast<unsigned long long>(*batch_number) * batch;
    const unsigned long long total = batch * item_elements;
    for (unsigned long long e =
             blockIdx.x * static_cast<unsigned long long>(blockDim.x) + threadIdx.x;
         e < total; e += static_cast<unsigned long long>(gridDim.x) * blockDim.x) {
        const unsigned long long row = e / item_elements;
        const unsigned long long column = e - row * item_elements;
        const uint64_t position = (first + row) % count;
        const uint64_t item = order != nullptr ? order[position] : position;
        const float pixel =
            static_cast<float>(pixels[item * item_elements + column]) * (1.0F / 255.0F);
        store(output, e, (pixel - mean) * inv_std);
        if (column == 0) {
            out_labels[row] = labels[item];
        }
    }
}

__global__ void advance_kernel(uint32_t* batch_number)
{
    *batch_number += 1U;
}

unsigned int blocks_for(unsigned long long n)
{
    const unsigned long long blocks = (n + threads - 1) / threads;
    return static_cast<unsigned int>(blocks < max_blocks ? blocks : max_blocks);
}

} // namespace

cudaError_t shuffle_order(uint32_t* order, uint64_t count, uint64_t seed, uint64_t epoch,
                          cudaStream_t stream)
{
    shuffle_kernel<<<blocks_for(count), threads, 0, stream>>>(order, count, seed, epoch);
    return cudaGetLastError();
}

cudaError_t gather_batch(const uint8_t* pixels, const uint8_t* labels, const uint32_t* order,
                         uint64_t count, uint64_t item_elements, long long batch, float mean,
                         float inv_std, int format, void* output, int32_t* out_labels,
                         uint32_t* batch_number, cudaStream_t stream)
{
    const auto rows = static_cast<unsigned long long>(batch);
    const unsigned int blocks = blocks_for(rows * item_elements);
    if (format == 2) {
        gather_kernel<<<blocks, threads, 0, stream>>>(
            pixels, labels, order, count, item_elements, rows, mean, inv_std,
            static_cast<__half*>(output), out_labels, batch_number);
    } else if (format == 3) {
        gather_kernel<<<blocks, threads, 0, stream>>>(
            pixels, labels, order, count, item_elements, rows, mean, inv_std,
            static_cast<__nv_bfloat16*>(output), out_labels, batch_number);
    } else {
        gather_kernel<<<blocks, threads, 0, stream>>>(
            pixels, labels, order, count, item_elements, rows, mean, inv_std,
            static_cast<float*>(output), out_labels, batch_number);
    }
    const cudaError_t launched = cudaGetLastError();
    if (launched != cudaSuccess) {
        return launched;
    }
    advance_kernel<<<1, 1, 0, stream>>>(batch_number);
    return cudaGetLastError();
}

} // namespace gpu::nn::detail::kernels
