// What every convolution plan shares, whatever its pass: the names of the enums, the problem
// and the options, explanations and no_algorithm_error, the process-wide plan cache, the
// selection of an algorithm under a policy and a budget (with the trials' refusals), and the
// seeded scratch planning runs on.
#include "convolution_selection.hpp"
#include "translate.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/error.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <variant>

namespace gpu::dnn {

constexpr gpu::detail::enum_name<convolution_pass> convolution_pass_names[] = {
    {convolution_pass::forward, "forward"},
    {convolution_pass::backward_data, "backward_data"},
    {convolution_pass::backward_filter, "backward_filter"}};
std::string_view to_string(convolution_pass pass) noexcept
{
    return gpu::detail::name_of(convolution_pass_names, pass);
}

constexpr gpu::detail::enum_name<convolution_algorithm> convolution_algorithm_names[] = {
    {convolution_algorithm::implicit_gemm, "implicit_gemm"},
    {convolution_algorithm::implicit_precomp_gemm, "implicit_precomp_gemm"},
    {convolution_algorithm::gemm, "gemm"},
    {convolution_algorithm::direct, "direct"},
    {convolution_algorithm::fft, "fft"},
    {convolution_algorithm::fft_tiling, "fft_tiling"},
    {convolution_algorithm::winograd, "winograd"},
    {convolution_algorithm::winograd_nonfused, "winograd_nonfused"}};
std::string_view to_string(convolution_algorithm algorithm) noexcept
{
    return gpu::detail::name_of(convolution_algorithm_names, algorithm);
}

constexpr gpu::detail::enum_name<backward_data_algorithm> backward_data_algorithm_names[] = {
    {backward_data_algorithm::algo_0, "algo_0"},
    {backward_data_algorithm::algo_1, "algo_1"},
    {backward_data_algorithm::fft, "fft"},
    {backward_data_algorithm::fft_tiling, "fft_tiling"},
    {backward_data_algorithm::winograd, "winograd"},
    {backward_data_algorithm::winograd_nonfused, "winograd_nonfused"}};
std::string_view to_string(backward_data_algorithm algorithm) noexcept
{
    return gpu::detail::name_of(backward_data_algorithm_names, algorithm);
}

constexpr gpu::detail::enum_name<backward_filter_algorithm> backward_filter_algorithm_names[] = {
    {backward_filter_algorithm::algo_0, "algo_0"},
    {backward_filter_algorithm::algo_1, "algo_1"},
    {backward_filter_algorithm::fft, "fft"},
    {backward_filter_algorithm::algo_3, "algo_3"},
    {backward_filter_algorithm::winograd, "winograd"},
    {backward_filter_algorithm::winograd_nonfused, "winograd_nonfused"},
    {backward_filter_algorithm::fft_tiling, "fft_tiling"}};
std::string_view to_string(backward_filter_algorithm algorithm) noexcept
{
    return gpu::detail::name_of(backward_filter_algorithm_names, algorithm);
}

std::string_view to_string(convolution_epilogue epilogue) noexcept
{
    return gpu::detail::name_of(detail::names<convolution_epilogue>, epilogue);
}

constexpr gpu::detail::enum_name<epilogue_execution> epilogue_execution_names[] = {
    {epilogue_execution::none, "none"},
    {epilogue_execution::fused, "fused"},
    {epilogue_execution::unfused, "unfused"}};
std::string_view to_string(epilogue_execution execution) noexcept
{
    return gpu::detail::name_of(epilogue_execution_names, execution);
}

std::string_view to_string(gradient_update update) noexcept
{
    return gpu::detail::name_of(detail::names<gradient_update>, update);
}

// ---- convolution_problem --------------------------------------------------------------------

void convolution_problem::validate() const
{
    // The shape rules include the output's: every dimension and element count cuDNN receives
    // as int is checked in 64 bits there.
    (void)output();
}

std::vector<int> convolution_problem::output() const
{
    detail::require_named("gpu::dnn convolution", "data_type", type);
    detail::require_named("gpu::dnn convolution", "tensor_layout", layout);
    detail::require_named("gpu::dnn convolution", "convolution_epilogue", epilogue);
    return convolution_output_dims(input, filter, geometry);
}

std::size_t convolution_problem::input_elements() const
{
    validate();
    return detail::product(input);
}

std::size_t convolution_problem::filter_elements() const
{
    validate();
    return detail::product(filter);
}

std::size_t convolution_problem::output_elements() const
{
    return detail::product(output());
}

double convolution_problem::flops() const
{
    // Each output element is a dot product over C / groups channels and the filter's taps.
    const double taps = static_cast<double>(filter_elements()) / filter.at(0);
    return 2.0 * static_cast<double>(output_elements()) * taps;
}

double convolution_problem::minimum_bytes() const
{
    double elements = static_cast<double>(input_elements() + filter_elements() + output_elements());
    if (epilogue != convolution_epilogue::none) {
        elements += filter.at(0);
    }
    return elements * static_cast<double>(element_size(type));
}

std::string convolution_problem::to_string() const
{
    std::string text = std::string(dnn::to_string(type)) + " " +
                       std::string(dnn::to_string(layout)) + " input " + dnn::to_string(input) +
                       " filter " + dnn::to_string(filter) + ", " + geometry.to_string();
    if (epilogue != convolution_epilogue::none) {
        text += ", epilogue ";
        text += dnn::to_string(epilogue);
    }
    return text;
}

convolution_options convolution_options::from_profile(const profile& settings)
{
    convolution_options options;
    // As PyTorch: benchmark times the candidates, deterministic restricts them (both: the
    // deterministic ones are timed), and deterministic alone takes cuDNN's ranking of those.
    options.search = settings.benchmark       ? algorithm_search::exhaustive
                     : settings.deterministic ? algorithm_search::deterministic
                                              : algorithm_search::heuristic;
    options.allow_tf32 = settings.allow_tf32;
    options.deterministic = settings.deterministic;
    options.synchronous_checks = settings.synchronous_checks;
    options.check_numerics = settings.check_numerics;
    return options;
}

// ---- explanations ---------------------------------------------------------------------------

namespace {

std::string milliseconds(double ms)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3f ms", ms);
    return text;
}

std::string pad_right(std::string text, std::size_t width)
{
    if (text.size() < width) {
        text.append(width - text.size(), ' ');
    }
    return text;
}

// The first word of an explanation: what the plan computes.
constexpr std::string_view pass_title(convolution_pass pass) noexcept
{
    switch (pass) {
    case convolution_pass::backward_data: return "convolution backward data ";
    case convolution_pass::backward_filter: return "convolution backward filter ";
    case convolution_pass::forward: break;
    }
    return "convolution ";
}

// The line that says how the epilogue runs, if the plan has one.
std::string epilogue_line(convolution_epilogue epilogue, epilogue_execution execution,
                          const std::string& unfused_reason)
{
    if (execution == epilogue_execution::fused) {
        return "epilogue: " + std::string(dnn::to_string(epilogue)) +
               ", fused in one call (cudnnConvolutionBiasActivationForward)\n";
    }
    if (execution == epilogue_execution::unfused) {
        return "epilogue: " + std::string(dnn::to_string(epilogue)) +
               ", unfused (cudnnConvolutionForward, then cudnnAddTensor" +
               (epilogue == convolution_epilogue::bias_relu ? ", then cudnnActivationForward"
                                                            : "") +
               ") because " + unfused_reason + "\n";
    }
    return {};
}

} // namespace

