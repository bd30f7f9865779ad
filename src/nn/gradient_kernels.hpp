// The launchers of the nn component's gradient kernels (gradient_kernels.cu), with plain types
// only, so that the .cu file needs none of cudagap's C++20 headers and nvcc compiles it in its
// default dialect. Private to src/nn.
#pragma once

#include "../core/element_codes.hpp"

#include <cuda_runtime_api.h>

namespace gpu::nn::detail::kernels {

// The element codes that the `*_type` arguments take (fp32, fp16, bf16; fp64 is never passed).
using namespace gpu::detail::kernels;

// to[i] += float(from[i]) for i < n, unless `skip` is not null and *skip != 0 on the device.
// Returns the launch status.
cudaError_t accumulate(int from_type, const void* from, float* to, long long n, const float* skip,
                       cudaStream_t stream);

// to[j] += sum over i < rows of float(from[i * cols + j]), j < cols, summed in FP32 in a fixed
// order. Requires rows, cols > 0. Returns the launch status.
cudaError_t accumulate_column_sums(int from_type, const void* from, long long rows, long long cols,
                                   float* to, cudaStream_t stream);

// gradient[i] = output[i] > 0 ? output_gradient[i] : 0 for i < n, all of type `type`: the
// gradient through a ReLU whose output was `output`. Returns the launch status.
cudaError_t relu_gradient(int type, const void* output, const void* output_gradient, void* gradient,
                          long long n, cudaStream_t stream);

} // namespace gpu::nn::detail::kernels
