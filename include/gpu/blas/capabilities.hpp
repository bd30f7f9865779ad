/// @file capabilities.hpp
/// @brief What a GPU does with each GEMM precision: whether cuBLAS runs it on tensor cores,
/// and an estimate of its dense peak, so a program can say so instead of guessing.
///
/// @code
/// for (const auto& p : gpu::blas::precision_support(gpu::current_device().properties())) {
///     std::printf("%-5s %s\n", std::string(to_string(p.which)).c_str(), p.note.c_str());
/// }
/// // FP16  FP16 inputs, FP32 accumulation, on tensor cores (about 989 TFLOP/s dense peak, estimated)
/// @endcode
///
/// The peaks are estimates from public architecture figures (SM count x dense FLOP per clock
/// per SM x the maximum SM clock); they are upper bounds that real GPUs, whose clocks drop under
/// tensor-core load, do not quite reach. Measured throughput divided by them is conservative.
#pragma once

#include <gpu/device.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::blas {

/// @brief The precisions of a GEMM, as the article compares them.
enum class precision {
    fp64, ///< `double` in and out, FP64 arithmetic
    fp32, ///< `float` in and out, FP32 arithmetic (`math_mode::default_math` or `strict_fp32`)
    tf32, ///< `float` in and out, inputs rounded to TF32 on tensor cores (`math_mode::tf32`)
    fp16, ///< `__half` inputs, FP32 accumulation
    bf16, ///< `__nv_bfloat16` inputs, FP32 accumulation
};

/// @brief `FP64`, `FP32`, `TF32`, `FP16` or `BF16`.
[[nodiscard]] std::string_view to_string(precision p) noexcept;

/// @brief What a device does with one precision.
struct precision_info {
    precision which = precision::fp32; ///< the precision described
    /// cuBLAS runs GEMMs of this precision on tensor cores on this device.
    bool tensor_cores = false;
    /// The device computes in this precision as such: false for TF32 before Ampere (cuBLAS then
    /// computes in FP32) and for BF16 before Ampere (no BF16 hardware; cuBLAS emulates it).
    bool native = true;
    /// Estimated dense peak in TFLOP/s (`estimated_peak_tflops`); empty when unknown.
    std::optional<double> peak_tflops{};
    /// One line for people, e.g. `FP16 inputs, FP32 accumulation, on tensor cores (...)`.
    std::string note{};
};

/// @brief Dense FLOP per clock per SM of a precision on an architecture (FMA = 2 FLOP), from
/// NVIDIA's architecture whitepapers; 0 when cudagap has no figure for it.
///
/// FP32 is the CUDA cores (lanes x 2); TF32, FP16 and BF16 are tensor cores with FP32
/// accumulation at the data-center and professional rate (GeForce cards of 8.6 and 8.9 run FP32
/// accumulation at half that rate); FP64 is FP64 tensor cores where they exist (8.0, 9.0), the
/// FP64 units elsewhere.
[[nodiscard]] int dense_flops_per_clock_per_sm(precision p, compute_capability capability) noexcept;

/// @brief Estimated dense peak of a precision in TFLOP/s: SMs x `dense_flops_per_clock_per_sm`
/// x the maximum SM clock. Empty when the architecture, SM count or clock is unknown.
[[nodiscard]] std::optional<double> estimated_peak_tflops(precision p,
                                                          const device_properties& device);

/// @brief What @p device does with precision @p p (a pure function of the properties).
[[nodiscard]] precision_info precision_support(precision p, const device_properties& device);

/// @brief What @p device does with each precision, FP64 to BF16.
[[nodiscard]] std::vector<precision_info> precision_support(const device_properties& device);

/// @brief What the current device does with precision @p p.
/// @throws gpu::cuda_error when no GPU is usable
[[nodiscard]] precision_info precision_support(precision p);

} // namespace gpu::blas
