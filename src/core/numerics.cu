// The NaN/Inf kernels of gpu::check_finite (counts NaN and Inf in strided device data by bit
// pattern, finite_bits.hpp, shared with the host scan, and finds the first one) and of
// gpu::flag_non_finite (sets a device flag, without a copy to the host).
#include "finite_bits.hpp"
#include "numerics_kernel.hpp"

#include <climits>
#include <cstdint>

namespace gpu::detail::kernels {

namespace {

// One element's bits, by format: the loads are of unsigned integers of the element's width.
template <int Format>
__device__ finite_bits::kind classify_at(const void* data, long long offset)
{
    if constexpr (Format == finite_bits::fp64) {
        return finite_bits::classify_fp64(static_cast<const std::uint64_t*>(data)[offset]);
    } else if constexpr (Format == finite_bits::fp16) {
        return finite_bits::classify_fp16(static_cast<const std::uint16_t*>(data)[offset]);
    } else if constexpr (Format == finite_bits::bf16) {
        return finite_bits::classify_bf16(static_cast<const std::uint16_t*>(data)[offset]);
    } else {
        return finite_bits::classify_fp32(static_cast<const std::uint32_t*>(data)[offset]);
    }
}

template <int Format>
__global__ void count_non_finite_kernel(const void* data, long long batch, long long batch_stride,
                                        long long runs, long long run_length, long long run_stride,
                                        unsigned long long* counters)
{
    const long long total = batch * runs * run_length;
    unsigned long long nans = 0;
    unsigned long long infs = 0;
    unsigned long long first = ULLONG_MAX;
    for (long long index = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
         index < total; index += static_cast<long long>(gridDim.x) * blockDim.x) {
        const long long i = index % run_length;
        const long long rest = index / run_length;
        const long long offset = (rest / runs) * batch_stride + (rest % runs) * run_stride + i;
        const finite_bits::kind kind = classify_at<Format>(data, offset);
        if (kind == finite_bits::finite) {
            continue;
        }
        if (kind == finite_bits::nan) {
            ++nans;
        } else {
            ++infs;
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

template <int Format>
cudaError_t launch(const void* data, long long batch, long long batch_stride, long long runs,
                   long long run_length, long long run_stride, unsigned long long* counters,
                   cudaStream_t stream)
{
    constexpr int threads = 256;
    const long long total = batch * runs * run_length;
    const long long wanted = (total + threads - 1) / threads;
    const int blocks = static_cast<int>(wanted < 4096 ? wanted : 4096);
    count_non_finite_kernel<Format><<<blocks, threads, 0, stream>>>(
        data, batch, batch_stride, runs, run_length, run_stride, counters);
    return cudaGetLastError();
}

// Sets *flag to code when *flag is 0 and an element is NaN or Inf. A flag already set means an
// earlier check on the stream found one: then nothing is read.
template <int Format>
__global__ void flag_non_finite_kernel(const void* data, long long n, unsigned int* flag,
                                       unsigned int code)
{
    if (*static_cast<volatile unsigned int*>(flag) != 0U) {
        return;
    }
    for (long long index = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; index < n;
         index += static_cast<long long>(gridDim.x) * blockDim.x) {
        if (classify_at<Format>(data, index) != finite_bits::finite) {
            atomicCAS(flag, 0U, code); // the first thread to find one writes; the others leave it
            return;
        }
    }
}

template <int Format>
cudaError_t launch_flag(const void* data, long long n, unsigned int* flag, unsigned int code,
                        cudaStream_t stream)
{
    constexpr int threads = 256;
    const long long wanted = (n + threads - 1) / threads;
    const int blocks = static_cast<int>(wanted < 4096 ? wanted : 4096);
    flag_non_finite_kernel<Format><<<blocks, threads, 0, stream>>>(data, n, flag, code);
    return cudaGetLastError();
}

} // namespace

cudaError_t flag_non_finite(int format, const void* data, long long n, unsigned int* flag,
                            unsigned int code, cudaStream_t stream)
{
    switch (format) {
    case finite_bits::fp64: return launch_flag<finite_bits::fp64>(data, n, flag, code, stream);
    case finite_bits::fp16: return launch_flag<finite_bits::fp16>(data, n, flag, code, stream);
    case finite_bits::bf16: return launch_flag<finite_bits::bf16>(data, n, flag, code, stream);
    default: return launch_flag<finite_bits::fp32>(data, n, flag, code, stream);
    }
}

cudaError_t count_non_finite(int format, const void* data, long long batch, long long batch_stride,
                             long long runs, long long run_length, long long run_stride,
                             unsigned long long* counters, cudaStream_t stream)
{
    switch (format) {
    case finite_bits::fp64:
        return launch<finite_bits::fp64>(data, batch, batch_stride, runs, run_length, run_stride,
                                         counters, stream);
    case finite_bits::fp16:
        return launch<finite_bits::fp16>(data, batch, batch_stride, runs, run_length, run_stride,
                                         counters, stream);
    case finite_bits::bf16:
        return launch<finite_bits::bf16>(data, batch, batch_stride, runs, run_length, run_stride,
                                         counters, stream);
    default:
        return launch<finite_bits::fp32>(data, batch, batch_stride, runs, run_length, run_stride,
                                         counters, stream);
    }
}

} // namespace gpu::detail::kernels