template <class Algorithm>
std::string basic_convolution_explanation<Algorithm>::to_string() const
{
    std::string text = std::string(pass_title(pass)) + problem + "\n";
    text += "policy: " + std::string(dnn::to_string(search)) +
            (search == algorithm_search::exhaustive ? " (every algorithm timed)" : "") +
            ", deterministic only: " + (deterministic_only ? "yes" : "no") +
            ", TF32: " + (allow_tf32 ? "allowed" : "off") +
            ", workspace budget: " + format_bytes(workspace_budget_bytes) + "\n";
    text += "chosen: " + std::string(dnn::to_string(algorithm)) + ", math " +
            std::string(dnn::to_string(math)) + ", workspace " + format_bytes(workspace_bytes) +
            ", " + (time_ms ? milliseconds(*time_ms) + " measured" : std::string("not timed")) +
            ", " + (deterministic ? "deterministic" : "not deterministic") +
            (from_cache ? " (from the plan cache: no search ran)" : "") + "\n";
    text += epilogue_line(epilogue, execution, unfused_reason);
    text += "candidates, in cuDNN's order:\n";
    for (const basic_algorithm_candidate<Algorithm>& c : candidates) {
        text += "  " + pad_right(std::string(dnn::to_string(c.algorithm)), 22) + " " +
                pad_right(std::string(dnn::to_string(c.math)), 10) + " " +
                pad_right(format_bytes(c.workspace_bytes), 11) + " " +
                pad_right(c.time_ms ? milliseconds(*c.time_ms) : std::string("-"), 12) + " " +
                (c.chosen ? "CHOSEN" : (c.rejected ? "rejected: " : "") + c.reason) + "\n";
    }
    return text;
}

