// check_finite's kernel: counts NaN and Inf in strided device data and finds the first one.
#include "kernels.hpp"
#include "widen.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>

namespace gpu::blas::detail::kernels {

namespace {

template <class T>
__global__ void count_non_finite_kernel(const T* data, long long batch, long long stride,
                                        long long outer, long long inner, long long ld,
                                        unsigned long long* counters)
{
    const long long total = batch * outer * inner;
    unsigned long long nans = 0;
    unsigned long long infs = 0;
    unsigned long long first = ULLONG_MAX;
    for (long long index = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; index < total;
         index += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long i = index % inner;
        const long long rest = index / inner;
        const long long offset = (rest / outer) * stride + (rest % outer) * ld + i;
        const double value = widen(data[offset]);
        if (isnan(value)) {
            ++nans;
        } else if (isinf(value)) {
            ++infs;
        } else {
            continue;
        }
        first = min(first, static_cast<unsigned long long>(offset));
    }
    // Counting is order-independent, so these atomics do not make the result vary.
    if (nans != 0) {
        atomicAdd(&counters[0], nans);
    }
    if (infs != 0) {
        atomicAdd(&counters[1], infs);
    }
    if (first != ULLONG_MAX) {
        atomicMin(&counters[2], first);
    }
}

template <class T>
cudaError_t launch(const void* data, long long batch, long long stride, long long outer,
                   long long inner, long long ld, unsigned long long* counters, cudaStream_t stream)
{
    constexpr int threads = 256;
    const long long total = batch * outer * inner;
    const long long wanted = (total + threads - 1) / threads;
    const int blocks = static_cast<int>(wanted < 4096 ? wanted : 4096);
    count_non_finite_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<const T*>(data), batch,
                                                                stride, outer, inner, ld, counters);
    return cudaGetLastError();
}

} // namespace

cudaError_t count_non_finite(int type, const void* data, long long batch, long long stride,
                             long long outer, long long inner, long long ld,
                             unsigned long long* counters, cudaStream_t stream)
{
    switch (type) {
    case fp64:
        return launch<double>(data, batch, stride, outer, inner, ld, counters, stream);
    case fp16:
        return launch<__half>(data, batch, stride, outer, inner, ld, counters, stream);
    case bf16:
        return launch<__nv_bfloat16>(data, batch, stride, outer, inner, ld, counters, stream);
    default:
        return launch<float>(data, batch, stride, outer, inner, ld, counters, stream);
    }
}

} // namespace gpu::blas::detail::kernels
