// The launchers of the BLAS wrapper's kernels (src/blas/*.cu), with plain types only, so that the
// .cu files need none of cudagap's C++20 headers and nvcc compiles them in its default dialect.
#pragma once

#include <cuda_runtime_api.h>

namespace gpu::blas::detail::kernels {

// Element type codes, in the order of gpu::element_type (gpu::blas::detail::element_type).
enum type_code : int { fp32 = 0, fp64 = 1, fp16 = 2, bf16 = 3 };

// out[i] = convert(in[i] * scale + shift) for n elements (scale 1, shift 0: a plain conversion;
// the arithmetic is done in the wider of the two types). Returns the launch status.
cudaError_t convert(int from, const void* in, int to, void* out, long long n, double scale,
                    double shift, cudaStream_t stream);

} // namespace gpu::blas::detail::kernels
