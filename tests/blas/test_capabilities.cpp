// gpu/blas/capabilities.hpp: tensor cores and estimated peaks, checked against NVIDIA's
// published figures for known GPUs (no GPU needed), and against the current device.
#include <gpu/blas/capabilities.hpp>

#include "catch.hpp"

#include <gpu/device.hpp>

using Catch::Matchers::ContainsSubstring;
namespace blas = gpu::blas;
using blas::precision;

namespace {
gpu::device_properties gpu_like(int major, int minor, int sms, int clock_mhz)
{
    gpu::device_properties props;
    props.capability = {major, minor};
    props.multiprocessor_count = sms;
    props.clock_rate_khz = clock_mhz * 1000;
    return props;
}
double peak(precision p, const gpu::device_properties& props)
{
    const auto value = blas::estimated_peak_tflops(p, props);
    REQUIRE(value.has_value());
    return *value;
}
} // namespace

TEST_CASE("estimated peaks reproduce the datasheets of A100, H100 and T4", "[blas]")
{
    const auto a100 = gpu_like(8, 0, 108, 1410); // A100 SXM at its boost clock
    CHECK(peak(precision::fp16, a100) == Approx(312).epsilon(0.01));
    CHECK(peak(precision::bf16, a100) == Approx(312).epsilon(0.01));
    CHECK(peak(precision::tf32, a100) == Approx(156).epsilon(0.01));
    CHECK(peak(precision::fp32, a100) == Approx(19.5).epsilon(0.01));
    CHECK(peak(precision::fp64, a100) == Approx(19.5).epsilon(0.01));
    const auto h100 = gpu_like(9, 0, 132, 1830); // H100 SXM at NVIDIA's tensor-core boost clock
    CHECK(peak(precision::fp16, h100) == Approx(989.4).epsilon(0.01));
    CHECK(peak(precision::tf32, h100) == Approx(494.7).epsilon(0.01));
    CHECK(peak(precision::fp32, h100) == Approx(61.8).epsilon(0.01));
    const auto t4 = gpu_like(7, 5, 40, 1590);
    CHECK(peak(precision::fp16, t4) == Approx(65.1).epsilon(0.01));
    CHECK(peak(precision::fp32, t4) == Approx(8.1).epsilon(0.01));
}

TEST_CASE("unknown architectures and missing properties give no peak rather than a guess", "[blas]")
{
    CHECK_FALSE(
        blas::estimated_peak_tflops(precision::fp16, gpu_like(10, 0, 148, 1965)).has_value());
    CHECK_FALSE(blas::estimated_peak_tflops(precision::fp16, gpu_like(9, 0, 0, 1980)).has_value());
    CHECK_FALSE(blas::estimated_peak_tflops(precision::tf32, gpu_like(7, 5, 40, 1590)).has_value());
    CHECK(blas::dense_flops_per_clock_per_sm(precision::bf16, {7, 5}) == 0);
    CHECK(blas::dense_flops_per_clock_per_sm(precision::fp16, {9, 0}) == 4096);
}

TEST_CASE("tensor cores by precision and architecture", "[blas]")
{
    const auto t4 = gpu_like(7, 5, 40, 1590);
    const auto h200 = gpu_like(9, 0, 132, 1980);
    const auto rtx = gpu_like(8, 6, 82, 1695);
    CHECK(blas::precision_support(precision::fp16, t4).tensor_cores);
    CHECK_FALSE(blas::precision_support(precision::bf16, t4).tensor_cores);
    CHECK_FALSE(blas::precision_support(precision::bf16, t4).native);
    CHECK_THAT(blas::precision_support(precision::bf16, t4).note, ContainsSubstring("emulated"));
    const auto tf32_t4 = blas::precision_support(precision::tf32, t4);
    CHECK_FALSE(tf32_t4.tensor_cores);
    CHECK_FALSE(tf32_t4.native);
    CHECK_THAT(tf32_t4.note, ContainsSubstring("runs as FP32"));
    CHECK(tf32_t4.peak_tflops == blas::estimated_peak_tflops(precision::fp32, t4));
    for (const precision p : {precision::tf32, precision::fp16, precision::bf16}) {
        INFO(blas::to_string(p));
        CHECK(blas::precision_support(p, h200).tensor_cores);
        CHECK(blas::precision_support(p, rtx).tensor_cores);
    }
    CHECK_FALSE(blas::precision_support(precision::fp32, h200).tensor_cores);
    CHECK_THAT(blas::precision_support(precision::fp32, h200).note,
               ContainsSubstring("math_mode::tf32"));
    CHECK(blas::precision_support(precision::fp64, h200).tensor_cores);
    CHECK_FALSE(blas::precision_support(precision::fp64, rtx).tensor_cores);
    CHECK_THAT(blas::precision_support(precision::fp16, h200).note,
               ContainsSubstring("on tensor cores (about 1071 TFLOP/s dense peak, estimated)"));
    CHECK_THAT(blas::precision_support(precision::fp64, t4).note,
               ContainsSubstring("about 0.254 TFLOP/s"));
    const auto all = blas::precision_support(h200);
    REQUIRE(all.size() == 5);
    CHECK(all.front().which == precision::fp64);
    CHECK(all.back().which == precision::bf16);
    CHECK(blas::to_string(precision::tf32) == "TF32");
}

TEST_CASE("the current device's precisions follow its compute capability", "[blas][gpu]")
{
    const auto props = gpu::current_device().properties();
    const auto fp16 = blas::precision_support(precision::fp16);
    CHECK(fp16.tensor_cores == props.capability.has_tensor_cores());
    CHECK(blas::precision_support(precision::tf32).tensor_cores == props.capability.has_tf32());
    CHECK(blas::precision_support(precision::bf16).tensor_cores == props.capability.has_bf16());
    if (props.capability.as_int() == 90) {
        REQUIRE(fp16.peak_tflops.has_value());
        // Hopper: 4096 dense FP16 flops per clock per SM; at any clock above 1.5 GHz that is
        // over 6 TFLOP/s per SM (H200 and H100 SXM: 132 SMs, H100 PCIe: 114).
        CHECK(*fp16.peak_tflops > 6.0 * props.multiprocessor_count);
    }
}
