// The launchers of the nn component's training-math kernels (grad_scaler.cu, cross_entropy.cu,
// adamw.cu), with plain types only, so that the .cu files need none of cudagap's C++20 headers
// and nvcc compiles them in its default dialect. The callers (the .cpp files) check every
// argument first; each launcher returns the launch status.
#pragma once

#include "../core/element_codes.hpp"

#include <cuda_runtime_api.h>

#include <stdint.h>

namespace gpu::nn::detail::kernels {

// --- grad_scaler.cu ------------------------------------------------------------------------

// values[0] = scale, values[1] = 0 (found_inf), *tracker = growth_tracker: one thread.
cudaError_t scaler_set_state(float* values, int32_t* tracker, float scale, int32_t growth_tracker,
                             cudaStream_t stream);

// For n > 0 floats at `in`: *found_inf = 1 when any is NaN or Inf (never cleared here); when
// `out` is not null, out[i] = in[i] * (1 / *scale) (in == out allowed).
cudaError_t unscale(const float* in, float* out, long long n, const float* scale, float* found_inf,
                    cudaStream_t stream);

// rules::update_scale on values[0] (scale), *tracker, values[1] (found_inf): one thread.
cudaError_t scaler_update(float* values, int32_t* tracker, float growth_factor,
                          float backoff_factor, int32_t growth_interval, cudaStream_t stream);

// --- cross_entropy.cu ----------------------------------------------------------------------

// Logits formats are element codes: fp32, fp16 or bf16 (FP64 is refused before a launch).
using namespace gpu::detail::kernels;

// *loss = mean over `batch` rows of logsumexp(row) - row[label], in FP32, by one thread block in
// a fixed order (deterministic). A row whose label is outside [0, classes) adds NaN and lowers
// *bad_label to (row << 32 | (uint32_t)label).
cudaError_t cross_entropy_forward(int format, const void* logits, const int32_t* labels,
                                  long long batch, int classes, float* loss,
                                  unsigned long long* bad_label, cudaStream_t stream);

// dlogits = (softmax(row) - onehot(label)) * (*scale or 1) / batch, in the logits' format; a row
// with a bad label is written NaN and recorded as above. dlogits may be logits.
cudaError_t cross_entropy_backward(int format, const void* logits, const int32_t* labels,
                                   long long batch, int classes, void* dlogits, const float* scale,
                                   unsigned long long* bad_label, cudaStream_t stream);

// *correct += the number of rows whose argmax (the first maximum; NaN never wins) is the label.
cudaError_t count_correct(int format, const void* logits, const int32_t* labels, long long batch,
                          int classes, int* correct, cudaStream_t stream);

// --- adamw.cu ------------------------------------------------------------------------------

// The fused AdamW step over n >= 0 parameters: one thread advances *step and writes the step's
// bias-correction factors (factors[0], factors[1]) unless *found_inf is set; then, unless it is
// set, every parameter is updated by rules::adamw_element with grad / *grad_scale (null: 1).
cudaError_t adamw_step(float* params, const float* grads, float* exp_avg, float* exp_avg_sq,
                       long long n, int64_t* step, double* factors, double lr, double beta1,
                       double beta2, double eps, double weight_decay, const float* found_inf,
                       const float* grad_scale, cudaStream_t stream);

// *step = value, by one thread (the value travels as a kernel argument: nothing on the host
// must outlive the launch, and the launch is capturable).
cudaError_t adamw_set_step(int64_t* step, int64_t value, cudaStream_t stream);

} // namespace gpu::nn::detail::kernels
