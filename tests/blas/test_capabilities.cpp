// gpu/blas/capabilities.hpp: tensor cores and peaks, checked against NVIDIA's published figures
// for known GPUs with fake device properties (no GPU needed), and against the current device.
#include <gpu/blas/capabilities.hpp>

#include "catch.hpp"

#include <gpu/device.hpp>

#include <string>
#include <utility>

using Catch::Matchers::ContainsSubstring;
namespace blas = gpu::blas;
using blas::precision;

namespace {
gpu::device_properties gpu_like(int major, int minor, int sms, int clock_mhz, std::string name = "")
{
    gpu::device_properties props;
    props.name = std::move(name);
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
    REQUIRE(tf32_t4.peak.has_value());
    CHECK(tf32_t4.peak->tflops == blas::estimated_peak_tflops(precision::fp32, t4));
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
    // No name: no datasheet entry matches, so the peak is the clock's estimate, labelled so.
    CHECK_THAT(blas::precision_support(precision::fp16, h200).note,
               ContainsSubstring("on tensor cores (about 1071 TFLOP/s dense peak, estimated from "
                                 "the max SM clock)"));
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
        REQUIRE(fp16.peak.has_value());
        // Hopper: 4096 dense FP16 flops per clock per SM; at any clock above 1.5 GHz that is
        // over 6 TFLOP/s per SM (H200 and H100 SXM: 132 SMs, H100 PCIe: 114).
        CHECK(fp16.peak->tflops > 6.0 * props.multiprocessor_count);
        if (props.name.find("H200") != std::string::npos && props.multiprocessor_count == 132) {
            CHECK(fp16.peak->basis == blas::peak_basis::datasheet);
            CHECK(fp16.peak->tflops == Approx(989.4));
        }
    }
}

TEST_CASE("datasheet peaks for the GPUs NVIDIA publishes them for, by name, SMs and capability",
          "[blas]")
{
    struct expected {
        gpu::device_properties device;
        precision which;
        double tflops;
        const char* source;
    };
    // Names as the driver reports them; clocks are the maximum SM clocks they report.
    const expected table[] = {
        {gpu_like(9, 0, 132, 1980, "NVIDIA H200"), precision::fp16, 989.4, "NVIDIA H200 SXM"},
        {gpu_like(9, 0, 132, 1980, "NVIDIA H200"), precision::bf16, 989.4, "NVIDIA H200 SXM"},
        {gpu_like(9, 0, 132, 1980, "NVIDIA H200"), precision::tf32, 494.7, "NVIDIA H200 SXM"},
        {gpu_like(9, 0, 132, 1980, "NVIDIA H200"), precision::fp64, 66.9, "NVIDIA H200 SXM"},
        {gpu_like(9, 0, 132, 1785, "NVIDIA H200 NVL"), precision::fp16, 835.5, "NVIDIA H200 NVL"},
        {gpu_like(9, 0, 132, 1980, "NVIDIA H100 80GB HBM3"), precision::fp16, 989.4,
         "NVIDIA H100 SXM"},
        {gpu_like(9, 0, 132, 1980, "NVIDIA H100 80GB HBM3"), precision::fp32, 66.9,
         "NVIDIA H100 SXM"},
        {gpu_like(9, 0, 114, 1755, "NVIDIA H100 PCIe"), precision::fp16, 756, "NVIDIA H100 PCIe"},
        {gpu_like(9, 0, 114, 1755, "NVIDIA H100 PCIe"), precision::tf32, 378, "NVIDIA H100 PCIe"},
        {gpu_like(8, 0, 108, 1410, "NVIDIA A100-SXM4-80GB"), precision::fp16, 312, "NVIDIA A100"},
        {gpu_like(8, 0, 108, 1410, "NVIDIA A100 80GB PCIe"), precision::tf32, 156, "NVIDIA A100"},
        {gpu_like(8, 0, 108, 1410, "NVIDIA A100-PCIE-40GB"), precision::fp64, 19.5, "NVIDIA A100"},
        {gpu_like(8, 0, 56, 1440, "NVIDIA A30"), precision::bf16, 165, "NVIDIA A30"},
        {gpu_like(8, 6, 72, 1695, "NVIDIA A10"), precision::fp32, 31.2, "NVIDIA A10"},
        {gpu_like(8, 9, 58, 2040, "NVIDIA L4"), precision::fp16, 121, "NVIDIA L4"},
        {gpu_like(8, 9, 142, 2520, "NVIDIA L40S"), precision::tf32, 183, "NVIDIA L40S"},
        {gpu_like(7, 0, 80, 1530, "Tesla V100-SXM2-16GB"), precision::fp16, 125,
         "NVIDIA V100 SXM2"},
        {gpu_like(7, 0, 80, 1380, "Tesla V100-PCIE-32GB"), precision::fp32, 14, "NVIDIA V100 PCIe"},
        {gpu_like(7, 0, 80, 1597, "Tesla V100S-PCIE-32GB"), precision::fp16, 130,
         "NVIDIA V100S PCIe"},
        {gpu_like(7, 5, 40, 1590, "Tesla T4"), precision::fp16, 65, "NVIDIA T4"},
        {gpu_like(9, 0, 132, 1980, "nvidia h200"), precision::fp16, 989.4, "NVIDIA H200 SXM"},
    };
    for (const expected& e : table) {
        INFO(e.device.name << " " << blas::to_string(e.which));
        const auto sheet = blas::datasheet_peak(e.which, e.device);
        REQUIRE(sheet.has_value());
        CHECK(sheet->tflops == e.tflops);
        CHECK(sheet->basis == blas::peak_basis::datasheet);
        CHECK(sheet->source == std::string(e.source) + " datasheet");
        const auto chosen = blas::dense_peak(e.which, e.device);
        REQUIRE(chosen.has_value());
        CHECK(chosen->tflops == e.tflops);
        // The figure is that of a clock between 1 GHz and the device's maximum: a typo in the
        // table (a sparse figure not halved, a digit off) falls outside.
        const double per_ghz = e.device.multiprocessor_count *
                               blas::dense_flops_per_clock_per_sm(e.which, e.device.capability) /
                               1e3;
        REQUIRE(per_ghz > 0);
        CHECK(e.tflops / per_ghz >= 1.0);
        CHECK(e.tflops / per_ghz <= e.device.clock_rate_khz / 1e6 + 1e-3);
    }
}

