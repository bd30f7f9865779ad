/// @file convolution.hpp
/// @brief `gpu::dnn::convolution`: a forward convolution planned once (algorithm chosen under an
/// explicit policy and workspace budget, plans cached) and run many times; `explain()` says
/// which algorithm runs and why.
///
/// @code
/// gpu::dnn::handle h(stream);
/// gpu::dnn::convolution conv(h, {.input = {32, 3, 224, 224}, .filter = {64, 3, 3, 3},
///                                .geometry = {.padding = {1, 1}}},
///                            gpu::dnn::convolution_options::from_profile(gpu::profile::production()));
/// conv.forward(h, x, w, y);                 // device_buffer<float>s, on h's stream
/// std::puts(conv.explain().to_string().c_str());
/// @endcode
///
/// See docs/convolution.md for layouts, policies, the workspace budget, determinism and how
/// they map to PyTorch's `cudnn.benchmark`, `cudnn.deterministic` and `allow_tf32`.
#pragma once

#include <gpu/dnn/activation_descriptor.hpp>
#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp> // what check_numerics throws
#include <gpu/profile.hpp>

#include <cudnn_cnn.h>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gpu::dnn {

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

/// @brief What a convolution does after the convolution itself (inference epilogues,
/// `cudnnConvolutionBiasActivationForward`).
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
    none,    ///< the problem has no epilogue
    fused,   ///< in one call, `cudnnConvolutionBiasActivationForward`
    /// `cudnnConvolutionForward`, then `cudnnAddTensor` (bias), then `cudnnActivationForward`
    /// (ReLU), all on the handle's stream
    unfused,
};

/// @brief `none`, `fused` or `unfused`.
[[nodiscard]] std::string_view to_string(epilogue_execution execution) noexcept;

/// @brief A forward convolution's shapes, types and layout: what a plan is made for, and the
/// key of the plan cache (with the options that change the choice). Plain data.
struct convolution_problem {
    std::vector<int> input{};        ///< N, C, spatial... (logical order, whatever the layout)
    std::vector<int> filter{};       ///< K, C / groups, spatial...
    convolution_geometry geometry{}; ///< padding, stride, dilation, groups, mode
    data_type type = data_type::fp32;            ///< element type of input, filter, output, bias
    tensor_layout layout = tensor_layout::nchw;  ///< layout of input, filter and output
    convolution_epilogue epilogue = convolution_epilogue::none; ///< bias and ReLU, if any

    /// @brief Checks that the problem makes a convolution whose tensors cuDNN can index.
    /// @throws std::invalid_argument as `validate_convolution` (which includes an output of
    /// more than INT_MAX elements), or when `type`, `layout` or `epilogue` is not a named
    /// enumerator (values named)
    void validate() const;
    /// @brief N, K, output spatial...
    /// @throws std::invalid_argument as `validate` (this holds for every member function below
    /// except `to_string`: none computes anything from an invalid problem)
    [[nodiscard]] std::vector<int> output() const;
    /// @brief Elements of the input tensor (at most INT_MAX).
    [[nodiscard]] std::size_t input_elements() const;
    /// @brief Elements of the filter (at most INT_MAX).
    [[nodiscard]] std::size_t filter_elements() const;
    /// @brief Elements of the output tensor (at most INT_MAX).
    [[nodiscard]] std::size_t output_elements() const;
    /// @brief Floating-point operations of one forward (2 per multiply-add, epilogue ignored).
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

/// @brief How a plan is made and run. Plain data; `from(profile)` fills it from a profile.
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
    /// Synchronise after each forward so an asynchronous failure is reported by that call.
    bool synchronous_checks = false;
    /// Scan each output for NaN and Inf and throw `gpu::numerics_error` (slow; debugging).
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

/// @brief One algorithm cuDNN offered for a problem, and what the plan made of it.
struct algorithm_candidate {
    convolution_algorithm algorithm = convolution_algorithm::implicit_gemm; ///< the algorithm
    std::string status{};          ///< cuDNN's status for it, e.g. `CUDNN_STATUS_SUCCESS`
    std::size_t workspace_bytes = 0;   ///< workspace it needs
    std::optional<double> time_ms{};   ///< measured time (exhaustive search only)
    bool deterministic = false;        ///< cuDNN marks it `CUDNN_DETERMINISTIC`
    math_type math = math_type::default_math; ///< the math type it runs with
    bool rejected = false;             ///< excluded by the policy, the budget or cuDNN
    bool chosen = false;               ///< the one the plan runs
    std::string reason{};              ///< why rejected, or why a usable one was not chosen
};

/// @brief Why a plan runs the algorithm it runs: `convolution::explain()`.
struct convolution_explanation {
    std::string problem{};                    ///< `convolution_problem::to_string()`
    algorithm_search search = algorithm_search::heuristic; ///< the policy
    bool deterministic_only = false;          ///< only deterministic algorithms were allowed
    bool allow_tf32 = false;                  ///< TF32 was allowed for FP32 data
    std::size_t workspace_budget_bytes = 0;   ///< the budget
    convolution_algorithm algorithm = convolution_algorithm::implicit_gemm; ///< the chosen one
    math_type math = math_type::default_math; ///< its math type
    std::size_t workspace_bytes = 0;          ///< its workspace
    std::optional<double> time_ms{};          ///< its measured time, when the search timed it
    bool deterministic = false;               ///< whether it is deterministic
    bool from_cache = false;                  ///< the plan came from the cache: no search ran
    convolution_epilogue epilogue = convolution_epilogue::none; ///< the problem's epilogue
    epilogue_execution execution = epilogue_execution::none;    ///< how the epilogue runs
    /// Why the epilogue runs unfused: the algorithms the fused call refused, with cuDNN's status,
    /// and for `bias` the rule that limits the fused call to `implicit_precomp_gemm`. Empty
    /// unless `execution` is `unfused`.
    std::string unfused_reason{};
    std::vector<algorithm_candidate> candidates{}; ///< every candidate, in cuDNN's order

