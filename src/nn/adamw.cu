// The fused AdamW step of gpu::nn::adamw: one thread advances the device step count and writes
// the step's bias corrections, then one grid-stride kernel updates every parameter with
// update_rules.hpp's element rule (shared with the host tests). Both read found_inf on the
// device, so a skipped step is decided there and a captured graph replays correctly.
#include "math_kernels.hpp"
#include "update_rules.hpp"

namespace gpu::nn::detail::kernels {

namespace {

constexpr int threads = 256;
constexpr long long max_blocks = 4096;

__global__ void begin_step_kernel(int64_t* step, double* factors, double lr, double beta1,
                                  double beta2, const float* found_inf)
{
    if (!rules::adamw_begin_step(*step, found_inf)) {
        return;
    }
    const rules::adamw_step_factors f = rules::adamw_factors(lr, beta1, beta2, *step);
    factors[0] = f.step_size;
    factors[1] = f.bias_correction2_sqrt;
}

__global__ void update_kernel(float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                              long long n, const double* factors, rules::adamw_hyperparameters h,
                              const float* found_inf, const float* grad_scale)
{
    if (found_inf != nullptr && *found_inf != 0.0F) {
        return; // the whole step is skipped: parameters and moments stay as they are
    }
    const float step_size = static_cast<float>(factors[0]);
    const float bias_correction2_sqrt = static_cast<float>(factors[1]);
    const float scale = grad_scale != nullptr ? *grad_scale : 1.0F;
    for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
         i += static_cast<long long>(gridDim.x) * blockDim.x) {
        float p = params[i];
        float m = exp_avg[i];
        float v = exp_avg_sq[i];
        rules::adamw_element(p, grads[i], m, v, h, step_size, bias_correction2_sqrt, scale);
        params[i] = p;
        exp_avg[i] = m;
        exp_avg_sq[i] = v;
    }
}

__global__ void set_step_kernel(int64_t* step, int64_t value)
{
    *step = value;
}

} // namespace

cudaError_t adamw_set_step(int64_t* step, int64_t value, cudaStream_t stream)
{
    set_step_kernel<<<1, 1, 0, stream>>>(step, value);
    return cudaGetLastError();
}

cudaError_t adamw_step(float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                       long long n, int64_t* step, double* factors, double lr, double beta1,
                       double beta2, double eps, double weight_decay, const float* found_inf,
                       const float* grad_scale, cudaStream_t stream)
{
    begin_step_kernel<<<1, 1, 0, stream>>>(step, factors, lr, beta1, beta2, found_inf);
    if (const cudaError_t status = cudaGetLastError(); status != cudaSuccess || n == 0) {
        return status;
    }
    const rules::adamw_hyperparameters h = rules::adamw_hyper(lr, beta1, beta2, eps, weight_decay);
    const long long wanted = (n + threads - 1) / threads;
    const int blocks = static_cast<int>(wanted < max_blocks ? wanted : max_blocks);
    update_kernel<<<blocks, threads, 0, stream>>>(params, grads, exp_avg, exp_avg_sq, n, factors, h,
                                                  found_inf, grad_scale);
    return cudaGetLastError();
}

} // namespace gpu::nn::detail::kernels
