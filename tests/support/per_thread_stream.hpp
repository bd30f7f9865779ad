// The stream CUDA names cudaStreamPerThread, for tests. Test code only.
#pragma once

#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

namespace gpu::test {

/// The calling thread's default stream (cudaStreamPerThread): a real stream handle that needs no
/// creation, so that the calls of a test reach CUDA (and fail there without a driver).
inline const gpu::stream_ref per_thread_stream(cudaStreamPerThread);

} // namespace gpu::test
