/// @file cccl_stream.hpp
/// @brief cudagap's streams and CCCL's `cuda::stream_ref`, both ways, so that code using CCCL
/// (CUB, Thrust, libcu++) takes cudagap's streams and cudagap takes theirs:
///
/// @code
/// gpu::stream s;
/// cuda::stream_ref cccl = gpu::as_cccl(s);          // for an API that takes cuda::stream_ref
/// cub::DeviceReduce::Sum(temp, temp_bytes, in, out, n, gpu::as_cccl(s).get());
/// thrust::reduce(thrust::cuda::par_nosync.on(gpu::as_cccl(s).get()), first, last);
/// gpu::stream_ref back = gpu::from_cccl(cccl);      // for cudagap's functions
/// @endcode
///
/// Free functions rather than conversions of `gpu::stream_ref`, so that `<gpu/stream.hpp>` needs
/// no CCCL header and a plain C++ program pays for libcu++ only where it uses it. (`as_cccl` is
/// also the name under which `<gpu/cccl_resource.hpp>` shows a cudagap resource to CCCL.) CCCL
/// 3.0 ships `<cuda/stream_ref>` in the toolkit's `include/cccl`, which `cudagap::core` puts on
/// the include path.
#pragma once

#include <gpu/stream.hpp>

#include <cuda/stream_ref>

namespace gpu {

/// @brief @p stream as CCCL's `cuda::stream_ref` (the same `cudaStream_t`). A `gpu::stream`
/// converts to the `stream_ref` taken here, which throws `std::logic_error` when it is moved from.
[[nodiscard]] inline cuda::stream_ref as_cccl(stream_ref stream) noexcept
{
    return cuda::stream_ref(stream.get());
}

/// @brief CCCL's @p stream as a `gpu::stream_ref`. A default-constructed `cuda::stream_ref`
/// names the legacy default stream, and so does the result then (`gpu::legacy_default_stream`):
/// CCCL's default is kept, said out loud, never replaced by another stream.
[[nodiscard]] inline stream_ref from_cccl(cuda::stream_ref stream) noexcept
{
    return stream_ref(stream.get());
}

} // namespace gpu
