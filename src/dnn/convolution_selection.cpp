// The selection of an algorithm under a policy and a budget, the trials of the choice at
// planning, and what their refusals make of the candidates.
#include "convolution_selection.hpp"
#include "translate.hpp"

#include <gpu/error.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::dnn {

namespace detail {

selection_rules rules_for(const convolution_problem& problem, const convolution_options& options)
{
    return {options.search,
            options.deterministic_only(),
            problem.type == data_type::fp32 && options.allow_tf32,
            problem.type,
            problem.epilogue,
            options.workspace_budget_bytes};
}

const char* plain_call(convolution_pass pass) noexcept
{
    switch (pass) {
    case convolution_pass::backward_data: return "cudnnConvolutionBackwardData";
    case convolution_pass::backward_filter: return "cudnnConvolutionBackwardFilter";
    case convolution_pass::forward: break;
    }
    return "cudnnConvolutionForward";
}

namespace {

// The verdict of the policy and the budget on one candidate: why it is rejected, or empty when
// it is usable. The rule of a fused bias applies to forward candidates only (the backward
// passes have no epilogue).
template <class Algorithm>
std::optional<std::string> rejection(const basic_algorithm_candidate<Algorithm>& c,
                                     const selection_rules& rules)
{
    if (c.status_code != CUDNN_STATUS_SUCCESS) {
        return "cuDNN cannot run it for this problem (" + c.status + ")";
    }
    if (c.workspace_bytes > rules.workspace_budget_bytes) {
        return "needs " + format_bytes(c.workspace_bytes) + " of workspace, over the budget of " +
               format_bytes(rules.workspace_budget_bytes);
    }
    if (rules.deterministic_only && !c.deterministic) {
        return std::string("not deterministic, and only deterministic algorithms are allowed");
    }
    if (rules.type == data_type::fp32 && !rules.allow_tf32 && c.math != math_type::fma) {
        return std::string("would use tensor-op (TF32) math on FP32 data, and TF32 is off");
    }
    if constexpr (std::is_same_v<Algorithm, convolution_algorithm>) {
        if (rules.epilogue == convolution_epilogue::bias &&
            c.algorithm != convolution_algorithm::implicit_precomp_gemm) {
            return std::string(
                "a fused bias without activation runs only with implicit_precomp_gemm "
                "(cuDNN's rule for CUDNN_ACTIVATION_IDENTITY)");
        }
    }
    if (rules.search == algorithm_search::exhaustive && !(c.time_ms && *c.time_ms >= 0.0)) {
        return std::string("the search could not time it");
    }
    return std::nullopt;
}

} // namespace

template <class Algorithm>
std::optional<std::size_t>
select_algorithm(std::vector<basic_algorithm_candidate<Algorithm>>& candidates,
                 const selection_rules& rules)
{
    const bool timed = rules.search == algorithm_search::exhaustive;
    std::optional<std::size_t> chosen;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        basic_algorithm_candidate<Algorithm>& c = candidates[i];
        c.chosen = false;
        std::optional<std::string> why = rejection(c, rules);
        c.rejected = why.has_value();
        c.reason = std::move(why).value_or(std::string());
        if (!c.rejected && (!chosen || (timed && *c.time_ms < *candidates[*chosen].time_ms))) {
            chosen = i;
        }
    }
    if (!chosen) {
        return std::nullopt;
    }
    basic_algorithm_candidate<Algorithm>& winner = candidates[*chosen];
    winner.chosen = true;
    for (basic_algorithm_candidate<Algorithm>& c : candidates) {
        if (c.rejected || c.chosen) {
            continue;
        }
        c.reason = timed ? "usable; slower (" + milliseconds(*c.time_ms) + " against " +
                               milliseconds(*winner.time_ms) + ")"
                         : std::string("usable; cuDNN ranks it lower");
    }
    return chosen;
}

