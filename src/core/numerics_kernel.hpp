// The launcher of the core's NaN/Inf kernel (numerics.cu), with plain types only, so that the
// .cu file needs none of cudagap's C++20 headers and nvcc compiles it in its default dialect.
#pragma once

#include <cuda_runtime_api.h>

namespace gpu::detail::kernels {

// Counts NaN and Inf among `batch` blocks `batch_stride` elements apart, each of `runs` runs of
// `run_length` contiguous elements `run_stride` apart, of the format `format` (a
// finite_bits::format). counters[0] += NaN, counters[1] += Inf, counters[2] = min(its value,
// storage offset of the first either). Requires batch * runs * run_length > 0 and no overflow.
// Returns the launch status.
cudaError_t count_non_finite(int format, const void* data, long long batch, long long batch_stride,
                             long long runs, long long run_length, long long run_stride,
                             unsigned long long* counters, cudaStream_t stream);

// flag[0] = code when flag[0] is 0 and one of the n contiguous elements of `format` at `data`
// is NaN or Inf (the first such check on a stream keeps its code). Requires n > 0. Returns the
// launch status.
cudaError_t flag_non_finite(int format, const void* data, long long n, unsigned int* flag,
                            unsigned int code, cudaStream_t stream);

} // namespace gpu::detail::kernels
