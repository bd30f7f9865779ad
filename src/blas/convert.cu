// The conversion kernel: every pair of float, double, __half and __nv_bfloat16, with an optional
// affine map (the random fills use it to scale cuRAND's (0, 1] values), rounded once.
#include "kernels.hpp"
#include "../core/widen.cuh"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace gpu::blas::detail::kernels {

namespace {

template <class T>
struct narrow;
template <>
struct narrow<float> {
    __device__ static float from(double value) { return static_cast<float>(value); }
};
template <>
struct narrow<double> {
    __device__ static double from(double value) { return value; }
};
template <>
struct narrow<__half> {
    __device__ static __half from(double value) { return __double2half(value); }
};
template <>
struct narrow<__nv_bfloat16> {
    __device__ static __nv_bfloat16 from(double value) { return __double2bfloat16(value); }
};

template <class From, class To>
__global__ void convert_kernel(const From* in, To* out, long long n, double scale, double shift,
                               bool affine)
{
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        const double value = gpu::detail::kernels::widen(in[i]);
        out[i] = narrow<To>::from(affine ? value * scale + shift : value);
    }
}

template <class From, class To>
cudaError_t launch(const void* in, void* out, long long n, double scale, double shift,
                   cudaStream_t stream)
{
    constexpr int threads = 256;
    const long long wanted = (n + threads - 1) / threads;
    const int blocks = static_cast<int>(wanted < 8192 ? wanted : 8192);
    const bool affine = scale != 1.0 || shift != 0.0;
    convert_kernel<From, To><<<blocks, threads, 0, stream>>>(
        static_cast<const From*>(in), static_cast<To*>(out), n, scale, shift, affine);
    return cudaGetLastError();
}

template <class From>
cudaError_t launch_to(int to, const void* in, void* out, long long n, double scale, double shift,
                      cudaStream_t stream)
{
    switch (to) {
    case fp64: return launch<From, double>(in, out, n, scale, shift, stream);
    case fp16: return launch<From, __half>(in, out, n, scale, shift, stream);
    case bf16: return launch<From, __nv_bfloat16>(in, out, n, scale, shift, stream);
    default: return launch<From, float>(in, out, n, scale, shift, stream);
    }
}

} // namespace

cudaError_t convert(int from, const void* in, int to, void* out, long long n, double scale,
                    double shift, cudaStream_t stream)
{
    switch (from) {
    case fp64: return launch_to<double>(to, in, out, n, scale, shift, stream);
    case fp16: return launch_to<__half>(to, in, out, n, scale, shift, stream);
    case bf16: return launch_to<__nv_bfloat16>(to, in, out, n, scale, shift, stream);
    default: return launch_to<float>(to, in, out, n, scale, shift, stream);
    }
}

} // namespace gpu::blas::detail::kernels
