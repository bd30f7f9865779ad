// check_finite's host side: argument checks, the kernel's counters, and the shared report.
#include <gpu/blas/numerics.hpp>

#include "kernels.hpp"

#include <limits>
#include <stdexcept>
#include <string>

namespace gpu::blas::detail {

gpu::non_finite_report count_non_finite(element_type type, const void* data, std::int64_t batch,
                                        std::int64_t stride, std::int64_t outer, std::int64_t inner,
                                        std::int64_t ld, stream_ref stream)
{
    gpu::non_finite_report report;
    if (batch < 0 || outer < 0 || inner < 0 || stride < 0 || ld < inner) {
        throw std::invalid_argument("gpu::blas::check_finite: invalid extents (batch " +
                                    std::to_string(batch) + ", stride " + std::to_string(stride) +
                                    ", " + std::to_string(outer) + " runs of " +
                                    std::to_string(inner) + ", ld " + std::to_string(ld) + ")");
    }
    // Checked: a view of 2^40 x 2^40 elements wrapped round to 0 and was reported all finite.
    std::int64_t runs = 0;
    std::int64_t elements = 0;
    if (!checked_multiply(batch, outer, runs) || !checked_multiply(runs, inner, elements)) {
        throw std::invalid_argument("gpu::blas::check_finite: " + std::to_string(batch) + " x " +
                                    std::to_string(outer) + " runs of " + std::to_string(inner) +
                                    " elements are more than 64 bits can count");
    }
    report.elements = static_cast<std::size_t>(elements);
    if (report.elements == 0) {
        return report;
    }
    if (data == nullptr) {
        throw std::invalid_argument("gpu::blas::check_finite: null data for " +
                                    std::to_string(report.elements) + " elements");
    }
    constexpr unsigned long long none = std::numeric_limits<unsigned long long>::max();
    device_buffer<unsigned long long> counters(3, stream);
    GPU_CUDA_CHECK(cudaMemsetAsync(counters.data(), 0, 2 * sizeof(unsigned long long), stream.get()));
    GPU_CUDA_CHECK(cudaMemsetAsync(counters.data() + 2, 0xff, sizeof(unsigned long long), stream.get()));
    GPU_CUDA_CHECK(kernels::count_non_finite(static_cast<int>(type), data, batch, stride, outer, inner,
                                             ld, counters.data(), stream.get()));
    unsigned long long host[3] = {};
    GPU_CUDA_CHECK(cudaMemcpyAsync(host, counters.data(), sizeof host, cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    report.nan_count = static_cast<std::size_t>(host[0]);
    report.inf_count = static_cast<std::size_t>(host[1]);
    if (host[2] != none) {
        report.first_index = static_cast<std::size_t>(host[2]);
    }
    return report;
}

} // namespace gpu::blas::detail