    /// @brief A readable report: the problem, the policy, the choice, then one line per
    /// candidate with its verdict.
    [[nodiscard]] std::string to_string() const;
};

/// @brief No algorithm fits the policy and the budget (or cuDNN supports none, or refused at
/// trial every one that fits): the explanation lists every candidate with the reason it was
/// rejected.
///
/// A `dnn_error` whose `status_name()` is `no_algorithm` and whose `code()` is
/// `CUDNN_STATUS_NOT_SUPPORTED`, the nearest cuDNN status: no single cuDNN call failed, the
/// policy and the budget left no candidate. `what()` reads
/// `gpu::dnn::convolution: no_algorithm (3000): no algorithm fits ...`, then the explanation.
class no_algorithm_error : public dnn_error {
public:
    /// @brief Builds the error from the search's explanation.
    /// @param explanation the search's candidates and verdicts
    /// @param where where the search gave up
    explicit no_algorithm_error(const convolution_explanation& explanation,
                                std::source_location where = std::source_location::current());
    /// @brief The candidates and their reasons.
    [[nodiscard]] const convolution_explanation& explanation() const noexcept { return *explanation_; }

private:
    std::shared_ptr<const convolution_explanation> explanation_;
};

/// @brief The counters of the process-wide plan cache.
struct plan_cache_stats {
    std::size_t entries = 0; ///< distinct plans held
    std::size_t hits = 0;    ///< plans made without a search
    std::size_t misses = 0;  ///< plans that searched
};

/// @brief Reads the plan cache's counters. Thread-safe.
[[nodiscard]] plan_cache_stats plan_cache_statistics() noexcept;

/// @brief Empties the plan cache and zeroes its counters (the next plan of every problem
/// searches again). Thread-safe.
void clear_plan_cache() noexcept;

namespace detail {

/// @brief The key of the plan cache: the device, the problem, and the options that change the
/// choice, normalised (TF32 matters only for FP32 data; the checks change nothing).
struct plan_key {
    int device = -1;                 ///< CUDA device ordinal
    convolution_problem problem{};   ///< shapes, types, layout, epilogue
    algorithm_search search = algorithm_search::heuristic; ///< the policy
    bool deterministic_only = false; ///< deterministic algorithms only
    bool allow_tf32 = false;         ///< TF32 allowed (always false for FP16/BF16)
    std::size_t workspace_budget_bytes = 0; ///< the budget

