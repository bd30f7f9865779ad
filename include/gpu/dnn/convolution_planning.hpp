/// @file convolution_planning.hpp
/// @brief What every convolution plan shares, forward and backward: the problem, the options
/// (policy, workspace budget, TF32, determinism, checks), the algorithm enums of the three
/// passes, the candidates and the explanation `explain()` returns, `no_algorithm_error`, and the
/// process-wide plan cache.
///
/// The plans themselves are `gpu::dnn::convolution` (forward, `<gpu/dnn/convolution.hpp>`) and
/// `gpu::dnn::convolution_backward_data` / `convolution_backward_filter`
/// (`<gpu/dnn/convolution_backward.hpp>`). One `convolution_problem` describes all three passes,
/// and one `convolution_options` means the same for each: `exhaustive` is PyTorch's
/// `cudnn.benchmark`, `deterministic` its `cudnn.deterministic`, for every pass.
#pragma once

#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/types.hpp>
#include <gpu/profile.hpp>

#include <compare>
#include <cstddef>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gpu::dnn {

/// @brief The three passes of a convolution, each planned on its own.
enum class convolution_pass {
    forward, ///< y = conv(x, w)
    /// dx = the gradient of the input from dy and w (`cudnnConvolutionBackwardData`)
    backward_data,
    /// dw = the gradient of the filter from x and dy (`cudnnConvolutionBackwardFilter`)
    backward_filter,
};

/// @brief `forward`, `backward_data` or `backward_filter`.
[[nodiscard]] std::string_view to_string(convolution_pass pass) noexcept;

/// @brief cuDNN's forward convolution algorithms (`cudnnConvolutionFwdAlgo_t`).
enum class convolution_algorithm {
    implicit_gemm,         ///< GEMM without materialising the unfolded input; no workspace
    implicit_precomp_gemm, ///< implicit GEMM with precomputed indices; small workspace
    gemm,                  ///< explicit im2col then GEMM; large workspace
    direct,                ///< direct convolution
    fft,                   ///< FFT; large workspace
    fft_tiling,            ///< tiled FFT; less workspace than `fft`
    winograd,              ///< Winograd (3x3 filters)
    winograd_nonfused,     ///< Winograd with separate transforms; more workspace
};

/// @brief E.g. `implicit_precomp_gemm`.
[[nodiscard]] std::string_view to_string(convolution_algorithm algorithm) noexcept;

/// @brief cuDNN's backward data algorithms (`cudnnConvolutionBwdDataAlgo_t`), which compute the
/// gradient of the input. cuDNN gives the first two no better names than numbers.
enum class backward_data_algorithm {
    algo_0,     ///< `CUDNN_CONVOLUTION_BWD_DATA_ALGO_0`: sums with atomics, not deterministic
    algo_1,     ///< `CUDNN_CONVOLUTION_BWD_DATA_ALGO_1`: deterministic; PyTorch's default
    fft,        ///< FFT; large workspace
    fft_tiling, ///< tiled FFT; less workspace than `fft`
    winograd,   ///< Winograd (3x3 filters)
    winograd_nonfused, ///< Winograd with separate transforms; more workspace
};

/// @brief E.g. `algo_1`.
[[nodiscard]] std::string_view to_string(backward_data_algorithm algorithm) noexcept;

/// @brief cuDNN's backward filter algorithms (`cudnnConvolutionBwdFilterAlgo_t`), which compute
/// the gradient of the filter.
enum class backward_filter_algorithm {
    algo_0,   ///< `CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0`: sums with atomics, not deterministic
    algo_1,   ///< `CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1`: deterministic; PyTorch's default
    fft,      ///< FFT; large workspace
    algo_3,   ///< `CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3`: not deterministic
    winograd, ///< not implemented by cuDNN (always reported unsupported)
    winograd_nonfused, ///< Winograd with separate transforms
    fft_tiling,        ///< tiled FFT; less workspace than `fft`
};