template struct basic_convolution_explanation<convolution_algorithm>;
template struct basic_convolution_explanation<backward_data_algorithm>;
template struct basic_convolution_explanation<backward_filter_algorithm>;

namespace {

template <class Algorithm>
std::string no_algorithm_message(const basic_convolution_explanation<Algorithm>& explanation)
{
    const bool refused = std::any_of(explanation.candidates.begin(), explanation.candidates.end(),
                                     [](const basic_algorithm_candidate<Algorithm>& c) {
                                         return c.reason.starts_with("refused at trial");
                                     });
    std::string report = explanation.to_string();
    if (report.ends_with('\n')) {
        report.pop_back(); // the hint follows on its own line
    }
    return std::string("no algorithm fits the policy and the workspace budget") +
           (refused ? ", or cuDNN refused at trial every one that does" : "") + "\n" + report;
}

// Whether a candidate the policy and the budget allow was refused for want of memory.
template <class Algorithm>
bool ran_out_of_memory(const basic_convolution_explanation<Algorithm>& explanation)
{
    return std::any_of(explanation.candidates.begin(), explanation.candidates.end(),
                       [&](const basic_algorithm_candidate<Algorithm>& c) {
                           return detail::refused_for_memory(c.status_code, c.workspace_bytes,
                                                             explanation.workspace_budget_bytes);
                       });
}

// The plan that gave up, as the error's API name.
const char* plan_name(convolution_pass pass) noexcept
{
    switch (pass) {
    case convolution_pass::backward_data: return "gpu::dnn::convolution_backward_data";
    case convolution_pass::backward_filter: return "gpu::dnn::convolution_backward_filter";
    case convolution_pass::forward: break;
    }
    return "gpu::dnn::convolution";
}

constexpr const char* no_algorithm_hint =
    "raise the budget, allow TF32 or non-deterministic algorithms, or change the layout";

template <class Explanation>
const Explanation& explanation_of(const std::shared_ptr<const Explanation>& held,
                                  convolution_pass pass, const char* accessor)
{
    GPU_EXPECTS(held != nullptr, std::logic_error, "gpu::dnn::no_algorithm_error::", accessor,
                ": the error comes from the ", to_string(pass), " pass; read its own explanation");
    return *held;
}

} // namespace

no_algorithm_error::no_algorithm_error(convolution_pass pass, const std::string& message,
                                       bool out_of_memory, std::source_location where)
    : dnn_error(plan_name(pass), "no_algorithm", static_cast<long long>(CUDNN_STATUS_NOT_SUPPORTED),
                message, no_algorithm_hint, gpu::detail::current_device_or_unknown(), where),
      pass_(pass), out_of_memory_(out_of_memory)
{}

