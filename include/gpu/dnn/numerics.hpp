/// @file numerics.hpp
/// @brief NaN and Inf checks of FP32, FP16 and BF16 tensors: what the development profile's
/// `check_numerics` runs after every convolution (the `torch.autograd.set_detect_anomaly` idea).
///
/// The device check copies the tensor to the host in chunks and scans it there. That is slow
/// (it moves the whole tensor over PCIe and synchronises) and meant for debugging only; it keeps
/// the cuDNN wing free of its own kernels, so that it builds without nvcc.
#pragma once

#include <gpu/dnn/types.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>

namespace gpu::dnn {

/// @brief What a NaN/Inf scan found.
struct non_finite_report {
    std::size_t elements = 0;               ///< elements scanned
    std::size_t nan_count = 0;              ///< NaNs found
    std::size_t inf_count = 0;              ///< infinities found (either sign)
    std::optional<std::size_t> first_index; ///< index of the first NaN or Inf, if any

    /// @brief Whether every element is finite.
    [[nodiscard]] bool all_finite() const noexcept { return nan_count == 0 && inf_count == 0; }
    /// @brief E.g. `3 NaN and 0 Inf in 1024 elements, the first at index 17`.
    [[nodiscard]] std::string to_string() const;
};

/// @brief Scans @p count elements of @p type in host memory.
/// @param host the raw bytes, at least `count * element_size(type)` of them
/// @param count the number of elements
/// @param type their element type
/// @throws std::invalid_argument when @p host is shorter than that (both sizes named)
[[nodiscard]] non_finite_report find_non_finite_on_host(std::span<const std::byte> host,
                                                        std::size_t count, data_type type);

/// @brief Scans @p count elements of @p type in device memory, after the work queued on
/// @p stream: copies them to the host in chunks of a few MiB and waits for each copy.
/// @param device_data the device address of the first element
/// @param count the number of elements
/// @param type their element type
/// @param stream the stream whose work must finish before the scan (and that copies)
/// @throws std::invalid_argument for a null pointer with a non-zero count
/// @throws gpu::cuda_error when a copy fails
[[nodiscard]] non_finite_report find_non_finite(const void* device_data, std::size_t count,
                                                data_type type, stream_ref stream = {});

/// @brief An operation produced NaN or Inf where the profile asked for checked numerics.
class numerics_error : public std::runtime_error {
public:
    /// @brief Builds the error.
    /// @param operation what produced the values, e.g. the convolution's description
    /// @param report what the scan found
    numerics_error(const std::string& operation, const non_finite_report& report);
    /// @brief What the scan found.
    [[nodiscard]] const non_finite_report& report() const noexcept { return report_; }

private:
    non_finite_report report_;
};

} // namespace gpu::dnn
