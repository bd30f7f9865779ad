// The per-element rules of the nn component's optimizer, loss scaler and accuracy count, written
// once: the kernels (adamw.cu, grad_scaler.cu, cross_entropy.cu) run them on the device and the
// host tests (tests/nn/test_update_rules.cpp) check them against PyTorch's documented algorithms
// and float64 references, so a wrong formula fails in CI without a GPU. Plain C++17 with no
// cudagap header, so that nvcc compiles it in its default dialect.
#pragma once

// GPU_HOST_DEVICE and the core's NaN/Inf bit rule (one rule for check_finite and the scaler).
#include "../core/finite_bits.hpp"

#include <math.h>
#include <stdint.h>
#include <string.h>

namespace gpu::nn::detail::rules {

// --- NaN/Inf -------------------------------------------------------------------------------

// Whether a float is neither NaN nor Inf, by its bits (the core's rule, finite_bits.hpp), so
// that fast-math flags can never fold the test away.
GPU_HOST_DEVICE inline bool is_finite(float value) noexcept
{
#if defined(__CUDA_ARCH__)
    const uint32_t bits = __float_as_uint(value);
#else
    uint32_t bits = 0;
    memcpy(&bits, &value, sizeof bits);
#endif
    return gpu::detail::finite_bits::classify_fp32(bits) == gpu::detail::finite_bits::finite;
}

// --- torch.amp.GradScaler ------------------------------------------------------------------

// 1 / scale as GradScaler computes it (`self._scale.double().reciprocal().float()`).
GPU_HOST_DEVICE inline float inverse_scale(float scale) noexcept
{
    return static_cast<float>(1.0 / static_cast<double>(scale));
}

// One gradient of _amp_foreach_non_finite_check_and_unscale_: returns whether the value read
// was NaN or Inf, and the value times inv_scale (unchanged when inv_scale is 1).
GPU_HOST_DEVICE inline bool unscale_element(float& grad, float inv_scale) noexcept
{
    const bool bad = !is_finite(grad);
    if (inv_scale != 1.0F) {
        grad *= inv_scale;
    }
    return bad;
}

// _amp_update_scale_: after a step with Inf/NaN the scale backs off and the tracker restarts;
// after growth_interval steps in a row without, the scale grows (unless that would overflow to
// Inf, when it stays) and the tracker restarts. found_inf is 0 or non-zero (PyTorch: 0.f/1.f).
GPU_HOST_DEVICE inline void update_scale(float& scale, int32_t& growth_tracker, float found_inf,
                                         float growth_factor, float backoff_factor,
                                         int32_t growth_interval) noexcept
{
    if (found_inf != 0.0F) {
        scale = scale * backoff_factor;
        growth_tracker = 0;
        return;
    }
    // A successful step: counted before it is compared with the interval, as in PyTorch.
    const int32_t successful = growth_tracker + 1;
    if (successful == growth_interval) {
        const float grown = scale * growth_factor;
        if (is_finite(grown)) {
            scale = grown;
        }
        growth_tracker = 0;
    } else {
        growth_tracker = successful;
    }
}

// --- torch.optim.AdamW ---------------------------------------------------------------------

// The hyperparameters as the element update uses them: FP32 like the parameters, but the
// differences and products formed in double first (PyTorch's are Python floats), so that
// 1 - beta2 is 0.001 to FP32 precision rather than 1 - 0.999f (1.3e-5 off).
struct adamw_hyperparameters {
    float beta1;
    float one_minus_beta1;
    float beta2;
    float one_minus_beta2;
    float eps;
    float lr_weight_decay; // lr * weight_decay
};

GPU_HOST_DEVICE inline adamw_hyperparameters adamw_hyper(double lr, double beta1, double beta2,
                                                         double eps, double weight_decay) noexcept
{
    return {static_cast<float>(beta1), static_cast<float>(1.0 - beta1),
            static_cast<float>(beta2), static_cast<float>(1.0 - beta2),
            static_cast<float>(eps),   static_cast<float>(lr * weight_decay)};
}

// What bias correction contributes to step t: lr / (1 - beta1^t) and sqrt(1 - beta2^t),
// computed in double from the double hyperparameters, as PyTorch's fused kernel does.
struct adamw_step_factors {
    double step_size;
    double bias_correction2_sqrt;
};

GPU_HOST_DEVICE inline adamw_step_factors adamw_factors(double lr, double beta1, double beta2,
                                                        int64_t step) noexcept
{
    const double t = static_cast<double>(step);
    return {lr / (1.0 - pow(beta1, t)), sqrt(1.0 - pow(beta2, t))};
}

// The start of a step: unless found_inf (a device flag; null for none) is set, the step count
// advances. Returns whether the step runs; a skipped step changes nothing, as
// GradScaler.step skips optimizer.step() and the fused kernel's found_inf leaves `step` as it was.
GPU_HOST_DEVICE inline bool adamw_begin_step(int64_t& step, const float* found_inf) noexcept
{
    if (found_inf != nullptr && *found_inf != 0.0F) {
        return false;
    }
    ++step;
    return true;
}

// One parameter's AdamW update in the order of PyTorch's fused kernel: the gradient divided by
// grad_scale (1 when it is not scaled), decoupled weight decay, the moments, then the
// bias-corrected step: p -= step_size * m / (sqrt(v) / sqrt(1 - beta2^t) + eps).
GPU_HOST_DEVICE inline void adamw_element(float& param, float grad, float& exp_avg,
                                          float& exp_avg_sq, const adamw_hyperparameters& h,
                                          float step_size, float bias_correction2_sqrt,
                                          float grad_scale) noexcept
{
    if (grad_scale != 1.0F) {
        grad = grad / grad_scale;
    }
    param -= h.lr_weight_decay * param;
    exp_avg = h.beta1 * exp_avg + h.one_minus_beta1 * grad;
    exp_avg_sq = h.beta2 * exp_avg_sq + h.one_minus_beta2 * grad * grad;
    const float denom = sqrtf(exp_avg_sq) / bias_correction2_sqrt + h.eps;
    param -= step_size * exp_avg / denom;
}

// --- count_correct: (logits.argmax(1) == labels).sum() ------------------------------------

// Whether a label may be used as an index into a row of `classes` logits.
GPU_HOST_DEVICE inline bool label_in_range(int32_t label, int32_t classes) noexcept
{
    return label >= 0 && label < classes;
}

// The index a row's argmax starts from: above every column, it is what a row keeps when no
// logit wins (all of them NaN).
constexpr int32_t argmax_none = 0x7fffffff;

// One step of the argmax, over the elements of a lane and then over the warp's shuffles: ties go
// to the lowest index, as torch.argmax; a NaN never compares greater, so it never wins.
GPU_HOST_DEVICE inline void argmax_keep_best(float& best, int32_t& best_index, float value,
                                             int32_t index) noexcept
{
    if (value > best || (value == best && index < best_index)) {
        best = value;
        best_index = index;
    }
}

// Whether a row counts as correct: its label is in range and its argmax is the label. The range
// comes first because argmax_none (a row of NaN) equals the label INT32_MAX.
GPU_HOST_DEVICE inline bool argmax_hits_label(int32_t best_index, int32_t label,
                                              int32_t classes) noexcept
{
    return label_in_range(label, classes) && best_index == label;
}

} // namespace gpu::nn::detail::rules