no_algorithm_error::no_algorithm_error(const convolution_explanation& explanation,
                                       std::source_location where)
    : no_algorithm_error(explanation.pass, no_algorithm_message(explanation),
                         ran_out_of_memory(explanation), where)
{
    forward_ = std::make_shared<const convolution_explanation>(explanation);
}

no_algorithm_error::no_algorithm_error(const backward_data_explanation& explanation,
                                       std::source_location where)
    : no_algorithm_error(explanation.pass, no_algorithm_message(explanation),
                         ran_out_of_memory(explanation), where)
{
    data_ = std::make_shared<const backward_data_explanation>(explanation);
}

no_algorithm_error::no_algorithm_error(const backward_filter_explanation& explanation,
                                       std::source_location where)
    : no_algorithm_error(explanation.pass, no_algorithm_message(explanation),
                         ran_out_of_memory(explanation), where)
{
    filter_ = std::make_shared<const backward_filter_explanation>(explanation);
}

const convolution_explanation& no_algorithm_error::explanation() const
{
    return explanation_of(forward_, pass_, "explanation");
}

const backward_data_explanation& no_algorithm_error::data_explanation() const
{
    return explanation_of(data_, pass_, "data_explanation");
}

const backward_filter_explanation& no_algorithm_error::filter_explanation() const
{
    return explanation_of(filter_, pass_, "filter_explanation");
}

bool is_out_of_memory(const std::exception& e) noexcept
{
    if (dynamic_cast<const gpu::out_of_memory*>(&e) != nullptr) {
        return true;
    }
    if (const auto* none = dynamic_cast<const no_algorithm_error*>(&e)) {
        return none->out_of_memory();
    }
    const auto* failed = dynamic_cast<const dnn_error*>(&e);
    return failed != nullptr && is_out_of_memory(failed->status());
}

namespace detail {

bool refused_for_memory(cudnnStatus_t status_code, std::size_t workspace_bytes,
                        std::size_t workspace_budget_bytes)
{
    return workspace_bytes <= workspace_budget_bytes && is_out_of_memory(status_code);
}

} // namespace detail

// ---- the plan cache -------------------------------------------------------------------------

namespace {

using cached_explanation =
    std::variant<convolution_explanation, backward_data_explanation, backward_filter_explanation>;

struct plan_cache {
    std::mutex mutex;
    std::map<detail::plan_key, cached_explanation> plans;
    std::size_t hits = 0;
    std::size_t misses = 0;
};

plan_cache& cache()
{
    static plan_cache instance;
    return instance;
}

} // namespace

plan_cache_stats plan_cache_statistics() noexcept
{
    plan_cache& c = cache();
    const std::lock_guard lock(c.mutex);
    return {c.plans.size(), c.hits, c.misses};
}

void clear_plan_cache() noexcept
{
    plan_cache& c = cache();
    const std::lock_guard lock(c.mutex);
    c.plans.clear();
    c.hits = 0;
    c.misses = 0;
}

