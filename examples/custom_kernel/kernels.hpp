// The kernels of this program (kernels.cu), as a plain C++ header: main.cpp, compiled by any
// C++20 compiler, includes it and launches them with gpu::launch. Replace them with your own.
//
// A .cpp file cannot name a __global__ function, so kernels.cu hands out a pointer to each; the
// pointer's type lists the kernel's parameters, and gpu::launch checks the arguments against
// them at compile time.
#pragma once

#include <cuda/stream_ref>
#include <cuda_runtime_api.h>

#include <cstddef>

namespace kernels {

/// out[i] = a * x[i] + y[i] for i < n, with a grid-stride loop (so any grid covers all n).
using axpy_kernel = void (*)(float a, const float* x, const float* y, float* out, std::size_t n);

/// The axpy kernel, to launch with gpu::launch.
axpy_kernel axpy();

/// Queues *total = the sum of values[0..n) on @p stream with CUB (cub::DeviceReduce::Sum), its
/// temporary storage allocated and freed in stream order; returns the first failing status. A
/// CCCL-style interface: it takes CCCL's cuda::stream_ref, which gpu::as_cccl makes of a
/// gpu::stream.
cudaError_t sum(cuda::stream_ref stream, const float* values, float* total, std::size_t n);

} // namespace kernels
