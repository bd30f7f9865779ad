/// @file capabilities.hpp
/// @brief What a GPU does with each GEMM precision: whether cuBLAS runs it on tensor cores,
/// and its dense peak, so a program can say so instead of guessing.
///
/// @code
/// for (const auto& p : gpu::blas::precision_support(gpu::current_device().properties())) {
///     std::printf("%-5s %s\n", std::string(to_string(p.which)).c_str(), p.note.c_str());
/// }
/// // FP16  FP16 inputs, FP32 accumulation, on tensor cores (about 989 TFLOP/s dense peak,
/// //       NVIDIA H200 SXM datasheet)
/// @endcode
///
/// A peak is NVIDIA's datasheet figure for the GPUs whose figures cudagap has (`datasheet_peak`:
/// H100, H200, A100, A30, A10, L4, L40S, V100, T4), at the clock NVIDIA quotes. For any other GPU
/// it is estimated from public architecture figures (SM count x dense FLOP per clock per SM x the
/// maximum SM clock) and labelled so: that clock is above the datasheets' basis (1980 against
/// 1830 MHz on an H100 or H200), so the estimate is about 8% higher than the datasheet's figure
/// would be, and a measured fraction of it is conservative.
#pragma once

#include <gpu/device.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::blas {

/// @brief The precisions a GEMM can run in, from FP64 down to the 16-bit formats.
enum class precision {
    fp64, ///< `double` in and out, FP64 arithmetic
    fp32, ///< `float` in and out, FP32 arithmetic (`math_mode::default_math` or `strict_fp32`)
    tf32, ///< `float` in and out, inputs rounded to TF32 on tensor cores (`math_mode::tf32`)
    fp16, ///< `__half` inputs, FP32 accumulation
    bf16, ///< `__nv_bfloat16` inputs, FP32 accumulation
};

/// @brief `FP64`, `FP32`, `TF32`, `FP16` or `BF16`.
[[nodiscard]] std::string_view to_string(precision p) noexcept;

/// @brief Where a peak figure comes from.
enum class peak_basis {
    datasheet,    ///< NVIDIA's published dense figure for this GPU model, at the clock it quotes
    max_sm_clock, ///< estimated: SMs x dense FLOP per clock per SM x the maximum SM clock
};

/// @brief `datasheet` or `estimated from the max SM clock`.
[[nodiscard]] std::string_view to_string(peak_basis basis) noexcept;

/// @brief A dense peak and where it comes from.
struct peak_figure {
    double tflops = 0.0;                         ///< dense (no sparsity) TFLOP/s
    peak_basis basis = peak_basis::max_sm_clock; ///< datasheet, or estimated from the clock
    /// The datasheet (`NVIDIA H200 SXM datasheet`), or the estimate's factors
    /// (`132 SMs x 4096 FLOP/clock x 1980 MHz`).
    std::string source{};

    /// @brief For people: `989 TFLOP/s (NVIDIA H200 SXM datasheet)` or `1071 TFLOP/s
    /// (estimated from the max SM clock: 132 SMs x 4096 FLOP/clock x 1980 MHz)`.
    [[nodiscard]] std::string to_string() const;
    /// @brief `NVIDIA H200 SXM datasheet` or `estimated from the max SM clock` (no factors).
    [[nodiscard]] std::string label() const;
};

/// @brief What a device does with one precision.
struct precision_info {
    precision which = precision::fp32; ///< the precision described
    /// cuBLAS runs GEMMs of this precision on tensor cores on this device.
    bool tensor_cores = false;
    /// The device computes in this precision as such: false for TF32 before Ampere (cuBLAS then
    /// computes in FP32) and for BF16 before Ampere (no BF16 hardware; cuBLAS emulates it).
    bool native = true;
    /// The dense peak (`dense_peak`), with its basis; empty when unknown.
    std::optional<peak_figure> peak{};
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
/// x the maximum SM clock. Empty when the architecture, SM count or clock is unknown. Above the
/// datasheet's figure where there is one (`dense_peak` prefers that).
[[nodiscard]] std::optional<double> estimated_peak_tflops(precision p,
                                                          const device_properties& device);

/// @brief NVIDIA's datasheet figure for precision @p p on @p device, when cudagap knows its
/// model: the compute capability, SM count and a part of the name must all match a table entry,
/// so a MIG instance (fewer SMs) or an unlisted variant gets none. Figures starred "with
/// sparsity" in a datasheet are halved. Empty for other GPUs, and for a precision the datasheet
/// does not list.
[[nodiscard]] std::optional<peak_figure> datasheet_peak(precision p,
                                                        const device_properties& device);

/// @brief The dense peak of precision @p p on @p device: `datasheet_peak` where there is one,
/// else `estimated_peak_tflops` with basis `peak_basis::max_sm_clock`; empty when neither is
/// known.
[[nodiscard]] std::optional<peak_figure> dense_peak(precision p, const device_properties& device);

/// @brief What @p device does with precision @p p (a pure function of the properties).
[[nodiscard]] precision_info precision_support(precision p, const device_properties& device);

/// @brief What @p device does with each precision, FP64 to BF16.
[[nodiscard]] std::vector<precision_info> precision_support(const device_properties& device);

/// @brief What the current device does with precision @p p.
/// @throws gpu::cuda_error when no GPU is usable
[[nodiscard]] precision_info precision_support(precision p);

} // namespace gpu::blas
