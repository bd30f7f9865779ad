/// @file numerics.hpp
/// @brief NaN and Inf checks of FP32, FP16 and BF16 tensors: what the development profile's
/// `check_numerics` runs after every convolution (the `torch.autograd.set_detect_anomaly` idea).
/// They answer with the core's `gpu::non_finite_report`; a plan that finds NaN or Inf throws the
/// core's `gpu::numerics_error` (both in `<gpu/numerics.hpp>`).
///
/// The device check copies the tensor to the host in chunks and scans it there. That is slow
/// (it moves the whole tensor over PCIe and synchronises) and meant for debugging only; it keeps
/// the cuDNN wing free of its own kernels, so that it builds without nvcc.
#pragma once

#include <gpu/dnn/types.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <span>

namespace gpu::dnn {

/// @brief Scans @p count elements of @p type in host memory.
/// @param host the raw bytes, at least `count * element_size(type)` of them
/// @param count the number of elements
/// @param type their element type
/// @throws std::invalid_argument when @p host is shorter than that (both sizes named; the
/// comparison cannot wrap around), or @p type is not a named enumerator
[[nodiscard]] gpu::non_finite_report find_non_finite_on_host(std::span<const std::byte> host,
                                                             std::size_t count, data_type type);

/// @brief Scans @p count elements of @p type in device memory, after the work queued on
/// @p stream: copies them to the host in chunks of a few MiB and waits for each copy.
/// @param device_data the device address of the first element
/// @param count the number of elements
/// @param type their element type
/// @param stream the stream whose work must finish before the scan (and that copies); required,
/// since a pointer carries no stream to default to
/// @throws std::invalid_argument for a null pointer with a non-zero count, a count whose bytes
/// exceed `size_t`, or a @p type that is not a named enumerator
/// @throws gpu::cuda_error when a copy fails
[[nodiscard]] gpu::non_finite_report find_non_finite(const void* device_data, std::size_t count,
                                                     data_type type, stream_ref stream);

} // namespace gpu::dnn
