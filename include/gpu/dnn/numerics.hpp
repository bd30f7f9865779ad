/// @file numerics.hpp
/// @brief `gpu::dnn::check_finite`: the core's NaN/Inf check (`gpu::check_finite`, one kernel for
/// every wrapper) on a tensor named by its `data_type`. It is what the development profile's
/// `check_numerics` runs after every convolution (the `torch.autograd.set_detect_anomaly`
/// idea). It answers with the core's `gpu::non_finite_report`; a plan that finds NaN or Inf
/// throws the core's `gpu::numerics_error` (both in `<gpu/numerics.hpp>`).
///
/// @code
/// const gpu::non_finite_report r =
///     gpu::dnn::check_finite(y, count, gpu::dnn::data_type::fp16, stream);
/// @endcode
#pragma once

#include <gpu/dnn/types.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <span>

namespace gpu::dnn {

/// @brief Counts NaN and Inf in @p count elements of @p type in device memory, after the work
/// queued on @p stream; waits for the answer. `gpu::check_finite` with `to_element_type(type)`.
/// @param device_data the device address of the first element
/// @param count the number of elements
/// @param type their element type
/// @param stream where the check is queued; required, since a pointer carries no stream
/// @throws std::invalid_argument for a @p type that is not a named enumerator, a count whose
/// bytes exceed the address space, or a null pointer with a non-zero count
/// @throws gpu::cuda_error when the check cannot run
[[nodiscard]] inline gpu::non_finite_report check_finite(const void* device_data, std::size_t count,
                                                         data_type type, stream_ref stream)
{
    return gpu::check_finite(device_data, count, to_element_type(type), stream);
}

/// @brief The 0.1 name of `check_finite` (which no longer copies the tensor to the host: it
/// runs the core's kernel).
/// @deprecated use `gpu::dnn::check_finite`
[[deprecated("use gpu::dnn::check_finite")]] [[nodiscard]] inline gpu::non_finite_report
find_non_finite(const void* device_data, std::size_t count, data_type type, stream_ref stream)
{
    return check_finite(device_data, count, type, stream);
}

/// @brief The 0.1 host scan, now the core's `gpu::check_finite_on_host`.
/// @deprecated use `gpu::check_finite_on_host(host, count, gpu::dnn::to_element_type(type))`
[[deprecated(
    "use gpu::check_finite_on_host with gpu::dnn::to_element_type")]] [[nodiscard]] inline gpu::
    non_finite_report
    find_non_finite_on_host(std::span<const std::byte> host, std::size_t count, data_type type)
{
    return gpu::check_finite_on_host(host, count, to_element_type(type));
}

} // namespace gpu::dnn
