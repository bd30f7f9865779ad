// Which GEMM precisions run on tensor cores, and estimated peaks from public figures.
#include <gpu/blas/capabilities.hpp>

#include <cstdio>

namespace gpu::blas {

std::string_view to_string(precision p) noexcept
{
    switch (p) {
    case precision::fp64: return "FP64";
    case precision::fp32: return "FP32";
    case precision::tf32: return "TF32";
    case precision::fp16: return "FP16";
    case precision::bf16: return "BF16";
    }
    return "unknown";
}

namespace {

// The capability's integer form, or 0 (which no table row names) for one that has none.
int sm_of(compute_capability capability) noexcept
{
    return capability.has_int_form() ? capability.as_int() : 0;
}

} // namespace

// Dense FLOP per clock per SM (an FMA counts 2). Sources, NVIDIA's architecture whitepapers:
// - Volta GV100 (7.0): 64 FP32 and 32 FP64 lanes per SM; 8 tensor cores x 64 FP16 FMA/clock
//   (V100: 80 SMs x 1024 x 1.53 GHz = 125 TFLOP/s FP16).
// - Turing TU10x (7.5): 64 FP32 lanes, 2 FP64 units per SM; 8 tensor cores x 64 FP16 FMA/clock
//   (T4: 40 x 1024 x 1.59 GHz = 65 TFLOP/s FP16).
// - Ampere GA100 (8.0): 64 FP32 lanes; 4 tensor cores x 256 FP16 FMA/clock, TF32 at half that,
//   FP64 tensor cores at 64 FMA/clock per SM (A100: 108 x 2048 x 1.41 GHz = 312 TFLOP/s FP16,
//   156 TF32, 19.5 FP64).
// - Ampere GA10x (8.6) and Ada AD10x (8.9): 128 FP32 lanes, 2 FP64 units per SM; 4 tensor cores
//   x 128 dense FP16 FMA/clock, TF32 at half that (A6000: 84 x 1024 x 1.80 GHz = 155 TFLOP/s
//   FP16; L40S: 142 x 1024 x 2.52 GHz = 366). GeForce cards run FP32 accumulation at half rate.
// - Hopper GH100 (9.0): 128 FP32 and 64 FP64 lanes per SM; 4 tensor cores x 512 dense FP16
//   FMA/clock, TF32 at half that, FP64 tensor cores at 128 FMA/clock per SM (H100 SXM: 132 x
//   4096 x 1.83 GHz = 989 TFLOP/s FP16, 495 TF32, 67 FP64).
// Architectures not listed (Blackwell, Jetson) have no figure here: their peaks are "unknown"
// rather than guessed.
int dense_flops_per_clock_per_sm(precision p, compute_capability capability) noexcept
{
    const int sm = sm_of(capability);
    const bool ga10x_or_ada = sm == 86 || sm == 89;
    switch (p) {
    case precision::fp32:
        return sm == 70 || sm == 75 || sm == 80 ? 128 : ga10x_or_ada || sm == 90 ? 256 : 0;
    case precision::fp64:
        return sm == 70 ? 64 : sm == 80 ? 128 : sm == 90 ? 256 : sm == 75 || ga10x_or_ada ? 4 : 0;
    case precision::tf32: return sm == 80 ? 1024 : ga10x_or_ada ? 512 : sm == 90 ? 2048 : 0;
    case precision::fp16:
        return sm == 70 || sm == 75 || ga10x_or_ada ? 1024 : sm == 80 ? 2048 : sm == 90 ? 4096 : 0;
    case precision::bf16: return sm == 80 ? 2048 : ga10x_or_ada ? 1024 : sm == 90 ? 4096 : 0;
    }
    return 0;
}

std::optional<double> estimated_peak_tflops(precision p, const device_properties& device)
{
    const int flops = dense_flops_per_clock_per_sm(p, device.capability);
    if (flops == 0 || device.multiprocessor_count <= 0 || device.clock_rate_khz <= 0) {
        return std::nullopt;
    }
    return static_cast<double>(device.multiprocessor_count) * flops * device.clock_rate_khz * 1e3 /
           1e12;
}

precision_info precision_support(precision p, const device_properties& device)
{
    const compute_capability cc = device.capability;
    const int sm = sm_of(cc);
    precision_info info;
    info.which = p;
    switch (p) {
    case precision::fp64:
        // FP64 tensor cores (DMMA): GA100, GH100 and GB100.
        info.tensor_cores = sm == 80 || sm == 90 || sm == 100;
        info.note = info.tensor_cores ? "FP64 arithmetic on FP64 tensor cores"
                                      : "FP64 arithmetic on the FP64 units";
        break;
    case precision::fp32:
        info.note = cc.has_tf32() ? "FP32 arithmetic on the CUDA cores, no tensor cores "
                                    "(math_mode::tf32 uses them, at TF32 precision)"
                                  : "FP32 arithmetic on the CUDA cores, no tensor cores";
        break;
    case precision::tf32:
        info.tensor_cores = cc.has_tf32();
        info.native = cc.has_tf32();
        info.note = info.native ? "FP32 data rounded to TF32 (10-bit mantissa) on tensor cores, "
                                  "FP32 accumulation"
                                : "no TF32 before Ampere (compute capability 8.0): runs as FP32";
        break;
    case precision::fp16:
        info.tensor_cores = cc.has_tensor_cores();
        info.note = std::string("FP16 inputs, FP32 accumulation, ") +
                    (info.tensor_cores ? "on tensor cores" : "without tensor cores");
        break;
    case precision::bf16:
        info.tensor_cores = cc.has_bf16();
        info.native = cc.has_bf16();
        info.note = info.native ? "BF16 inputs, FP32 accumulation, on tensor cores"
                                : "BF16 inputs, FP32 accumulation, emulated without tensor cores "
                                  "(BF16 hardware starts with Ampere, compute capability 8.0)";
        break;
    }
    // Without TF32 hardware, TF32 mode runs at FP32's speed.
    info.peak_tflops =
        estimated_peak_tflops(info.native || p != precision::tf32 ? p : precision::fp32, device);
    if (info.peak_tflops) {
        char text[96];
        std::snprintf(text, sizeof text,
                      *info.peak_tflops >= 100.0 ? " (about %.0f TFLOP/s dense peak, estimated)"
                                                 : " (about %.3g TFLOP/s dense peak, estimated)",
                      *info.peak_tflops);
        info.note += text;
    }
    return info;
}

std::vector<precision_info> precision_support(const device_properties& device)
{
    std::vector<precision_info> all;
    for (const precision p :
         {precision::fp64, precision::fp32, precision::tf32, precision::fp16, precision::bf16}) {
        all.push_back(precision_support(p, device));
    }
    return all;
}

precision_info precision_support(precision p)
{
    return precision_support(p, current_device().properties());
}

} // namespace gpu::blas
