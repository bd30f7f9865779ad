// The kernels of gpu::nn::cross_entropy and gpu::nn::count_correct: one warp per row of logits
// [batch, classes] (FP32, FP16 or BF16 in memory, FP32 arithmetic), a numerically stable
// log-sum-exp (the row's maximum subtracted before exp), and no read outside the row: a label is
// compared with [0, classes) before it is used as an index.
#include "math_kernels.hpp"
#include "update_rules.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <math.h>

namespace gpu::nn::detail::kernels {

namespace {

namespace rules = gpu::nn::detail::rules;

constexpr unsigned full_warp = 0xffffffffU;
constexpr int rows_threads = 256; // 8 rows at a time per block (backward, count)
constexpr long long max_blocks = 4096;
constexpr int forward_threads = 1024; // the forward's one block: 32 warps

__device__ inline float load(const float* data, long long i)
{
    return data[i];
}
__device__ inline float load(const __half* data, long long i)
{
    return __half2float(data[i]);
}
__device__ inline float load(const __nv_bfloat16* data, long long i)
{
    return __bfloat162float(data[i]);
}
__device__ inline void store(float* data, long long i, float value)
{
    data[i] = value;
}
__device__ inline void store(__half* data, long long i, float value)
{
    data[i] = __float2half_rn(value);
}
__device__ inline void store(__nv_bfloat16* data, long long i, float value)
{
    data[i] = __float2bfloat16_rn(value);
}

// Butterfly reductions: every lane ends with the same value (each step adds a commutative pair),
// in a fixed order, so results are the same run after run.
__device__ inline float warp_max(float value)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        value = fmaxf(value, __shfl_xor_sync(full_warp, value, offset));
    }
    return value;
}

__device__ inline float warp_sum(float value)
{
    for (int offset = 16; offset > 0; offset >>= 1) {
        value += __shfl_xor_sync(full_warp, value, offset);
    }
    return value;
}

// The row's maximum and sum of exp(x - maximum), in every lane of the warp. A NaN logit makes
// the sum NaN (fmaxf skips it, exp does not), so it reaches the loss as in PyTorch.
template <class T>
__device__ void row_statistics(const T* row, int classes, int lane, float& maximum, float& sum)
{
    float local = -INFINITY;
    for (int j = lane; j < classes; j += 32) {
        local = fmaxf(local, load(row, j));
    }
    maximum = warp_max(local);
    float partial = 0.0F;
    for (int j = lane; j < classes; j += 32) {
        partial += expf(load(row, j) - maximum);
    }
    sum = warp_sum(partial);
}

// The smallest (row, label) pair with a label outside [0, classes): rows in the high half, so
// the first bad row wins whatever order the warps run in.
__device__ inline void record_bad_label(unsigned long long* bad_label, long long row, int32_t label)
{
    const unsigned long long code =
        (static_cast<unsigned long long>(row) << 32) | static_cast<uint32_t>(label);
    atomicMin(bad_label, code);
}

template <class T>
__global__ void forward_kernel(const T* logits, const int32_t* labels, long long batch, int classes,
                               float* loss, unsigned long long* bad_label)
{
    __shared__ float warp_totals[32];
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const int warp = static_cast<int>(threadIdx.x) >> 5;
    const int warps = static_cast<int>(blockDim.x) >> 5;
    float total = 0.0F; // lane 0's sum of its warp's rows, in row order
    for (long long row = warp; row < batch; row += warps) {
        const T* x = logits + row * classes;
        float maximum = 0.0F;
        float sum = 0.0F;
        row_statistics(x, classes, lane, maximum, sum);
        const int32_t label = labels[row];
        if (lane == 0 && rules::label_in_range(label, classes)) {
            // log(sum exp(x - max)) + max - x[label], with the small difference taken first.
            total += logf(sum) - (load(x, label) - maximum);
        } else if (lane == 0) {
            total += NAN;
            record_bad_label(bad_label, row, label);
        }
    }
    if (lane == 0) {
        warp_totals[warp] = total;
    }
    __syncthreads();
    if (warp == 0) {
        const float all = warp_sum(lane < warps ? warp_totals[lane] : 0.0F);
        if (lane == 0) {
            *loss = all / static_cast<float>(batch);
        }
    }
}

template <class T>
__global__ void backward_kernel(const T* logits, const int32_t* labels, long long batch,
                                int classes, T* dlogits, const float* scale,
                                unsigned long long* bad_label)
{
    const float factor = (scale != nullptr ? *scale : 1.0F) / static_cast<float>(batch);
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
    for (long long row = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5;
         row < batch; row += warps) {
        const T* x = logits + row * classes;
        T* dx = dlogits + row * classes;
        float maximum = 0.0F;
        float sum = 0.0F;
        row_statistics(x, classes, lane, maximum, sum);
        const int32_t label = labels[row];
        const bool good = rules::label_in_range(label, classes);
        if (!good && lane == 0) {
            record_bad_label(bad_label, row, label);
        }
        // Each lane reads x[j] before it writes dx[j], and the statistics are complete (the
        // shuffles synchronise the warp): dlogits may be the logits' own buffer.
        for (int j = lane; j < classes; j += 32) {
            const float p = expf(load(x, j) - maximum) / sum;
            const float g = good ? (p - (j == label ? 1.0F : 0.0F)) * factor : NAN;
            store(dx, j, g);
        }
    }
}

