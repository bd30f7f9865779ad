// Private to cudagap_core: the hints for the CUDA statuses that stream capture produces, which
// gpu::hint_for (error.cpp) gives for them. Kept next to the capture code (capture.cpp) because
// they name its calls and their fixes; error.cpp only asks.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

namespace gpu::detail {

/// The hint for @p status when it is one of the statuses of stream capture and graph update
/// (cudaErrorStreamCapture*, cudaErrorCapturedEvent, cudaErrorGraphExecUpdateFailure,
/// cudaErrorNotPermitted): the likely offending call and its fix. Empty for any other status.
[[nodiscard]] std::string capture_hint(cudaError_t status);

} // namespace gpu::detail