/// @brief E.g. `algo_3`.
[[nodiscard]] std::string_view to_string(backward_filter_algorithm algorithm) noexcept;

/// @brief The pass whose algorithms @p Algorithm names.
template <class Algorithm>
requires(std::is_same_v<Algorithm, convolution_algorithm> ||
         std::is_same_v<Algorithm, backward_data_algorithm> ||
         std::is_same_v<Algorithm, backward_filter_algorithm>) inline constexpr convolution_pass
    pass_of_algorithm = std::is_same_v<Algorithm, convolution_algorithm> ? convolution_pass::forward
                        : std::is_same_v<Algorithm, backward_data_algorithm>
                            ? convolution_pass::backward_data
                            : convolution_pass::backward_filter;

/// @brief What a convolution does after the convolution itself (inference epilogues,
/// `cudnnConvolutionBiasActivationForward`). Forward plans only: the backward passes take the
/// problem with `none`.
enum class convolution_epilogue {
    none,      ///< y = conv(x, w)
    bias,      ///< y = conv(x, w) + bias (one value per output channel)
    bias_relu, ///< y = max(conv(x, w) + bias, 0)
};

/// @brief `none`, `bias` or `bias_relu`.
[[nodiscard]] std::string_view to_string(convolution_epilogue epilogue) noexcept;

/// @brief How a plan runs its epilogue (`convolution_explanation::execution`).
///
/// cuDNN ranks and times algorithms for the plain convolution; the fused call may refuse some of
/// them, or all (cuDNN 9 refuses, for instance, some FP16 NHWC problems with few channels, and a
/// bias without activation runs fused only with `implicit_precomp_gemm`). A plan then runs the
/// epilogue unfused, in the three steps of PyTorch's unfused fallback
/// (`raw_cudnn_convolution_add_relu_fallback_out`), and `explain()` says so and why.
enum class epilogue_execution {
    none,  ///< the problem has no epilogue (always so for the backward passes)
    fused, ///< in one call, `cudnnConvolutionBiasActivationForward`
    /// `cudnnConvolutionForward`, then `cudnnAddTensor` (bias), then `cudnnActivationForward`
    /// (ReLU), all on the handle's stream
    unfused,
};

/// @brief `none`, `fused` or `unfused`.
[[nodiscard]] std::string_view to_string(epilogue_execution execution) noexcept;

/// @brief How a backward pass writes its gradient.
enum class gradient_update {
    overwrite,  ///< the gradient replaces the buffer's contents (cuDNN's beta = 0), as in PyTorch
    accumulate, ///< the gradient is added to them (beta = 1): accumulation over micro-batches
};

/// @brief `overwrite` or `accumulate`.
[[nodiscard]] std::string_view to_string(gradient_update update) noexcept;

/// @brief A convolution's shapes, types and layout: what a plan of any pass is made for, and the
/// key of the plan cache (with the pass and the options that change the choice). Plain data.
struct convolution_problem {
    std::vector<int> input{};         ///< N, C, spatial... (logical order, whatever the layout)
    std::vector<int> filter{};        ///< K, C / groups, spatial...
    convolution_geometry geometry{};  ///< padding, stride, dilation, groups, mode
    data_type type = data_type::fp32; ///< element type of every tensor of every pass
    tensor_layout layout =
        tensor_layout::nchw; ///< layout of input, filter and output (and their gradients)
    convolution_epilogue epilogue =
        convolution_epilogue::none; ///< bias and ReLU, if any (forward only)