template <class T>
__global__ void count_kernel(const T* logits, const int32_t* labels, long long batch, int classes,
                             int* correct)
{
    __shared__ int block_correct;
    if (threadIdx.x == 0) {
        block_correct = 0;
    }
    __syncthreads();
    const int lane = static_cast<int>(threadIdx.x) & 31;
    const long long warps = static_cast<long long>(gridDim.x) * (blockDim.x >> 5);
    for (long long row = (blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x) >> 5;
         row < batch; row += warps) {
        const T* x = logits + row * classes;
        float best = -INFINITY;
        int32_t best_index = rules::argmax_none;
        for (int j = lane; j < classes; j += 32) {
            rules::argmax_keep_best(best, best_index, load(x, j), j);
        }
        for (int offset = 16; offset > 0; offset >>= 1) {
            const float other = __shfl_xor_sync(full_warp, best, offset);
            const int32_t other_index = __shfl_xor_sync(full_warp, best_index, offset);
            rules::argmax_keep_best(best, best_index, other, other_index);
        }
        if (lane == 0 && rules::argmax_hits_label(best_index, labels[row], classes)) {
            atomicAdd(&block_correct, 1);
        }
    }
    __syncthreads();
    // Integer additions: the count is the same whatever order the blocks finish in.
    if (threadIdx.x == 0 && block_correct != 0) {
        atomicAdd(correct, block_correct);
    }
}

int row_blocks(long long batch)
{
    constexpr int rows_per_block = rows_threads / 32;
    const long long wanted = (batch + rows_per_block - 1) / rows_per_block;
    return static_cast<int>(wanted < max_blocks ? wanted : max_blocks);
}

} // namespace

cudaError_t cross_entropy_forward(int format, const void* logits, const int32_t* labels,
                                  long long batch, int classes, float* loss,
                                  unsigned long long* bad_label, cudaStream_t stream)
{
    // One block, so the mean is summed in one fixed order (deterministic) without scratch memory.
    switch (format) {
    case fp16:
        forward_kernel<<<1, forward_threads, 0, stream>>>(static_cast<const __half*>(logits),
                                                          labels, batch, classes, loss, bad_label);
        break;
    case bf16:
        forward_kernel<<<1, forward_threads, 0, stream>>>(static_cast<const __nv_bfloat16*>(logits),
                                                          labels, batch, classes, loss, bad_label);
        break;
    default:
        forward_kernel<<<1, forward_threads, 0, stream>>>(static_cast<const float*>(logits), labels,
                                                          batch, classes, loss, bad_label);
        break;
    }
    return cudaGetLastError();
}

cudaError_t cross_entropy_backward(int format, const void* logits, const int32_t* labels,
                                   long long batch, int classes, void* dlogits, const float* scale,
                                   unsigned long long* bad_label, cudaStream_t stream)
{
    const int blocks = row_blocks(batch);
    switch (format) {
    case fp16:
        backward_kernel<<<blocks, rows_threads, 0, stream>>>(
            static_cast<const __half*>(logits), labels, batch, classes,
            static_cast<__half*>(dlogits), scale, bad_label);
        break;
    case bf16:
        backward_kernel<<<blocks, rows_threads, 0, stream>>>(
            static_cast<const __nv_bfloat16*>(logits), labels, batch, classes,
            static_cast<__nv_bfloat16*>(dlogits), scale, bad_label);
        break;
    default:
        backward_kernel<<<blocks, rows_threads, 0, stream>>>(
            static_cast<const float*>(logits), labels, batch, classes, static_cast<float*>(dlogits),
            scale, bad_label);
        break;
    }
    return cudaGetLastError();
}

cudaError_t count_correct(int format, const void* logits, const int32_t* labels, long long batch,
                          int classes, int* correct, cudaStream_t stream)
{
    const int blocks = row_blocks(batch);
    switch (format) {
    case fp16:
        count_kernel<<<blocks, rows_threads, 0, stream>>>(static_cast<const __half*>(logits),
                                                          labels, batch, classes, correct);
        break;
    case bf16:
        count_kernel<<<blocks, rows_threads, 0, stream>>>(static_cast<const __nv_bfloat16*>(logits),
                                                          labels, batch, classes, correct);
        break;
    default:
        count_kernel<<<blocks, rows_threads, 0, stream>>>(static_cast<const float*>(logits), labels,
                                                          batch, classes, correct);
        break;
    }
    return cudaGetLastError();
}

} // namespace gpu::nn::detail::kernels