    /// @brief Keys compare member by member.
    friend auto operator<=>(const plan_key&, const plan_key&) = default;
};

/// @brief The cache key of @p problem planned with @p options on @p device.
[[nodiscard]] plan_key make_plan_key(const convolution_problem& problem,
                                     const convolution_options& options, int device);

/// @brief What the selection of an algorithm must respect.
struct selection_rules {
    algorithm_search search = algorithm_search::heuristic; ///< ranked (heuristic) or timed
    bool deterministic_only = false;  ///< reject non-deterministic candidates
    bool allow_tf32 = false;          ///< FP32 may use tensor-op math
    data_type type = data_type::fp32; ///< the problem's element type
    convolution_epilogue epilogue = convolution_epilogue::none; ///< the fused epilogue
    std::size_t workspace_budget_bytes = 0; ///< reject candidates that need more
};

/// @brief Marks each candidate rejected (with its reason) or usable, chooses one and marks it:
/// under `exhaustive` the fastest measured usable candidate, otherwise the first usable one in
/// cuDNN's order.
/// @return the index of the chosen candidate, or empty when none is usable
[[nodiscard]] std::optional<std::size_t> select_algorithm(std::vector<algorithm_candidate>& candidates,
                                                          const selection_rules& rules);

/// @brief One call of a candidate, tried once at planning (the plain `cudnnConvolutionForward`
/// or the fused `cudnnConvolutionBiasActivationForward`): empty when it ran, otherwise why cuDNN
/// refused it, e.g. `CUDNN_STATUS_NOT_SUPPORTED (3000)`. A failure of the CUDA context (a sticky
/// error such as an illegal address) is no refusal: the trial throws it.
using candidate_trial = std::function<std::optional<std::string>(const algorithm_candidate&)>;

/// @brief The fused call's trial: a `candidate_trial` of `cudnnConvolutionBiasActivationForward`.
using fused_trial = candidate_trial;

/// @brief Chooses as `select_algorithm`, then runs @p try_plain on the choice, as PyTorch's
/// `AlgoIterator::try_all` runs each algorithm in turn: a refusal rejects that candidate
/// (status `<why> from cudnnConvolutionForward`, reason `refused at trial: <why> from
/// cudnnConvolutionForward`) and the next choice is tried, until one runs or none is left.
/// An empty @p try_plain tries nothing (the exhaustive search has already run every candidate).
/// @return the index of the candidate that ran, or empty when none is usable or every usable one
/// was refused (their reasons say so)
[[nodiscard]] std::optional<std::size_t> select_tried(std::vector<algorithm_candidate>& candidates,
                                                      const selection_rules& rules,
                                                      const candidate_trial& try_plain);

/// @brief What `select_with_epilogue` decided.
struct epilogue_selection {
    std::optional<std::size_t> chosen{}; ///< the candidate the plan runs; empty when none fits
    epilogue_execution execution = epilogue_execution::none; ///< how the epilogue runs
    std::string unfused_reason{};      ///< why unfused; see `convolution_explanation`
};

/// @brief Chooses the algorithm of a problem with or without an epilogue.
///
/// Without an epilogue this is `select_tried` with @p try_plain. With one, @p try_fused runs the
/// fused call on the candidate `select_algorithm` chooses under @p rules; a refusal marks that
/// candidate rejected (status `<why> from cudnnConvolutionBiasActivationForward`) and the next
/// choice is tried. When the fused call runs none, the refused candidates get their status back
/// and the choice is made again under the plain convolution's rules (no `implicit_precomp_gemm`
/// rule), by `select_tried` with @p try_plain: the epilogue then runs unfused, and the reason
/// names every refusal of the fused call.
/// @return the choice, how the epilogue runs, and why unfused; `chosen` is empty only when no
/// candidate fits even the plain convolution or the plain call refused every one that does
[[nodiscard]] epilogue_selection select_with_epilogue(std::vector<algorithm_candidate>& candidates,
                                                      const selection_rules& rules,
                                                      const fused_trial& try_fused,
                                                      const candidate_trial& try_plain = {});

/// @brief The values planning fills its scratch input and filter with: @p elements of @p type
/// (as bytes, in the type's encoding), each of magnitude in [0.25, 1) with a random sign, from
/// `std::mt19937(seed)`. Never zero, denormal or non-finite: zeros run measurably faster on some
/// GPUs (Hopper) and would skew the exhaustive search's timings.
[[nodiscard]] std::vector<std::byte> seeded_scratch_values(data_type type, std::size_t elements,
                                                           std::uint32_t seed);

/// @brief Fills @p elements of @p type at the device address @p data with
/// `seeded_scratch_values`, repeated with a period of 65536 elements, on @p stream (one
/// host-to-device copy, then device-to-device copies that double the filled part); returns when
/// the stream has finished them. What planning fills its scratch input and filter with.
/// @throws gpu::cuda_error from the copies or the synchronisation
void fill_seeded_scratch(void* data, std::size_t elements, data_type type, std::uint32_t seed,
                         stream_ref stream);

/// @brief The size and kind of a buffer's element type, checked against a plan's data type.
struct element_info {
    std::size_t size{};  ///< `sizeof(T)`
    bool is_float{};   ///< `T` is `float`
};

/// @brief `element_info` of @p T.
template <class T>
[[nodiscard]] constexpr element_info element_info_of() noexcept
{
    return {sizeof(T), std::is_same_v<std::remove_cv_t<T>, float>};
}

} // namespace detail

/// @brief A forward convolution planned once for one problem, then run many times. Move-only.
///
/// Planning validates the problem (bad shapes throw `std::invalid_argument` before anything is
/// allocated), builds the descriptors, and chooses the algorithm under the options' policy and
/// workspace budget, or takes the choice from the process-wide plan cache without searching.
/// cuDNN's heuristic ranks algorithms without running them, and some it ranks it then refuses
/// at run time; so under the `heuristic` and `deterministic` policies a plan runs its choice
/// once at planning, on scratch data, and takes the next candidate when cuDNN refuses it (as
/// PyTorch's `try_all` does), with the status in `explain()`: a forward never meets a refusal
/// that planning could have seen. (The `exhaustive` search has run every candidate already.)
/// A plan with a bias epilogue likewise runs the fused call once, because it may refuse an
/// algorithm that cuDNN ranked for the plain convolution. When the fused call refuses every
/// candidate, the plan runs the plain convolution and the epilogue unfused
/// (`epilogue_execution::unfused`: `cudnnAddTensor`, then `cudnnActivationForward`), and
/// `explain()` says that and why. Trials run on the handle's stream and synchronise it; a
/// sticky CUDA error during a trial is thrown, never taken for a refusal.
/// The workspace is a stream-ordered `device_buffer` on the handle's stream; when a forward
/// runs on another stream, the workspace moves there (freed on the old stream, allocated on
/// the new one).
///
/// A plan is not for concurrent use: its workspace is shared by its forwards. To run the same
/// problem on several streams at once, make one plan per stream (the second comes from the
/// cache).
class convolution {
public:
    /// @brief Plans @p problem. The search and the trials run on scratch tensors that planning
    /// allocates on the handle's stream and frees (input and filter filled with seeded non-zero
    /// values, the output zeroed); give real buffers with the other constructor.
    /// @param h the cuDNN handle; its stream orders the search and the workspace
    /// @param problem shapes, types, layout, epilogue
    /// @param options policy, budget, TF32, determinism, checks
    /// @throws std::invalid_argument for a bad problem (values named)
    /// @throws std::logic_error for an empty (moved-from) handle
    /// @throws no_algorithm_error when no algorithm fits the policy and budget
    /// @throws gpu::dnn::dnn_error, gpu::cuda_error, gpu::out_of_memory from cuDNN and CUDA
    convolution(handle& h, const convolution_problem& problem,
                const convolution_options& options = {});

