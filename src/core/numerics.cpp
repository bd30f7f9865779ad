// The words of a NaN/Inf report and of numerics_error, shared by both wings' checks: one error
// type, in the house format, whichever library produced the output.
#include <gpu/numerics.hpp>

#include <cuda_runtime_api.h>

#include <string>
#include <utility>

namespace gpu {

namespace {

constexpr const char* numerics_hint =
    "NaN and Inf usually come from (1) NaN or Inf already in the inputs: check them the same way "
    "(gpu::blas::check_finite, gpu::dnn::find_non_finite) to find the first operation that made "
    "them; (2) FP16 overflow: FP16 holds magnitudes up to 65504 only, so scale the data down, or "
    "use BF16 (FP32's range) or FP32; (3) an uninitialised buffer: an input or output that was "
    "allocated but never written holds whatever was in memory. This check ran because the "
    "profile asks for check_numerics (the development profile does); it costs a synchronisation "
    "and a pass over the output after every operation, so turn it off where speed matters";

int device_or_current(std::optional<int> device) noexcept
{
    if (device) {
        return *device;
    }
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) {
        static_cast<void>(cudaGetLastError()); // no GPU: the error still has to be built
        return -1;
    }
    return current;
}

} // namespace

std::string non_finite_report::to_string() const
{
    if (all_finite()) {
        return "all " + std::to_string(elements) + " elements are finite";
    }
    std::string text = std::to_string(nan_count) + " NaN and " + std::to_string(inf_count) +
                       " Inf in " + std::to_string(elements) + " elements";
    if (first_index) {
        text += ", the first at index " + std::to_string(*first_index);
    }
    return text;
}

numerics_error::numerics_error(std::string operation, const non_finite_report& report,
                               std::optional<int> device, std::source_location where)
    : error(std::move(operation), "non-finite output",
            static_cast<long long>(report.nan_count + report.inf_count), report.to_string(),
            numerics_hint, device_or_current(device), where),
      report_(report)
{
}

} // namespace gpu
