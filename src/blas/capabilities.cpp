// Which GEMM precisions run on tensor cores, and their dense peaks: NVIDIA's datasheet figures
// for the GPUs listed here, estimates from architecture figures and the clock for the others.
#include <gpu/blas/capabilities.hpp>
#include <gpu/detail/enum_names.hpp>
#include <gpu/element_type.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>

namespace gpu::blas {

// The storage formats are named as the core names them (gpu/element_type.hpp); TF32 is a way of
// computing on FP32 data, no element type, so its name is written here.
constexpr gpu::detail::enum_name<precision> precision_names[] = {
    {precision::fp64, gpu::to_string(gpu::element_type::fp64)},
    {precision::fp32, gpu::to_string(gpu::element_type::fp32)},
    {precision::tf32, "TF32"},
    {precision::fp16, gpu::to_string(gpu::element_type::fp16)},
    {precision::bf16, gpu::to_string(gpu::element_type::bf16)}};
std::string_view to_string(precision p) noexcept
{
    return gpu::detail::name_of(precision_names, p);
}

namespace {

// The capability's integer form, or 0 (which no table row names) for one that has none.
int sm_of(compute_capability capability) noexcept
{
    return capability.has_int_form() ? capability.as_int() : 0;
}

// A peak as people read it: whole TFLOP/s from 100 up (989), three digits below (19.5, 0.254).
std::string rounded_tflops(double tflops)
{
    char text[32];
    std::snprintf(text, sizeof text, tflops >= 100.0 ? "%.0f" : "%.3g", tflops);
    return text;
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

std::string_view to_string(peak_basis basis) noexcept
{
    return basis == peak_basis::datasheet ? "datasheet" : "estimated from the max SM clock";
}

std::string peak_figure::label() const
{
    return basis == peak_basis::datasheet ? source : std::string(blas::to_string(basis));
}

std::string peak_figure::to_string() const
{
    const std::string why = basis == peak_basis::datasheet || source.empty()
                                ? label()
                                : std::string(blas::to_string(basis)) + ": " + source;
    return rounded_tflops(tflops) + " TFLOP/s (" + why + ")";
}

namespace {

// One GPU model of a datasheet. Dense TFLOP/s by precision, in the order of `precision` (FP64,
// FP32, TF32, FP16, BF16); 0 where the datasheet lists none (cudagap then estimates). FP64 is the
// FP64 tensor-core figure where the GPU has them, as dense_flops_per_clock_per_sm counts it.
struct datasheet_model {
    const char* model;                     // as the datasheet names it
    const char* name_has;                  // part of cudaDeviceProp::name (case does not matter)
    std::array<const char*, 2> name_lacks; // parts the name must not have (nullptr: none)
    int major;
    int minor;
    int sms;
    std::array<double, 5> tflops;
};

// Sources: NVIDIA's product datasheets (nvidia.com/en-us/data-center/<model>). Figures starred
// "with sparsity" there are halved; the others are dense already.
// - H100 SXM and H200 SXM (same GH100 SMs and clocks): datasheets FP64 Tensor Core 67, FP32 67,
//   TF32 989*, FP16 and BF16 1,979*. Taken to one decimal as the Hopper architecture whitepaper
//   gives them dense (66.9, 66.9, 494.7, 989.4): 132 SMs x 4096 FLOP/clock x 1830 MHz = 989.4.
// - H100 PCIe: datasheet 51, 51, 756*, 1,513*; whitepaper 51.2, 51.2, 378, 756 (114 SMs).
// - H200 NVL: datasheet FP64 Tensor Core 60, FP32 60, TF32 835*, FP16 and BF16 1,671*.
// - A100 (SXM and PCIe, 40 and 80 GB): datasheet FP64 Tensor Core 19.5, FP32 19.5, TF32 156,
//   FP16 and BF16 312 (twice that with sparsity).
// - A30: datasheet FP64 Tensor Core 10.3, FP32 10.3, TF32 82, FP16 and BF16 165.
// - A10: datasheet FP32 31.2, TF32 62.5, FP16 and BF16 125 (no FP64 figure).
// - L4: datasheet FP32 30.3, TF32 120*, FP16 and BF16 242* (no FP64 figure).
// - L40S: datasheet FP32 91.6, TF32 366*, FP16 and BF16 733* (no FP64 figure).
// - V100 SXM2, V100 PCIe, V100S PCIe: datasheets FP64 7.8 / 7 / 8.2, FP32 15.7 / 14 / 16.4,
//   tensor (FP16) 125 / 112 / 130; no TF32 or BF16 hardware.
// - T4: datasheet FP32 8.1, mixed-precision FP16/FP32 65 (no FP64 figure).
// Others (H100 NVL, GH200, H800, GeForce and RTX cards, Blackwell) get the clock estimate,
// labelled as one: cudagap has no datasheet figure for them that it could check here.
constexpr std::array<datasheet_model, 13> datasheet_models{{
    {"NVIDIA H200 SXM", "H200", {"NVL", "GH200"}, 9, 0, 132, {66.9, 66.9, 494.7, 989.4, 989.4}},
    {"NVIDIA H200 NVL", "H200 NVL", {"GH200", nullptr}, 9, 0, 132, {60, 60, 417.5, 835.5, 835.5}},
    {"NVIDIA H100 SXM", "H100", {"PCIE", "NVL"}, 9, 0, 132, {66.9, 66.9, 494.7, 989.4, 989.4}},
    {"NVIDIA H100 PCIe", "H100 PCIE", {nullptr, nullptr}, 9, 0, 114, {51.2, 51.2, 378, 756, 756}},
    {"NVIDIA A100", "A100", {nullptr, nullptr}, 8, 0, 108, {19.5, 19.5, 156, 312, 312}},
    {"NVIDIA A30", "A30", {nullptr, nullptr}, 8, 0, 56, {10.3, 10.3, 82, 165, 165}},
    {"NVIDIA A10", "A10", {nullptr, nullptr}, 8, 6, 72, {0, 31.2, 62.5, 125, 125}},
    {"NVIDIA L4", "L4", {nullptr, nullptr}, 8, 9, 58, {0, 30.3, 60, 121, 121}},
    {"NVIDIA L40S", "L40S", {nullptr, nullptr}, 8, 9, 142, {0, 91.6, 183, 366.5, 366.5}},
    {"NVIDIA V100 SXM2", "V100-SXM2", {nullptr, nullptr}, 7, 0, 80, {7.8, 15.7, 0, 125, 0}},
    {"NVIDIA V100 PCIe", "V100-PCIE", {nullptr, nullptr}, 7, 0, 80, {7, 14, 0, 112, 0}},
    {"NVIDIA V100S PCIe", "V100S-PCIE", {nullptr, nullptr}, 7, 0, 80, {8.2, 16.4, 0, 130, 0}},
    {"NVIDIA T4", "T4", {nullptr, nullptr}, 7, 5, 40, {0, 8.1, 0, 65, 0}},
}};

std::string upper(std::string_view text)
{
    std::string result(text);
    std::transform(result.begin(), result.end(), result.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return result;
}

bool describes(const datasheet_model& model, const device_properties& device)
{
    if (device.capability.major != model.major || device.capability.minor != model.minor ||
        device.multiprocessor_count != model.sms) {
        return false;
    }
    const std::string name = upper(device.name);
    return name.find(model.name_has) != std::string::npos &&
           std::none_of(model.name_lacks.begin(), model.name_lacks.end(), [&](const char* part) {
               return part != nullptr && name.find(part) != std::string::npos;
           });
}

} // namespace

std::optional<peak_figure> datasheet_peak(precision p, const device_properties& device)
{
    for (const datasheet_model& model : datasheet_models) {
        if (!describes(model, device)) {
            continue;
        }
        const double tflops = model.tflops[static_cast<std::size_t>(p)];
        if (tflops <= 0.0) {
            return std::nullopt;
        }
        return peak_figure{tflops, peak_basis::datasheet, std::string(model.model) + " datasheet"};
    }
    return std::nullopt;
}

std::optional<peak_figure> dense_peak(precision p, const device_properties& device)
{
    if (std::optional<peak_figure> published = datasheet_peak(p, device)) {
        return published;
    }
    const std::optional<double> estimate = estimated_peak_tflops(p, device);
    if (!estimate) {
        return std::nullopt;
    }
    return peak_figure{*estimate, peak_basis::max_sm_clock,
                       std::to_string(device.multiprocessor_count) + " SMs x " +
                           std::to_string(dense_flops_per_clock_per_sm(p, device.capability)) +
                           " FLOP/clock x " + std::to_string(device.clock_rate_khz / 1000) +
                           " MHz"};
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
    info.peak = dense_peak(info.native || p != precision::tf32 ? p : precision::fp32, device);
    if (info.peak) {
        info.note += " (about " + rounded_tflops(info.peak->tflops) + " TFLOP/s dense peak, " +
                     info.peak->label() + ")";
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