namespace {

// A candidate that a trial refused: where it is, its status before, and what the trial said.
struct trial_refusal {
    std::size_t index;
    std::string previous_status;
    cudnnStatus_t previous_status_code;
    std::string why;
};

// Chooses under `rules` and tries the choice with `trial` (a call of `api`); a refusal rejects
// that candidate (its status becomes `<why> from <api>`) and the choice is made again, until a
// trial runs or nothing is left. An empty `trial` tries nothing. Appends every refusal.
template <class Algorithm>
std::optional<std::size_t>
choose_and_try(std::vector<basic_algorithm_candidate<Algorithm>>& candidates,
               const selection_rules& rules, const basic_candidate_trial<Algorithm>& trial,
               std::string_view api, std::vector<trial_refusal>& refusals)
{
    std::optional<std::size_t> chosen = select_algorithm(candidates, rules);
    while (chosen && trial) {
        basic_algorithm_candidate<Algorithm>& c = candidates[*chosen];
        std::optional<trial_refusal_reason> refused = trial(c);
        if (!refused) {
            break;
        }
        refusals.push_back({*chosen, c.status, c.status_code, refused->why});
        c.status = refused->why + " from " + std::string(api);
        c.status_code = refused->status;
        chosen = select_algorithm(candidates, rules);
    }
    return chosen;
}

// select_algorithm gave the refused candidates its generic reason; say that a trial refused them.
template <class Algorithm>
void mark_refused_at_trial(std::vector<basic_algorithm_candidate<Algorithm>>& candidates,
                           const std::vector<trial_refusal>& refusals)
{
    for (const trial_refusal& r : refusals) {
        candidates[r.index].reason = "refused at trial: " + candidates[r.index].status;
    }
}

// Why nothing runs fused: every refusal of the fused call, and for a bias alone what became of
// implicit_precomp_gemm (the only algorithm cuDNN fuses it with). Read before the plain selection
// rewrites the candidates' reasons.
std::string unfused_reason(const std::vector<algorithm_candidate>& candidates,
                           const selection_rules& rules, const std::vector<trial_refusal>& refusals)
{
    std::string reason;
    bool precomp_tried = false;
    for (const trial_refusal& r : refusals) {
        const convolution_algorithm algorithm = candidates[r.index].algorithm;
        precomp_tried = precomp_tried || algorithm == convolution_algorithm::implicit_precomp_gemm;
        reason += (reason.empty() ? "cudnnConvolutionBiasActivationForward refused " : ", ") +
                  std::string(dnn::to_string(algorithm)) + " (" + r.why + ")";
    }
    if (rules.epilogue == convolution_epilogue::bias && !precomp_tried) {
        const auto precomp = std::find_if(candidates.begin(), candidates.end(), [](const auto& c) {
            return c.algorithm == convolution_algorithm::implicit_precomp_gemm;
        });
        reason += (reason.empty() ? "" : "; ") +
                  std::string("a bias without activation runs fused only with "
                              "implicit_precomp_gemm, ") +
                  (precomp == candidates.end() ? std::string("which cuDNN did not offer")
                                               : "which was rejected: " + precomp->reason);
    }
    return reason.empty() ? "no candidate fits the policy and the budget" : reason;
}

} // namespace

template <class Algorithm>
std::optional<std::size_t>
select_tried(std::vector<basic_algorithm_candidate<Algorithm>>& candidates,
             const selection_rules& rules,
             const std::type_identity_t<basic_candidate_trial<Algorithm>>& try_plain)
{
    std::vector<trial_refusal> refusals;
    const std::optional<std::size_t> chosen = choose_and_try(
        candidates, rules, try_plain, plain_call(pass_of_algorithm<Algorithm>), refusals);
    mark_refused_at_trial(candidates, refusals);
    return chosen;
}

template std::optional<std::size_t> select_algorithm<convolution_algorithm>(
    std::vector<basic_algorithm_candidate<convolution_algorithm>>&, const selection_rules&);
template std::optional<std::size_t> select_tried<convolution_algorithm>(
    std::vector<basic_algorithm_candidate<convolution_algorithm>>&, const selection_rules&,
    const std::type_identity_t<basic_candidate_trial<convolution_algorithm>>&);
template std::optional<std::size_t> select_algorithm<backward_data_algorithm>(
    std::vector<basic_algorithm_candidate<backward_data_algorithm>>&, const selection_rules&);
template std::optional<std::size_t> select_tried<backward_data_algorithm>(
    std::vector<basic_algorithm_candidate<backward_data_algorithm>>&, const selection_rules&,
    const std::type_identity_t<basic_candidate_trial<backward_data_algorithm>>&);
template std::optional<std::size_t> select_algorithm<backward_filter_algorithm>(
    std::vector<basic_algorithm_candidate<backward_filter_algorithm>>&, const selection_rules&);
template std::optional<std::size_t> select_tried<backward_filter_algorithm>(
    std::vector<basic_algorithm_candidate<backward_filter_algorithm>>&, const selection_rules&,
    const std::type_identity_t<basic_candidate_trial<backward_filter_algorithm>>&);

epilogue_selection select_with_epilogue(std::vector<algorithm_candidate>& candidates,
                                        const selection_rules& rules, const fused_trial& try_fused,
                                        const candidate_trial& try_plain)
{
    epilogue_selection result;
    if (rules.epilogue == convolution_epilogue::none) {
        result.chosen = select_tried(candidates, rules, try_plain);
        return result;
    }
    std::vector<trial_refusal> refusals;
    result.chosen = choose_and_try(candidates, rules, try_fused,
                                   "cudnnConvolutionBiasActivationForward", refusals);
    if (result.chosen) {
        mark_refused_at_trial(candidates, refusals);
        result.execution = epilogue_execution::fused;
        return result;
    }
    // Nothing runs fused: the plain convolution's choice, with the refused candidates usable
    // again (the plain call may run what the fused one refused), tried with the plain call.
    result.unfused_reason = unfused_reason(candidates, rules, refusals);
    for (const trial_refusal& r : refusals) {
        candidates[r.index].status = r.previous_status;
        candidates[r.index].status_code = r.previous_status_code;
    }
    selection_rules plain = rules;
    plain.epilogue = convolution_epilogue::none;
    result.chosen = select_tried(candidates, plain, try_plain);
    result.execution = epilogue_execution::unfused;
    return result;
}

} // namespace detail

} // namespace gpu::dnn
