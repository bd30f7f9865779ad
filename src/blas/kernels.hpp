// The launchers of the BLAS wrapper's kernels (src/blas/*.cu), with plain types only, so that the
// .cu files need none of cudagap's C++20 headers and nvcc compiles them in its default dialect.
#pragma once

#include "../core/element_codes.hpp"

#include <cuda_runtime_api.h>

namespace gpu::blas::detail::kernels {

// The element codes (fp32, fp64, fp16, bf16) that `from` and `to` take.
using namespace gpu::detail::kernels;

// out[i] = convert(in[i] * scale + shift) for n elements (scale 1, shift 0: a plain conversion;
// the arithmetic is done in the wider of the two types). Returns the launch status.
cudaError_t convert(int from, const void* in, int to, void* out, long long n, double scale,
                    double shift, cudaStream_t stream);

} // namespace gpu::blas::detail::kernels
