// Two small kernels for the graph and capture tests (graph_kernels.cu): something to capture
// besides copies and memsets, whose result the tests can predict. Plain types only, so that the
// .cu file needs none of cudagap's C++20 headers.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace gpu::test {

/// Queues x[i] += y[i] for i < n on @p stream; returns the launch status.
cudaError_t add_into(float* x, const float* y, std::size_t n, cudaStream_t stream);

/// Queues x[i] *= factor for i < n on @p stream; returns the launch status.
cudaError_t scale(float* x, float factor, std::size_t n, cudaStream_t stream);

} // namespace gpu::test