    /// @brief Checks that the problem makes a convolution whose tensors cuDNN can index.
    /// @throws std::invalid_argument as `validate_convolution` (which includes an output of
    /// more than INT_MAX elements), or when `type`, `layout` or `epilogue` is not a named
    /// enumerator (values named)
    void validate() const;
    /// @brief N, K, output spatial... (also the shape of dy, the gradient of the output).
    /// @throws std::invalid_argument as `validate` (this holds for every member function below
    /// except `to_string`: none computes anything from an invalid problem)
    [[nodiscard]] std::vector<int> output() const;
    /// @brief Elements of the input tensor (and of dx; at most INT_MAX).
    [[nodiscard]] std::size_t input_elements() const;
    /// @brief Elements of the filter (and of dw; at most INT_MAX).
    [[nodiscard]] std::size_t filter_elements() const;
    /// @brief Elements of the output tensor (and of dy; at most INT_MAX).
    [[nodiscard]] std::size_t output_elements() const;
    /// @brief Floating-point operations of one forward (2 per multiply-add, epilogue ignored);
    /// backward data and backward filter each do as many.
    [[nodiscard]] double flops() const;
    /// @brief Bytes that must move at least once: input, filter and output (plus the bias).
    [[nodiscard]] double minimum_bytes() const;
    /// @brief E.g. `fp32 nchw input [32, 3, 224, 224] filter [64, 3, 3, 3] padding [1, 1], ...`.
    [[nodiscard]] std::string to_string() const;

    /// @brief Problems compare member by member.
    friend auto operator<=>(const convolution_problem&, const convolution_problem&) = default;
};

/// @brief The workspace budget of a plan unless told otherwise: 4 GiB, TensorFlow's default
/// cap (PyTorch caps at the largest free block of its allocator instead).
inline constexpr std::size_t default_workspace_budget = std::size_t{4} << 30;

/// @brief How a plan of any pass is made and run. Plain data; `from_profile` fills it from a
/// profile.
struct convolution_options {
    /// How to choose the algorithm (PyTorch: `cudnn.benchmark` is `exhaustive`).
    algorithm_search search = algorithm_search::heuristic;
    /// Algorithms that need more workspace than this are skipped. 0 allows only algorithms
    /// without workspace.
    std::size_t workspace_budget_bytes = default_workspace_budget;
    /// FP32 convolutions may use TF32 tensor cores (PyTorch's `cudnn.allow_tf32`); without it
    /// FP32 runs on FMA units only (`CUDNN_FMA_MATH`). FP16/BF16 always use tensor cores.
    bool allow_tf32 = false;
    /// Only algorithms cuDNN marks deterministic, even under `exhaustive` (PyTorch's
    /// `cudnn.deterministic`); the `deterministic` search implies it.
    bool deterministic = false;
    /// Synchronise after each pass so an asynchronous failure is reported by that call.
    bool synchronous_checks = false;
    /// Scan each result (y, dx, dw, db) for NaN and Inf and throw `gpu::numerics_error` (slow;
    /// debugging).
    bool check_numerics = false;

    /// @brief The options a profile asks for: the search from its switches as PyTorch reads
    /// them (`benchmark` gives `algorithm_search::exhaustive`, else `deterministic` gives
    /// `algorithm_search::deterministic`, else `heuristic`), and its TF32, determinism and
    /// checks. With both switches on, only the deterministic algorithms are timed.
    [[nodiscard]] static convolution_options from_profile(const profile& settings);

    /// @brief The old name of `from_profile`.
    [[deprecated("use convolution_options::from_profile")]] [[nodiscard]] static convolution_options
    from(const profile& settings)
    {
        return from_profile(settings);
    }

    /// @brief Whether only deterministic algorithms may run.
    [[nodiscard]] bool deterministic_only() const noexcept
    {
        return deterministic || search == algorithm_search::deterministic;
    }

    /// @brief Options compare member by member.
    friend bool operator==(const convolution_options&, const convolution_options&) = default;
};

