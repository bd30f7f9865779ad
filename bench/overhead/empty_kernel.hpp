// An empty kernel for cudagap-bench-overhead (empty_kernel.cu): a pointer for gpu::launch, and
// the same kernel launched with <<<>>> for the raw side.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace bench_kernels {

/// The kernel's type: two parameters, no work.
using empty_kernel = void (*)(float* data, std::size_t n);

/// The kernel, for gpu::launch.
empty_kernel empty();

/// `empty<<<1, 32, 0, stream>>>(data, n)` and `cudaGetLastError()`, as a careful caller writes it.
cudaError_t launch_raw(cudaStream_t stream, float* data, std::size_t n);

} // namespace bench_kernels