    /// @brief Plans @p problem, timing the algorithms (if the search is `exhaustive`) and trying
    /// the choice on these buffers, as `cudnn.benchmark` does; @p y is overwritten.
    /// @throws std::invalid_argument also when a buffer's size or element type does not match
    template <class T>
    convolution(handle& h, const convolution_problem& problem, const convolution_options& options,
                const device_buffer<T>& x, const device_buffer<T>& w, device_buffer<T>& y)
    {
        check_buffers(counts_of(problem), problem, detail::element_info_of<T>(), x.size(),
                      w.size(), std::nullopt, y.size(), false);
        plan(h, problem, options, x.data(), w.data(), y.data());
    }

    /// @brief y = conv(x, w), on @p h's stream. For the epilogue `none`.
    /// @tparam T `float` for fp32, a 2-byte type (`__half`, `__nv_bfloat16`) for fp16/bf16
    /// @throws std::invalid_argument when a size or the element type does not match the problem,
    /// or the plan has a bias epilogue
    /// @throws std::logic_error when the plan or the handle is empty (moved from)
    /// @throws gpu::numerics_error when `check_numerics` finds NaN or Inf in @p y
    template <class T>
    void forward(handle& h, const device_buffer<T>& x, const device_buffer<T>& w, device_buffer<T>& y)
    {
        check_buffers(counts_, problem_, detail::element_info_of<T>(), x.size(), w.size(),
                      std::nullopt, y.size(), true);
        run(h, x.data(), w.data(), nullptr, y.data());
    }

    /// @brief y = act(conv(x, w) + bias), on @p h's stream, with the plan's bias epilogue:
    /// fused (`cudnnConvolutionBiasActivationForward`), or unfused when the fused call refused
    /// every algorithm (see `explain().execution`); @p bias has one element per output channel.
    /// @throws std::invalid_argument as the other overload, or when the plan has no bias
    template <class T>
    void forward(handle& h, const device_buffer<T>& x, const device_buffer<T>& w,
                 const device_buffer<T>& bias, device_buffer<T>& y)
    {
        check_buffers(counts_, problem_, detail::element_info_of<T>(), x.size(), w.size(),
                      bias.size(), y.size(), true);
        run(h, x.data(), w.data(), bias.data(), y.data());
    }