/// @brief One algorithm cuDNN offered for a pass of a problem, and what the plan made of it.
/// @tparam Algorithm the pass's algorithm enum (`convolution_algorithm`,
/// `backward_data_algorithm` or `backward_filter_algorithm`)
template <class Algorithm>
struct basic_algorithm_candidate {
    Algorithm algorithm = Algorithm{}; ///< the algorithm
    /// cuDNN's status for it, e.g. `CUDNN_STATUS_SUCCESS`, with the call that returned it when
    /// that is not the search (`... from cudnnConvolutionForward`): for printing. The plan
    /// compares `status_code`.
    std::string status{};
    /// The status that `status` names: the one the plan compares. A trial that could not
    /// allocate the workspace gives `CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED`, as
    /// cuDNN does when it cannot.
    cudnnStatus_t status_code = CUDNN_STATUS_SUCCESS;
    std::size_t workspace_bytes = 0;          ///< workspace it needs
    std::optional<double> time_ms{};          ///< measured time (exhaustive search only)
    bool deterministic = false;               ///< cuDNN marks it `CUDNN_DETERMINISTIC`
    math_type math = math_type::default_math; ///< the math type it runs with
    bool rejected = false;                    ///< excluded by the policy, the budget or cuDNN
    bool chosen = false;                      ///< the one the plan runs
    std::string reason{};                     ///< why rejected, or why a usable one was not chosen
};

/// @brief A candidate of a forward plan.
using algorithm_candidate = basic_algorithm_candidate<convolution_algorithm>;
/// @brief A candidate of a backward data plan.
using backward_data_candidate = basic_algorithm_candidate<backward_data_algorithm>;
/// @brief A candidate of a backward filter plan.
using backward_filter_candidate = basic_algorithm_candidate<backward_filter_algorithm>;

/// @brief Why a plan runs the algorithm it runs: `explain()` of a plan of any pass.
/// @tparam Algorithm the pass's algorithm enum
template <class Algorithm>
struct basic_convolution_explanation {
    /// The pass this explains.
    static constexpr convolution_pass pass = pass_of_algorithm<Algorithm>;

    std::string problem{};                                 ///< `convolution_problem::to_string()`
    algorithm_search search = algorithm_search::heuristic; ///< the policy
    bool deterministic_only = false;          ///< only deterministic algorithms were allowed
    bool allow_tf32 = false;                  ///< TF32 was allowed for FP32 data
    std::size_t workspace_budget_bytes = 0;   ///< the budget
    Algorithm algorithm = Algorithm{};        ///< the chosen one
    math_type math = math_type::default_math; ///< its math type
    std::size_t workspace_bytes = 0;          ///< its workspace
    std::optional<double> time_ms{};          ///< its measured time, when the search timed it
    bool deterministic = false;               ///< whether it is deterministic
    bool from_cache = false;                  ///< the plan came from the cache: no search ran
    convolution_epilogue epilogue = convolution_epilogue::none; ///< the problem's epilogue
    epilogue_execution execution = epilogue_execution::none;    ///< how the epilogue runs
    /// Why the epilogue runs unfused: the algorithms the fused call refused, with cuDNN's status,
    /// and for `bias` the rule that limits the fused call to `implicit_precomp_gemm`. Empty
    /// unless `execution` is `unfused` (always empty for the backward passes).
    std::string unfused_reason{};
    std::vector<basic_algorithm_candidate<Algorithm>>
        candidates{}; ///< every candidate, in cuDNN's order

    /// @brief A readable report: the pass and the problem, the policy, the choice, then one line
    /// per candidate with its verdict.
    [[nodiscard]] std::string to_string() const;
};

/// @brief `explain()` of a forward plan.
using convolution_explanation = basic_convolution_explanation<convolution_algorithm>;
/// @brief `explain()` of a backward data plan.
using backward_data_explanation = basic_convolution_explanation<backward_data_algorithm>;
/// @brief `explain()` of a backward filter plan.
using backward_filter_explanation = basic_convolution_explanation<backward_filter_algorithm>;

// Compiled once, in the dnn wrapper's library.
extern template struct basic_convolution_explanation<convolution_algorithm>;
extern template struct basic_convolution_explanation<backward_data_algorithm>;
extern template struct basic_convolution_explanation<backward_filter_algorithm>;