TEST_CASE("a GPU without a datasheet entry gets the clock's estimate, labelled as one", "[blas]")
{
    const gpu::device_properties others[] = {
        gpu_like(9, 0, 16, 1980, "NVIDIA H100 80GB HBM3 MIG 1g.10gb"), // fewer SMs than the GPU
        gpu_like(9, 0, 132, 1980, "NVIDIA GH200 480GB"),
        gpu_like(9, 0, 132, 1980, "NVIDIA H800"),
        gpu_like(9, 0, 132, 1980, ""),
        gpu_like(8, 6, 80, 1710, "NVIDIA A10G"),
        gpu_like(8, 9, 142, 2490, "NVIDIA L40"),
        gpu_like(8, 9, 128, 2520, "NVIDIA GeForce RTX 4090"),
    };
    for (const gpu::device_properties& device : others) {
        INFO(device.name);
        CHECK_FALSE(blas::datasheet_peak(precision::fp16, device).has_value());
        const auto peak = blas::dense_peak(precision::fp16, device);
        REQUIRE(peak.has_value());
        CHECK(peak->basis == blas::peak_basis::max_sm_clock);
        CHECK(peak->tflops == blas::estimated_peak_tflops(precision::fp16, device));
    }
    const auto h200 = gpu_like(9, 0, 132, 1980);
    const auto estimate = blas::dense_peak(precision::fp16, h200);
    REQUIRE(estimate.has_value());
    CHECK(estimate->tflops == Approx(1070.5).epsilon(1e-3));
    CHECK(estimate->source == "132 SMs x 4096 FLOP/clock x 1980 MHz");
    CHECK(estimate->label() == "estimated from the max SM clock");
    CHECK(estimate->to_string() ==
          "1071 TFLOP/s (estimated from the max SM clock: 132 SMs x 4096 FLOP/clock x 1980 MHz)");
    CHECK(blas::to_string(blas::peak_basis::max_sm_clock) == "estimated from the max SM clock");
    CHECK(blas::to_string(blas::peak_basis::datasheet) == "datasheet");

    // A precision the datasheet does not list (the T4's FP64) is estimated; one the hardware
    // lacks (BF16 on a V100) has no peak at all.
    const auto t4 = gpu_like(7, 5, 40, 1590, "Tesla T4");
    const auto t4_fp64 = blas::dense_peak(precision::fp64, t4);
    REQUIRE(t4_fp64.has_value());
    CHECK(t4_fp64->basis == blas::peak_basis::max_sm_clock);
    CHECK_FALSE(blas::dense_peak(precision::bf16, gpu_like(7, 0, 80, 1530, "Tesla V100-SXM2-16GB"))
                    .has_value());
}

TEST_CASE("the notes name the peak's basis: the datasheet or the clock's estimate", "[blas]")
{
    const auto h200 = gpu_like(9, 0, 132, 1980, "NVIDIA H200");
    const auto fp16 = blas::precision_support(precision::fp16, h200);
    REQUIRE(fp16.peak.has_value());
    CHECK(fp16.peak->to_string() == "989 TFLOP/s (NVIDIA H200 SXM datasheet)");
    CHECK(fp16.peak->label() == "NVIDIA H200 SXM datasheet");
    CHECK_THAT(fp16.note,
               ContainsSubstring("on tensor cores (about 989 TFLOP/s dense peak, NVIDIA H200 SXM "
                                 "datasheet)"));
    CHECK_THAT(blas::precision_support(precision::tf32, h200).note,
               ContainsSubstring("about 495 TFLOP/s dense peak, NVIDIA H200 SXM datasheet"));
    // TF32 mode on a T4 runs as FP32: its peak is the datasheet's FP32 figure.
    const auto t4 = blas::precision_support(precision::tf32, gpu_like(7, 5, 40, 1590, "Tesla T4"));
    REQUIRE(t4.peak.has_value());
    CHECK(t4.peak->tflops == 8.1);
    CHECK(t4.peak->basis == blas::peak_basis::datasheet);
}
