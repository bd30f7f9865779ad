// Device-side widening of the blas wrapper's element types to double, shared by the kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gpu::blas::detail::kernels {

__device__ inline double widen(float value)
{
    return value;
}
__device__ inline double widen(double value)
{
    return value;
}
__device__ inline double widen(__half value)
{
    return __half2float(value);
}
__device__ inline double widen(__nv_bfloat16 value)
{
    return __bfloat162float(value);
}

} // namespace gpu::blas::detail::kernels