/// @brief No algorithm of a pass fits the policy and the budget (or cuDNN supports none, or
/// refused at trial every one that fits): the explanation lists every candidate with the reason
/// it was rejected. Every pass throws this one type; `pass()` says which.
///
/// A `dnn_error` whose `status_name()` is `no_algorithm` and whose `code()` is
/// `CUDNN_STATUS_NOT_SUPPORTED`, the nearest cuDNN status: no single cuDNN call failed, the
/// policy and the budget left no candidate. `what()` reads
/// `gpu::dnn::convolution: no_algorithm (3000): no algorithm fits ...` (the forward;
/// `gpu::dnn::convolution_backward_data` or `..._filter` for the others), then the explanation.
class no_algorithm_error : public dnn_error {
public:
    /// @brief Builds the error from a forward search's explanation.
    /// @param explanation the search's candidates and verdicts
    /// @param where where the search gave up
    explicit no_algorithm_error(const convolution_explanation& explanation,
                                std::source_location where = std::source_location::current());
    /// @brief Builds the error from a backward data search's explanation.
    explicit no_algorithm_error(const backward_data_explanation& explanation,
                                std::source_location where = std::source_location::current());
    /// @brief Builds the error from a backward filter search's explanation.
    explicit no_algorithm_error(const backward_filter_explanation& explanation,
                                std::source_location where = std::source_location::current());

    /// @brief The pass whose search gave up.
    [[nodiscard]] convolution_pass pass() const noexcept { return pass_; }
    /// @brief Whether memory ran out: a candidate that the policy and the budget allow was
    /// refused because its workspace could not be had (cuDNN's status says an allocation
    /// failed, or the trial could not allocate it). Freeing device memory (a smaller batch)
    /// may then let it run; raising the budget would not. `gpu::dnn::is_out_of_memory` reads it.
    [[nodiscard]] bool out_of_memory() const noexcept { return out_of_memory_; }
    /// @brief The forward search's candidates and their reasons.
    /// @throws std::logic_error when the error comes from a backward pass (the message names it)
    [[nodiscard]] const convolution_explanation& explanation() const;
    /// @brief The backward data search's candidates and their reasons.
    /// @throws std::logic_error when the error comes from another pass
    [[nodiscard]] const backward_data_explanation& data_explanation() const;
    /// @brief The backward filter search's candidates and their reasons.
    /// @throws std::logic_error when the error comes from another pass
    [[nodiscard]] const backward_filter_explanation& filter_explanation() const;

private:
    no_algorithm_error(convolution_pass pass, const std::string& message, bool out_of_memory,
                       std::source_location where);

    convolution_pass pass_;
    bool out_of_memory_ = false;
    std::shared_ptr<const convolution_explanation> forward_;
    std::shared_ptr<const backward_data_explanation> data_;
    std::shared_ptr<const backward_filter_explanation> filter_;
};

/// @brief The counters of the process-wide plan cache (plans of every pass together).
struct plan_cache_stats {
    std::size_t entries = 0; ///< distinct plans held
    std::size_t hits = 0;    ///< plans made without a search
    std::size_t misses = 0;  ///< plans that searched
};

/// @brief Reads the plan cache's counters. Thread-safe.
[[nodiscard]] plan_cache_stats plan_cache_statistics() noexcept;

/// @brief Empties the plan cache and zeroes its counters (the next plan of every problem and
/// pass searches again). Thread-safe.
void clear_plan_cache() noexcept;

namespace detail {

/// @brief The size and kind of a buffer's element type, checked against a plan's data type.
/// (The plans' buffer templates, inline in their headers, pass it to the compiled checks.)
struct element_info {
    std::size_t size{}; ///< `sizeof(T)`
    bool is_float{};    ///< `T` is `float`
};

/// @brief `element_info` of @p T.
template <class T>
[[nodiscard]] constexpr element_info element_info_of() noexcept
{
    return {sizeof(T), std::is_same_v<std::remove_cv_t<T>, float>};
}

} // namespace detail

} // namespace gpu::dnn
