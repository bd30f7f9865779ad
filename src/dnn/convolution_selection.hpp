// Private to the cuDNN wrapper: how a convolution plan of any pass chooses its algorithm (rules,
// the selection, the trials and their refusals), the plan cache's key and its lookup, and the
// planning scratch. Users never see these; the dnn tests include this header through the
// private include directory tests/dnn adds (src/dnn), to drive the selection with fake
// candidates on a machine without a GPU.
#pragma once

#include <gpu/dnn/convolution_planning.hpp>
#include <gpu/stream.hpp>

#include <compare>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gpu::dnn::detail {

// The key of the plan cache: the device, the pass, the problem, and the options that change
// the choice, normalised (TF32 matters only for FP32 data; the checks change nothing).
struct plan_key {
    int device = -1;
    convolution_pass pass = convolution_pass::forward;
    convolution_problem problem{};
    algorithm_search search = algorithm_search::heuristic;
    bool deterministic_only = false;
    bool allow_tf32 = false; // always false for FP16/BF16
    std::size_t workspace_budget_bytes = 0;

    friend auto operator<=>(const plan_key&, const plan_key&) = default;
};

// What a trial says of a candidate whose workspace the device could not give
// (`trial_workspace`), after the workspace's size.
inline constexpr std::string_view out_of_memory_refusal = "could not be allocated (out of memory)";

// A time as explanations and reasons print it, e.g. `3.142 ms`.
[[nodiscard]] std::string milliseconds(double ms);

// Why a trial refused a candidate: the status the plan compares, and the words that print it,
// e.g. `CUDNN_STATUS_NOT_SUPPORTED (3000)`.
struct trial_refusal_reason {
    cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
    std::string why;
};

// Whether a candidate's `status_code` says that memory ran out for it (`gpu::dnn::
// is_out_of_memory`: cuDNN's allocation failures, which a trial that could not allocate the
// workspace gives too), while its `workspace_bytes` fit the budget (an algorithm the budget rules
// out is the budget's doing, not the device's). What `no_algorithm_error::out_of_memory()` is
// made of.
[[nodiscard]] bool refused_for_memory(cudnnStatus_t status_code, std::size_t workspace_bytes,
                                      std::size_t workspace_budget_bytes);

// The cache key of `pass` of `problem` planned with `options` on `device`.
[[nodiscard]] plan_key make_plan_key(const convolution_problem& problem,
                                     const convolution_options& options, int device,
                                     convolution_pass pass = convolution_pass::forward);

// The explanation cached under the key of `pass_of_algorithm<Algorithm>` of `problem`, with
// `from_cache` set (a hit); otherwise (a miss) what `search` returns, which the cache then holds.
// A search that throws caches nothing. Thread-safe; the search runs outside the cache's lock.
template <class Algorithm>
[[nodiscard]] basic_convolution_explanation<Algorithm>
cached_or_searched(const convolution_problem& problem, const convolution_options& options,
                   int device,
                   const std::function<basic_convolution_explanation<Algorithm>()>& search);

// What the selection of an algorithm must respect.
struct selection_rules {
    algorithm_search search = algorithm_search::heuristic; // ranked (heuristic) or timed
    bool deterministic_only = false;                       // reject non-deterministic candidates
    bool allow_tf32 = false;                               // FP32 may use tensor-op math
    data_type type = data_type::fp32;                      // the problem's element type
    convolution_epilogue epilogue = convolution_epilogue::none; // the fused epilogue (forward)
    std::size_t workspace_budget_bytes = 0;                     // reject candidates that need more
};

// The rules `options` set for `problem`.
[[nodiscard]] selection_rules rules_for(const convolution_problem& problem,
                                        const convolution_options& options);

// Marks each candidate rejected (with its reason) or usable, chooses one and marks it: under
// `exhaustive` the fastest measured usable candidate, otherwise the first usable one in cuDNN's
// order. Returns the index of the chosen candidate, or empty when none is usable.
template <class Algorithm>
[[nodiscard]] std::optional<std::size_t>
select_algorithm(std::vector<basic_algorithm_candidate<Algorithm>>& candidates,
                 const selection_rules& rules);

