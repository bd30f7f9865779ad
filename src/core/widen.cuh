// Device-side widening of cudagap's element formats for arithmetic, shared by the blas and nn
// kernels: FP16 and BF16 become FP32, FP32 and FP64 stay as they are. Every conversion is
// exact, so a kernel that needs FP64 (blas's conversion) may widen the FP32 result further.
// Plain CUDA with no cudagap header, so that nvcc compiles it in its default dialect.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gpu::detail::kernels {

__device__ inline float widen(float value)
{
    return value;
}
__device__ inline double widen(double value)
{
    return value;
}
__device__ inline float widen(__half value)
{
    return __half2float(value);
}
__device__ inline float widen(__nv_bfloat16 value)
{
    return __bfloat162float(value);
}

} // namespace gpu::detail::kernels