    /// @brief The forward on raw device pointers (memory cudagap does not own, such as a
    /// framework's tensors): no size checks are possible; @p bias must be null exactly when the
    /// epilogue is `none`.
    /// @throws std::invalid_argument for a null pointer or a bias that does not fit the epilogue
    void forward_raw(handle& h, const void* x, const void* w, const void* bias, void* y);

    /// @brief Why this plan runs its algorithm.
    [[nodiscard]] const convolution_explanation& explain() const noexcept { return explanation_; }
    /// @brief The problem it was planned for.
    [[nodiscard]] const convolution_problem& problem() const noexcept { return problem_; }
    /// @brief The options it was planned with.
    [[nodiscard]] const convolution_options& options() const noexcept { return options_; }
    /// @brief The chosen algorithm.
    [[nodiscard]] convolution_algorithm algorithm() const noexcept { return explanation_.algorithm; }
    /// @brief The chosen algorithm as cuDNN's value, for raw cuDNN calls.
    [[nodiscard]] cudnnConvolutionFwdAlgo_t native_algorithm() const noexcept
    {
        return static_cast<cudnnConvolutionFwdAlgo_t>(explanation_.algorithm);
    }
    /// @brief The workspace the chosen algorithm needs, in bytes.
    [[nodiscard]] std::size_t workspace_bytes() const noexcept { return explanation_.workspace_bytes; }
    /// @brief The workspace buffer (empty when the algorithm needs none).
    [[nodiscard]] const device_buffer<std::byte>& workspace() const noexcept { return workspace_; }
    /// @brief The input's descriptor, for raw cuDNN calls.
    [[nodiscard]] const tensor_descriptor& input_descriptor() const noexcept { return input_; }
    /// @brief The filter's (weights') descriptor.
    [[nodiscard]] const filter_descriptor& weights_descriptor() const noexcept { return filter_; }
    /// @brief The output's descriptor.
    [[nodiscard]] const tensor_descriptor& output_descriptor() const noexcept { return output_; }
    /// @brief The convolution descriptor, set to the chosen algorithm's math type.
    [[nodiscard]] const convolution_descriptor& descriptor() const noexcept { return convolution_; }

    /// @brief Moving leaves the source without descriptors; it may only be destroyed or
    /// assigned.
    /// @post `other.input_descriptor().get() == nullptr`
    convolution(convolution&& other) noexcept = default;
    /// @brief Releases this plan and takes @p other's.
    /// @post `other.input_descriptor().get() == nullptr`
    convolution& operator=(convolution&& other) noexcept = default;
    convolution(const convolution&) = delete;
    convolution& operator=(const convolution&) = delete;
    /// @brief Frees the workspace on its stream and destroys the descriptors.
    ~convolution() = default;

private:
    struct element_counts {
        std::size_t input = 0;
        std::size_t filter = 0;
        std::size_t output = 0;
        std::size_t bias = 0;
    };
    static element_counts counts_of(const convolution_problem& problem);
    static void check_buffers(const element_counts& expected, const convolution_problem& problem,
                              detail::element_info element, std::size_t x, std::size_t w,
                              std::optional<std::size_t> bias, std::size_t y, bool running);
    struct planning_buffers; // the tensors the search and the trials run on
    void plan(handle& h, const convolution_problem& problem, const convolution_options& options,
              const void* x, const void* w, void* y);
    convolution_explanation search(handle& h, const void* x, const void* w, void* y);
    std::vector<algorithm_candidate> find_candidates(handle& h, planning_buffers& buffers,
                                                     const std::string& context);
    std::optional<std::string> try_candidate(handle& h, planning_buffers& buffers,
                                             const algorithm_candidate& candidate, bool fused);
    void run(handle& h, const void* x, const void* w, const void* bias, void* y);

    convolution_problem problem_;
    element_counts counts_;
    convolution_options options_;
    convolution_explanation explanation_;
    tensor_descriptor input_ = tensor_descriptor::from_native_handle(nullptr);
    filter_descriptor filter_ = filter_descriptor::from_native_handle(nullptr);
    tensor_descriptor output_ = tensor_descriptor::from_native_handle(nullptr);
    tensor_descriptor bias_ = tensor_descriptor::from_native_handle(nullptr);
    convolution_descriptor convolution_ = convolution_descriptor::from_native_handle(nullptr);
    activation_descriptor activation_ = activation_descriptor::from_native_handle(nullptr);
    device_buffer<std::byte> workspace_;
};

} // namespace gpu::dnn
