// The kernels of gpu::nn::grad_scaler: its state written by one thread, the NaN/Inf check and
// unscale of FP32 gradients (PyTorch's _amp_foreach_non_finite_check_and_unscale_), and the
// scale update (_amp_update_scale_). Every rule is update_rules.hpp's, shared with the host tests.
#include "math_kernels.hpp"
#include "update_rules.hpp"

namespace gpu::nn::detail::kernels {

namespace {

constexpr int threads = 256;
constexpr long long max_blocks = 4096;

int blocks_for(long long n)
{
    const long long wanted = (n + threads - 1) / threads;
    return static_cast<int>(wanted < max_blocks ? wanted : max_blocks);
}

__global__ void set_state_kernel(float* values, int32_t* tracker, float scale,
                                 int32_t growth_tracker)
{
    values[0] = scale;
    values[1] = 0.0F;
    *tracker = growth_tracker;
}

__global__ void unscale_kernel(const float* in, float* out, long long n, const float* scale,
                               float* found_inf)
{
    // Checking only (no output) needs no scale; unscaling reads it once per thread (cached).
    const float inv_scale = out != nullptr ? rules::inverse_scale(*scale) : 1.0F;
    bool bad = false;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float value = in[i];
        bad |= rules::unscale_element(value, inv_scale);
        if (out != nullptr) {
            out[i] = value;
        }
    }
    // Every writer writes the same 1, so the race is benign (as in PyTorch's kernel); the flag
    // is only ever set here, so checks of several buffers in one step accumulate.
    if (bad) {
        *found_inf = 1.0F;
    }
}

__global__ void update_kernel(float* values, int32_t* tracker, float growth_factor,
                              float backoff_factor, int32_t growth_interval)
{
    rules::update_scale(values[0], *tracker, values[1], growth_factor, backoff_factor,
                        growth_interval);
}

} // namespace

cudaError_t scaler_set_state(float* values, int32_t* tracker, float scale, int32_t growth_tracker,
                             cudaStream_t stream)
{
    set_state_kernel<<<1, 1, 0, stream>>>(values, tracker, scale, growth_tracker);
    return cudaGetLastError();
}

cudaError_t unscale(const float* in, float* out, long long n, const float* scale, float* found_inf,
                    cudaStream_t stream)
{
    unscale_kernel<<<blocks_for(n), threads, 0, stream>>>(in, out, n, scale, found_inf);
    return cudaGetLastError();
}

cudaError_t scaler_update(float* values, int32_t* tracker, float growth_factor,
                          float backoff_factor, int32_t growth_interval, cudaStream_t stream)
{
    update_kernel<<<1, 1, 0, stream>>>(values, tracker, growth_factor, backoff_factor,
                                       growth_interval);
    return cudaGetLastError();
}

} // namespace gpu::nn::detail::kernels