namespace detail {

plan_key make_plan_key(const convolution_problem& problem, const convolution_options& options,
                       int device, convolution_pass pass)
{
    return {device,
            pass,
            problem,
            options.search,
            options.deterministic_only(),
            problem.type == data_type::fp32 && options.allow_tf32,
            options.workspace_budget_bytes};
}

template <class Algorithm>
basic_convolution_explanation<Algorithm>
cached_or_searched(const convolution_problem& problem, const convolution_options& options,
                   int device,
                   const std::function<basic_convolution_explanation<Algorithm>()>& search)
{
    using explanation = basic_convolution_explanation<Algorithm>;
    const plan_key key = make_plan_key(problem, options, device, explanation::pass);
    plan_cache& c = cache();
    {
        const std::lock_guard lock(c.mutex);
        const auto found = c.plans.find(key);
        if (found != c.plans.end()) {
            ++c.hits;
            // The key holds the pass, so the entry holds that pass's explanation.
            explanation cached = std::get<explanation>(found->second);
            cached.from_cache = true;
            return cached;
        }
        ++c.misses;
    }
    explanation searched = search();
    const std::lock_guard lock(c.mutex);
    c.plans.insert_or_assign(key, cached_explanation(searched));
    return searched;
}

template convolution_explanation
cached_or_searched<convolution_algorithm>(const convolution_problem&, const convolution_options&,
                                          int, const std::function<convolution_explanation()>&);
template backward_data_explanation
cached_or_searched<backward_data_algorithm>(const convolution_problem&, const convolution_options&,
                                            int, const std::function<backward_data_explanation()>&);
template backward_filter_explanation
cached_or_searched<backward_filter_algorithm>(const convolution_problem&,
                                              const convolution_options&, int,
                                              const std::function<backward_filter_explanation()>&);

// ---- selection ------------------------------------------------------------------------------

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

// ---- planning scratch -----------------------------------------------------------------------

namespace {

// The planning scratch's values repeat with this period (in elements): enough that no cache
// line or tile sees a constant, small enough to generate on the host in microseconds.
constexpr std::size_t scratch_pattern_elements = std::size_t{1} << 16;

} // namespace

std::vector<std::byte> seeded_scratch_values(data_type type, std::size_t elements,
                                             std::uint32_t seed)
{
    const std::size_t size = element_size(type);
    if (elements > std::numeric_limits<std::size_t>::max() / size) {
        throw std::invalid_argument("gpu::dnn::detail::seeded_scratch_values: " +
                                    std::to_string(elements) + " elements overflow a byte count");
    }
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> magnitude(0.25F, 1.0F);
    std::bernoulli_distribution negative(0.5);
    std::vector<std::byte> bytes(elements * size);
    for (std::size_t i = 0; i < elements; ++i) {
        const float value = negative(engine) ? -magnitude(engine) : magnitude(engine);
        std::byte* out = bytes.data() + i * size;
        if (type == data_type::fp16) {
            const __half half = __float2half(value);
            std::memcpy(out, &half, size);
        } else if (type == data_type::bf16) {
            const __nv_bfloat16 bf16 = __float2bfloat16(value);
            std::memcpy(out, &bf16, size);
        } else {
            std::memcpy(out, &value, size);
        }
    }
    return bytes;
}

// One block from the host, then device-to-device copies that double the filled prefix: a tensor
// of gigabytes takes about 15 copies, not gigabytes of host values.
void fill_seeded_scratch(void* data, std::size_t elements, data_type type, std::uint32_t seed,
                         stream_ref stream)
{
    if (elements == 0) {
        return;
    }
    if (data == nullptr ||
        elements > std::numeric_limits<std::size_t>::max() / element_size(type)) {
        throw std::invalid_argument(
            "gpu::dnn::detail::fill_seeded_scratch: " + std::to_string(elements) + " elements at " +
            (data == nullptr ? "a null address" : "an address") +
            (data == nullptr ? "" : " (the byte count overflows)"));
    }
    const std::vector<std::byte> block =
        seeded_scratch_values(type, std::min(elements, scratch_pattern_elements), seed);
    auto* bytes = static_cast<std::byte*>(data);
    GPU_CUDA_CHECK(
        cudaMemcpyAsync(bytes, block.data(), block.size(), cudaMemcpyHostToDevice, stream.get()));
    const std::size_t total = elements * element_size(type);
    for (std::size_t filled = block.size(); filled < total;) {
        const std::size_t count = std::min(filled, total - filled);
        GPU_CUDA_CHECK(
            cudaMemcpyAsync(bytes + filled, bytes, count, cudaMemcpyDeviceToDevice, stream.get()));
        filled += count;
    }
    // A copy from pageable memory returns once the bytes are staged, so freeing `block` is safe
    // already; the wait is for the callers, which run cuDNN on this scratch right after and
    // report a failed fill here rather than as a failed trial.
    stream.synchronize();
}

} // namespace detail

} // namespace gpu::dnn