// One call of a candidate, tried once at planning (the pass's plain call, or the forward's fused
// `cudnnConvolutionBiasActivationForward`): empty when it ran, otherwise why cuDNN refused it,
// e.g. `CUDNN_STATUS_NOT_SUPPORTED (3000)`, with the status. A failure of the CUDA context (a
// sticky error such as an illegal address) is no refusal: the trial throws it.
template <class Algorithm>
using basic_candidate_trial =
    std::function<std::optional<trial_refusal_reason>(const basic_algorithm_candidate<Algorithm>&)>;
using candidate_trial = basic_candidate_trial<convolution_algorithm>;
// The fused call's trial: a `candidate_trial` of `cudnnConvolutionBiasActivationForward`.
using fused_trial = candidate_trial;

// The plain call of each pass, the one a refusal names: `cudnnConvolutionForward`,
// `cudnnConvolutionBackwardData` or `cudnnConvolutionBackwardFilter`.
[[nodiscard]] const char* plain_call(convolution_pass pass) noexcept;

// Chooses as `select_algorithm`, then runs `try_plain` on the choice, as PyTorch's
// `AlgoIterator::try_all` runs each algorithm in turn: a refusal rejects that candidate (status
// `<why> from <the pass's plain call>`, reason `refused at trial: <why> from <call>`) and the
// next choice is tried, until one runs or none is left. An empty `try_plain` tries nothing (the
// exhaustive search has already run every candidate). Returns the index of the candidate that
// ran, or empty when none is usable or every usable one was refused (their reasons say so).
template <class Algorithm>
[[nodiscard]] std::optional<std::size_t>
select_tried(std::vector<basic_algorithm_candidate<Algorithm>>& candidates,
             const selection_rules& rules,
             const std::type_identity_t<basic_candidate_trial<Algorithm>>& try_plain);

// What `select_with_epilogue` decided.
struct epilogue_selection {
    std::optional<std::size_t> chosen{}; // the candidate the plan runs; empty when none fits
    epilogue_execution execution = epilogue_execution::none; // how the epilogue runs
    std::string unfused_reason{}; // why unfused; see `convolution_explanation`
};

// Chooses the algorithm of a forward problem with or without an epilogue.
//
// Without an epilogue this is `select_tried` with `try_plain`. With one, `try_fused` runs the
// fused call on the candidate `select_algorithm` chooses under `rules`; a refusal marks that
// candidate rejected (status `<why> from cudnnConvolutionBiasActivationForward`) and the next
// choice is tried. When the fused call runs none, the refused candidates get their status back
// and the choice is made again under the plain convolution's rules (no `implicit_precomp_gemm`
// rule), by `select_tried` with `try_plain`: the epilogue then runs unfused, and the reason names
// every refusal of the fused call. `chosen` is empty only when no candidate fits even the plain
// convolution or the plain call refused every one that does.
[[nodiscard]] epilogue_selection select_with_epilogue(std::vector<algorithm_candidate>& candidates,
                                                      const selection_rules& rules,
                                                      const fused_trial& try_fused,
                                                      const candidate_trial& try_plain = {});

// The values planning fills its scratch inputs with: `elements` of `type` (as bytes, in the
// type's encoding), each of magnitude in [0.25, 1) with a random sign, from
// `std::mt19937(seed)`. Never zero, denormal or non-finite: zeros run measurably faster on some
// GPUs (Hopper) and would skew the exhaustive search's timings.
[[nodiscard]] std::vector<std::byte> seeded_scratch_values(data_type type, std::size_t elements,
                                                           std::uint32_t seed);

// Fills `elements` of `type` at the device address `data` with `seeded_scratch_values`, repeated
// with a period of 65536 elements, on `stream` (one host-to-device copy, then device-to-device
// copies that double the filled part); returns when the stream has finished them. Throws
// gpu::cuda_error from the copies or the synchronisation.
void fill_seeded_scratch(void* data, std::size_t elements, data_type type, std::uint32_t seed,
                         stream_ref stream);

} // namespace gpu::dnn::detail
