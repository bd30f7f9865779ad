// Runs README.md's "Matrix multiplies and precisions" block as written (included from the build
// folder, extracted at configure time) on a non-blocking stream, then checks what it made:
// c = a·b against a float64 CPU product of the a and b it filled, and a16 against a rounded to
// FP16, and that every buffer the block made lives on `stream`. Every call of the block must run
// on `stream`: one that ran on the legacy default stream would not be ordered with the
// allocations and the GEMM (the pool memory is NaN-poisoned first, so that a read of an unfilled
// input shows as a failed comparison rather than old, plausible values).
#include <gpu/blas.hpp>
#include <gpu/gpu.hpp>

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <limits>
#include <vector>

namespace {

constexpr int skip_exit_code = 77;

// ‖c − a·b‖ / ‖a·b‖ with a (m x k) and b (k x n) row-major, in float64.
double gemm_error(const std::vector<float>& a, const std::vector<float>& b,
                  const std::vector<float>& c, std::int64_t m, std::int64_t k, std::int64_t n)
{
    double diff = 0.0;
    double norm = 0.0;
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            double sum = 0.0;
            for (std::int64_t p = 0; p < k; ++p) {
                sum += static_cast<double>(a[static_cast<std::size_t>(i * k + p)]) *
                       static_cast<double>(b[static_cast<std::size_t>(p * n + j)]);
            }
            const double got = static_cast<double>(c[static_cast<std::size_t>(i * n + j)]);
            diff += (got - sum) * (got - sum);
            norm += sum * sum;
        }
    }
    return norm > 0.0 ? std::sqrt(diff / norm) : std::numeric_limits<double>::quiet_NaN();
}

} // namespace

int main()
{
    if (!gpu::is_available()) {
        std::printf("SKIPPED: this test needs a usable CUDA device: %s\n",
                    gpu::unavailable_reason().c_str());
        return skip_exit_code;
    }
    const std::int64_t m = 768;
    const std::int64_t k = 512;
    const std::int64_t n = 640;
    gpu::stream stream(gpu::stream_flags::non_blocking);
    // Poison the pool memory the block's buffers will most likely get back, so that reading a or
    // b before their fills (a race) gives NaN rather than old, plausible values.
    {
        gpu::device_buffer<float> poison(static_cast<std::size_t>((m * k + k * n + m * n) * 2),
                                         stream);
        const std::vector<float> nan(poison.size(), std::numeric_limits<float>::quiet_NaN());
        poison.copy_from_host(nan);
    }

#include "readme_gemm_block.inc"

    stream.synchronize();
    const std::vector<float> host_a = a.to_host();
    const std::vector<float> host_b = b.to_host();
    const std::vector<float> host_c = c.to_host();
    const std::vector<__half> host_a16 = a16.to_host();
    const double error = gemm_error(host_a, host_b, host_c, m, k, n);
    std::size_t bad_halves = 0;
    for (std::size_t i = 0; i < host_a.size(); ++i) {
        const __half expected = __float2half(host_a[i]);
        if (std::memcmp(&expected, &host_a16[i], sizeof(__half)) != 0) {
            ++bad_halves;
        }
    }
    std::printf(
        "c = a*b: relative error %.3e against float64 (bound 1e-5, %s math); a16: %zu of %zu "
        "elements differ from a rounded to FP16\n",
        error, std::string(gpu::blas::to_string(h.math())).c_str(), bad_halves, host_a.size());
    const bool fp32 = h.math() != gpu::blas::math_mode::tf32;
    const bool ok = error < (fp32 ? 1e-5 : 1e-3) && bad_halves == 0 && a.stream() == stream.ref() &&
                    a16.stream() == stream.ref();
    std::printf("%s\n", ok ? "PASSED" : "FAILED");
    return ok ? 0 : 1;
}
