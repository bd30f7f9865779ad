/// @file profile.hpp
/// @brief Configuration profiles: development, production and testing settings
/// (docs/profiles.md) as plain structs that cudagap's handles and plans honour.
///
/// A profile holds library-neutral switches, named as PyTorch names them; each wrapper maps them
/// onto its library (`gpu::blas::handle_options`, `gpu::dnn::convolution_options`):
///
/// | setting | development | production | testing | PyTorch |
/// |---|---|---|---|---|
/// | `synchronous_checks`: sync and check every launch | yes | no | no | `CUDA_LAUNCH_BLOCKING=1` |
/// | `check_numerics`: check outputs for NaN and Inf | yes | no | no | anomaly detection |
/// | `allow_tf32`: TF32 for FP32 data | no | yes | no | `allow_tf32` |
/// | `precision`: preferred precision | FP32 | FP16 | FP32 | |
/// | `benchmark`: time the candidates, take the fastest | no | yes | no | `cudnn.benchmark` |
/// | `deterministic`: reproducible results | no | no | yes | `cudnn.deterministic` |
/// | `seed`: fixed random seed | no | no | 42 | `torch.manual_seed` |
/// | `nvtx_ranges`: name the work in NVTX ranges | yes | no | yes | `emit_nvtx` |
#pragma once

#include <gpu/element_type.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu {

/// @brief The element type a profile prefers where the caller leaves the choice to it: the core's
/// element types that a program computes in by choice, as `detail::preferred_precisions` maps
/// them (`to_element_type` gives the `gpu::element_type`).
enum class preferred_precision {
    fp32, ///< single precision: the reference, and easiest to debug
    fp16, ///< half precision on tensor cores: twice the throughput, half the memory
    bf16, ///< bfloat16: FP32's range with FP16's size (Ampere and newer)
};

namespace detail {
/// @brief The one table of the preferred precisions: the core's element type of each, which
/// gives it its name.
inline constexpr element_type_mapping<preferred_precision> preferred_precisions[] = {
    {preferred_precision::fp32, element_type::fp32},
    {preferred_precision::fp16, element_type::fp16},
    {preferred_precision::bf16, element_type::bf16}};
} // namespace detail

/// @brief The name of a precision: `fp32`, `fp16` or `bf16` (the enumerator name of its element
/// type); `unknown` for a value outside the enumeration.
[[nodiscard]] constexpr std::string_view to_string(preferred_precision precision) noexcept
{
    return detail::name_of(detail::preferred_precisions, precision);
}

/// @brief The core's element type of @p precision, e.g. for `gpu::nn::mixed_precision`.
/// @throws std::invalid_argument when @p precision is not a named enumerator (its value named)
[[nodiscard]] inline element_type to_element_type(preferred_precision precision)
{
    return detail::to_element_type(detail::preferred_precisions, precision, "gpu::to_element_type",
                                   "preferred_precision");
}

/// @brief The preferred precision of the core's element type @p type.
/// @throws std::invalid_argument for FP64 (no profile prefers it) or a value outside the
/// enumeration, naming the types that are preferred precisions
[[nodiscard]] inline preferred_precision to_preferred_precision(element_type type)
{
    return detail::from_element_type(detail::preferred_precisions, type,
                                     "gpu::to_preferred_precision", "preferred_precision");
}

/// @brief A set of settings for cudagap's handles and plans. Plain data: copy, compare, change
/// a field, pass it on.
struct profile {
    /// Name shown in reports: `development`, `production`, `testing` or `custom`.
    std::string name = "custom";
    /// Synchronise and check for errors after every cudagap launch, so a failure is reported at
    /// the call that caused it (the `CUDA_LAUNCH_BLOCKING=1` idea). Slow; for debugging.
    bool synchronous_checks = false;
    /// Check outputs for NaN and Inf after every cudagap operation and throw where they appear
    /// (the `torch.autograd.set_detect_anomaly` idea). Slow; for debugging.
    bool check_numerics = false;
    /// Let cuBLAS and cuDNN use TF32 tensor cores for FP32 data (Ampere and newer): about 8x
    /// the FP32 throughput with a 10-bit mantissa (`torch.backends.*.allow_tf32`).
    bool allow_tf32 = false;
    /// The precision to use where a program lets the profile choose.
    preferred_precision precision = preferred_precision::fp32;
    /// Time the candidate algorithms of an operation on the real data and run the fastest,
    /// instead of taking the library's heuristic first choice: slower planning, faster runs
    /// (PyTorch's `cudnn.benchmark`). cuDNN convolution plans honour it.
    bool benchmark = false;
    /// Bitwise-reproducible results: cuBLAS without atomics, deterministic cuDNN algorithms
    /// (PyTorch's `cudnn.deterministic`). With `benchmark`, only deterministic algorithms are
    /// timed.
    bool deterministic = false;
    /// A fixed seed for random fills; empty means "seed from the clock".
    std::optional<std::uint64_t> seed{};
    /// Name cudagap's work (GEMMs, convolutions, layers, graph replays, collectives) and the
    /// program's own `gpu::nvtx::range`s in NVTX ranges, so that Nsight Systems shows them
    /// (`gpu::nvtx::apply` turns them on; `<gpu/nvtx.hpp>`). Nearly free with no profiler
    /// attached.
    bool nvtx_ranges = false;

    /// @brief Fields compare equal one by one.
    friend bool operator==(const profile&, const profile&) = default;

    /// @brief Debugging: synchronous checks, NaN/Inf checks, FP32, no TF32, no benchmarking,
    /// NVTX ranges.
    [[nodiscard]] static profile development();
    /// @brief Speed: TF32 allowed, FP16 preferred, algorithms benchmarked.
    [[nodiscard]] static profile production();
    /// @brief Reproducibility: deterministic algorithms, no atomics, no TF32, seed 42, NVTX
    /// ranges.
    [[nodiscard]] static profile testing();
    /// @brief What cudagap does when no profile is chosen: the default-constructed settings
    /// (no extra checks, FP32 without TF32, no benchmarking), named `default`.
    [[nodiscard]] static profile defaults();

    /// @brief The tag that prefixes the profile's lines: `DEV`, `PROD`, `TEST`, else the name
    /// in capitals (`DEFAULT`, `CUSTOM`).
    [[nodiscard]] std::string tag() const;

    /// @brief One line per setting, e.g. `TF32: allowed`, for reports and the profiles example.
    [[nodiscard]] std::vector<std::string> describe() const;
};

/// @brief The names `profile_from_name` accepts: development, production, testing.
[[nodiscard]] std::vector<std::string_view> profile_names();

/// @brief The preset called @p name (`development`, `production` or `testing`, also the short
/// forms `dev`, `prod`, `test`).
/// @throws std::invalid_argument naming @p name and the accepted names
[[nodiscard]] profile profile_from_name(std::string_view name);

/// @brief The preset named by the environment variable `CUDAGAP_PROFILE`, if it is set.
/// @throws std::invalid_argument when the variable names no preset (with its value)
[[nodiscard]] std::optional<profile> profile_from_environment();

/// @brief The profile a program runs with: @p command_line (e.g. the value of `--profile`) when
/// it is not empty, else `CUDAGAP_PROFILE` when it is set, else `profile::defaults()`.
/// @throws std::invalid_argument when the chosen name is no preset (naming where it came from)
[[nodiscard]] profile select_profile(std::string_view command_line = {});

} // namespace gpu
