// Forward convolution plans: problem checks, the algorithm search under an explicit policy and
// workspace budget, the process-wide plan cache, explain(), and the forward itself.
//
// The search follows what PyTorch's Conv_v7.cpp learned the hard way: set the math type before
// asking cuDNN (or it leaves tensor-core algorithms out), run with the math type the chosen
// result reports (or cuDNN silently picks a slower kernel), and size the exhaustive search's
// workspace from the algorithms that fit the budget instead of letting cuDNN allocate.
#include "translate.hpp"

#include <gpu/capture.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/numerics.hpp>
#include <gpu/error.hpp>
#include <gpu/numerics.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <source_location>
#include <stdexcept>
#include <string>

namespace gpu::dnn {

std::string_view to_string(convolution_algorithm algorithm) noexcept
{
    switch (algorithm) {
    case convolution_algorithm::implicit_gemm: return "implicit_gemm";
    case convolution_algorithm::implicit_precomp_gemm: return "implicit_precomp_gemm";
    case convolution_algorithm::gemm: return "gemm";
    case convolution_algorithm::direct: return "direct";
    case convolution_algorithm::fft: return "fft";
    case convolution_algorithm::fft_tiling: return "fft_tiling";
    case convolution_algorithm::winograd: return "winograd";
    case convolution_algorithm::winograd_nonfused: return "winograd_nonfused";
    }
    return "unknown";
}

std::string_view to_string(convolution_epilogue epilogue) noexcept
{
    switch (epilogue) {
    case convolution_epilogue::none: return "none";
    case convolution_epilogue::bias: return "bias";
    case convolution_epilogue::bias_relu: return "bias_relu";
    }
    return "unknown";
}

std::string_view to_string(epilogue_execution execution) noexcept
{
    switch (execution) {
    case epilogue_execution::none: return "none";
    case epilogue_execution::fused: return "fused";
    case epilogue_execution::unfused: return "unfused";
    }
    return "unknown";
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

std::size_t convolution_problem::output_elements() const { return detail::product(output()); }

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
    std::string text = std::string(dnn::to_string(type)) + " " + std::string(dnn::to_string(layout)) +
                       " input " + dnn::to_string(input) + " filter " + dnn::to_string(filter) +
                       ", " + geometry.to_string();
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

} // namespace

std::string convolution_explanation::to_string() const
{
    std::string text = "convolution " + problem + "\n";
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
    if (execution == epilogue_execution::fused) {
        text += "epilogue: " + std::string(dnn::to_string(epilogue)) +
                ", fused in one call (cudnnConvolutionBiasActivationForward)\n";
    } else if (execution == epilogue_execution::unfused) {
        text += "epilogue: " + std::string(dnn::to_string(epilogue)) +
                ", unfused (cudnnConvolutionForward, then cudnnAddTensor" +
                (epilogue == convolution_epilogue::bias_relu ? ", then cudnnActivationForward" : "") +
                ") because " + unfused_reason + "\n";
    }
    text += "candidates, in cuDNN's order:\n";
    for (const algorithm_candidate& c : candidates) {
        text += "  " + pad_right(std::string(dnn::to_string(c.algorithm)), 22) + " " +
                pad_right(std::string(dnn::to_string(c.math)), 10) + " " +
                pad_right(format_bytes(c.workspace_bytes), 11) + " " +
                pad_right(c.time_ms ? milliseconds(*c.time_ms) : std::string("-"), 12) + " " +
                (c.chosen ? "CHOSEN" : (c.rejected ? "rejected: " : "") + c.reason) + "\n";
    }
    return text;
}

namespace {

std::string no_algorithm_message(const convolution_explanation& explanation)
{
    const bool refused = std::any_of(explanation.candidates.begin(), explanation.candidates.end(),
                                     [](const algorithm_candidate& c) {
                                         return c.reason.starts_with("refused at trial");
                                     });
    std::string report = explanation.to_string();
    if (report.ends_with('\n')) {
        report.pop_back(); // the hint follows on its own line
    }
    return std::string("no algorithm fits the policy and the workspace budget") +
           (refused ? ", or cuDNN refused at trial every one that does" : "") + "\n" + report;
}

} // namespace

no_algorithm_error::no_algorithm_error(const convolution_explanation& explanation,
                                       std::source_location where)
    : dnn_error("gpu::dnn::convolution", "no_algorithm",
                static_cast<long long>(CUDNN_STATUS_NOT_SUPPORTED), no_algorithm_message(explanation),
                "raise the budget, allow TF32 or non-deterministic algorithms, or change the layout",
                gpu::detail::current_device_or_unknown(), where),
      explanation_(std::make_shared<const convolution_explanation>(explanation))
{
}

// ---- the plan cache -------------------------------------------------------------------------

namespace {

struct plan_cache {
    std::mutex mutex;
    std::map<detail::plan_key, convolution_explanation> plans;
    std::size_t hits = 0;
    std::size_t misses = 0;
};

plan_cache& cache()
{
    static plan_cache instance;
    return instance;
}

std::optional<convolution_explanation> cache_lookup(const detail::plan_key& key)
{
    plan_cache& c = cache();
    const std::lock_guard lock(c.mutex);
    const auto found = c.plans.find(key);
    if (found == c.plans.end()) {
        ++c.misses;
        return std::nullopt;
    }
    ++c.hits;
    return found->second;
}

void cache_insert(const detail::plan_key& key, const convolution_explanation& explanation)
{
    plan_cache& c = cache();
    const std::lock_guard lock(c.mutex);
    c.plans.insert_or_assign(key, explanation);
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

// ---- selection ------------------------------------------------------------------------------

namespace detail {

plan_key make_plan_key(const convolution_problem& problem, const convolution_options& options,
                       int device)
{
    return {device,
            problem,
            options.search,
            options.deterministic_only(),
            problem.type == data_type::fp32 && options.allow_tf32,
            options.workspace_budget_bytes};
}

std::optional<std::size_t> select_algorithm(std::vector<algorithm_candidate>& candidates,
                                            const selection_rules& rules)
{
    const bool timed = rules.search == algorithm_search::exhaustive;
    std::optional<std::size_t> chosen;
    for (std::size_t i = 0; i < candidates.size(); ++i) {
        algorithm_candidate& c = candidates[i];
        c.chosen = false;
        c.rejected = true;
        if (c.status != "CUDNN_STATUS_SUCCESS") {
            c.reason = "cuDNN cannot run it for this problem (" + c.status + ")";
        } else if (c.workspace_bytes > rules.workspace_budget_bytes) {
            c.reason = "needs " + format_bytes(c.workspace_bytes) +
                       " of workspace, over the budget of " +
                       format_bytes(rules.workspace_budget_bytes);
        } else if (rules.deterministic_only && !c.deterministic) {
            c.reason = "not deterministic, and only deterministic algorithms are allowed";
        } else if (rules.type == data_type::fp32 && !rules.allow_tf32 && c.math != math_type::fma) {
            c.reason = "would use tensor-op (TF32) math on FP32 data, and TF32 is off";
        } else if (rules.epilogue == convolution_epilogue::bias &&
                   c.algorithm != convolution_algorithm::implicit_precomp_gemm) {
            c.reason = "a fused bias without activation runs only with implicit_precomp_gemm "
                       "(cuDNN's rule for CUDNN_ACTIVATION_IDENTITY)";
        } else if (timed && !(c.time_ms && *c.time_ms >= 0.0)) {
            c.reason = "the search could not time it";
        } else {
            c.rejected = false;
            c.reason.clear();
            if (!chosen || (timed && *c.time_ms < *candidates[*chosen].time_ms)) {
                chosen = i;
            }
        }
    }
    if (!chosen) {
        return std::nullopt;
    }
    algorithm_candidate& winner = candidates[*chosen];
    winner.chosen = true;
    for (algorithm_candidate& c : candidates) {
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
    std::string why;
};

// Chooses under `rules` and tries the choice with `trial` (a call of `api`); a refusal rejects
// that candidate (its status becomes `<why> from <api>`) and the choice is made again, until a
// trial runs or nothing is left. An empty `trial` tries nothing. Appends every refusal.
std::optional<std::size_t> choose_and_try(std::vector<algorithm_candidate>& candidates,
                                          const selection_rules& rules, const candidate_trial& trial,
                                          std::string_view api, std::vector<trial_refusal>& refusals)
{
    std::optional<std::size_t> chosen = select_algorithm(candidates, rules);
    while (chosen && trial) {
        algorithm_candidate& c = candidates[*chosen];
        std::optional<std::string> refused = trial(c);
        if (!refused) {
            break;
        }
        refusals.push_back({*chosen, c.status, *refused});
        c.status = *refused + " from " + std::string(api);
        chosen = select_algorithm(candidates, rules);
    }
    return chosen;
}

// select_algorithm gave the refused candidates its generic reason; say that a trial refused them.
void mark_refused_at_trial(std::vector<algorithm_candidate>& candidates,
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

std::optional<std::size_t> select_tried(std::vector<algorithm_candidate>& candidates,
                                        const selection_rules& rules,
                                        const candidate_trial& try_plain)
{
    std::vector<trial_refusal> refusals;
    const std::optional<std::size_t> chosen =
        choose_and_try(candidates, rules, try_plain, "cudnnConvolutionForward", refusals);
    mark_refused_at_trial(candidates, refusals);
    return chosen;
}

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
    }
    selection_rules plain = rules;
    plain.epilogue = convolution_epilogue::none;
    result.chosen = select_tried(candidates, plain, try_plain);
    result.execution = epilogue_execution::unfused;
    return result;
}

} // namespace detail

// ---- planning -------------------------------------------------------------------------------

namespace {

math_type requested_math(data_type type, bool allow_tf32)
{
    if (type != data_type::fp32) {
        return math_type::tensor_op;
    }
    return allow_tf32 ? math_type::default_math : math_type::fma;
}

// The workspace sizes of every algorithm that cuDNN supports for this problem and that fit the
// budget, largest first: what the exhaustive search may use.
std::vector<std::size_t> workspace_sizes_within(const handle& h, const tensor_descriptor& x,
                                                const filter_descriptor& w,
                                                const convolution_descriptor& conv,
                                                const tensor_descriptor& y, std::size_t budget)
{
    std::vector<std::size_t> sizes;
    for (int algo = 0; algo < CUDNN_CONVOLUTION_FWD_ALGO_COUNT; ++algo) {
        std::size_t bytes = 0;
        const cudnnStatus_t status = cudnnGetConvolutionForwardWorkspaceSize(
            h.get(), x.get(), w.get(), conv.get(), y.get(),
            static_cast<cudnnConvolutionFwdAlgo_t>(algo), &bytes);
        if (status == CUDNN_STATUS_SUCCESS && bytes <= budget) {
            sizes.push_back(bytes);
        } else if (status != CUDNN_STATUS_SUCCESS) {
            static_cast<void>(take_last_error_string()); // an unsupported algorithm is expected
        }
    }
    std::sort(sizes.rbegin(), sizes.rend());
    sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
    return sizes;
}

// What cudnnGetConvolutionForwardWorkspaceSize asks for `algorithm` under `math` (which it
// leaves set on `conv`); the status when cuDNN cannot say. The forward is given at least this
// much, so the budget must see it, not only the figure a perf result reports.
struct workspace_query {
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    std::size_t bytes = 0;
};

workspace_query forward_workspace(const handle& h, const tensor_descriptor& x,
                                  const filter_descriptor& w, convolution_descriptor& conv,
                                  const tensor_descriptor& y, convolution_algorithm algorithm,
                                  math_type math)
{
    conv.set_math(math);
    workspace_query query;
    query.status = cudnnGetConvolutionForwardWorkspaceSize(
        h.get(), x.get(), w.get(), conv.get(), y.get(),
        static_cast<cudnnConvolutionFwdAlgo_t>(algorithm), &query.bytes);
    if (query.status != CUDNN_STATUS_SUCCESS) {
        static_cast<void>(take_last_error_string());
    }
    return query;
}

// The largest workspace in `sizes` that the device can give now; an empty buffer when even the
// smallest fails (the search then reports the algorithms that needed it as failed).
device_buffer<std::byte> allocate_search_workspace(const std::vector<std::size_t>& sizes,
                                                   stream_ref stream)
{
    for (const std::size_t bytes : sizes) {
        try {
            return device_buffer<std::byte>(bytes, stream);
        } catch (const out_of_memory&) {
            // Fall back to the next smaller size, as PyTorch caps at its largest free block.
        }
    }
    return {};
}

// The planning scratch's values repeat with this period (in elements): enough that no cache
// line or tile sees a constant, small enough to generate on the host in microseconds.
constexpr std::size_t scratch_pattern_elements = std::size_t{1} << 16;

// After a cuDNN call at planning that failed (or ran work on `stream`): a failure of the CUDA
// context is no refusal of one algorithm. Throws a sticky error, or any error the stream reports
// when synchronised; clears and returns a non-sticky one (a launch cuDNN could not make).
cudaError_t check_cuda_context(stream_ref stream, const std::string& what)
{
    const cudaError_t last = cudaGetLastError();
    if (gpu::is_sticky(last)) {
        gpu::detail::throw_error(last, what.c_str(), std::source_location::current());
    }
    const cudaError_t synced = cudaStreamSynchronize(stream.get());
    if (synced != cudaSuccess) {
        gpu::detail::throw_error(synced, ("cudaStreamSynchronize after " + what).c_str(),
                                 std::source_location::current());
    }
    return last;
}

// The verdict on a trial that returned `status`: empty when it ran (and the stream completed
// it), otherwise the refusal, e.g. `CUDNN_STATUS_NOT_SUPPORTED (3000)`. Every status but success
// is a refusal (NOT_SUPPORTED, BAD_PARAM, EXECUTION_FAILED, an internal error...), as PyTorch's
// try_all catches every cuDNN error; a CUDA context that failed is thrown instead.
std::optional<std::string> trial_verdict(cudnnStatus_t status, stream_ref stream,
                                         const std::string& what)
{
    const cudaError_t cuda = check_cuda_context(stream, what);
    if (status == CUDNN_STATUS_SUCCESS) {
        return std::nullopt;
    }
    static_cast<void>(take_last_error_string()); // the next failure must not read this one's text
    std::string why = status_name(status) + " (" + std::to_string(static_cast<int>(status)) + ")";
    if (cuda != cudaSuccess) {
        why += ", CUDA " + cuda_status_name(cuda);
    }
    return why;
}

// One perf result as a candidate, before the workspace check.
algorithm_candidate candidate_from(const cudnnConvolutionFwdAlgoPerf_t& p, bool timed)
{
    algorithm_candidate c;
    c.algorithm = static_cast<convolution_algorithm>(p.algo);
    c.status = status_name(p.status);
    c.workspace_bytes = p.memory;
    if (timed && p.status == CUDNN_STATUS_SUCCESS && p.time >= 0.0F) {
        c.time_ms = static_cast<double>(p.time);
    }
    c.deterministic = p.determinism == CUDNN_DETERMINISTIC;
    // An entry cuDNN cannot run may carry a math type it never set; only a runnable one's
    // must be known.
    if (p.status == CUDNN_STATUS_SUCCESS ||
        (static_cast<int>(p.mathType) >= static_cast<int>(CUDNN_DEFAULT_MATH) &&
         static_cast<int>(p.mathType) <= static_cast<int>(CUDNN_FMA_MATH))) {
        c.math = detail::from_cudnn(p.mathType);
    }
    return c;
}

} // namespace

namespace detail {

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
    if (data == nullptr || elements > std::numeric_limits<std::size_t>::max() / element_size(type)) {
        throw std::invalid_argument("gpu::dnn::detail::fill_seeded_scratch: " +
                                    std::to_string(elements) + " elements at " +
                                    (data == nullptr ? "a null address" : "an address") +
                                    (data == nullptr ? "" : " (the byte count overflows)"));
    }
    const std::vector<std::byte> block =
        seeded_scratch_values(type, std::min(elements, scratch_pattern_elements), seed);
    auto* bytes = static_cast<std::byte*>(data);
    GPU_CUDA_CHECK(cudaMemcpyAsync(bytes, block.data(), block.size(), cudaMemcpyHostToDevice,
                                   stream.get()));
    const std::size_t total = elements * element_size(type);
    for (std::size_t filled = block.size(); filled < total;) {
        const std::size_t count = std::min(filled, total - filled);
        GPU_CUDA_CHECK(cudaMemcpyAsync(bytes + filled, bytes, count, cudaMemcpyDeviceToDevice,
                                       stream.get()));
        filled += count;
    }
    // A copy from pageable memory returns once the bytes are staged, so freeing `block` is safe
    // already; the wait is for the callers, which run cuDNN on this scratch right after and
    // report a failed fill here rather than as a failed trial.
    stream.synchronize();
}

} // namespace detail

// The tensors the search and the trials run on: the caller's, or scratch that planning
// allocates on the handle's stream (once, on first need) and frees when planning ends.
struct convolution::planning_buffers {
    const void* x = nullptr;
    const void* w = nullptr;
    void* y = nullptr;
    std::size_t y_bytes = 0; // the bytes at y that planning may overwrite
    device_buffer<std::byte> scratch_x;
    device_buffer<std::byte> scratch_w;
    device_buffer<std::byte> scratch_y;
    device_buffer<std::byte> bias; // the fused trial's (zeros)

    // Scratch tensors when the caller gave none: the input and filter seeded and non-zero (the
    // exhaustive search times on them, and zeros run faster), the output zeroed.
    void ensure(const convolution& plan, stream_ref stream)
    {
        if (x != nullptr) {
            return;
        }
        const data_type type = plan.problem_.type;
        scratch_x = device_buffer<std::byte>(plan.input_.size_bytes(), stream);
        scratch_w = device_buffer<std::byte>(plan.filter_.size_bytes(), stream);
        scratch_y = device_buffer<std::byte>(plan.output_.size_bytes(), stream);
        scratch_y.fill_zero_async(stream);
        const std::size_t size = element_size(type);
        detail::fill_seeded_scratch(scratch_x.data(), scratch_x.size() / size, type, 1, stream);
        detail::fill_seeded_scratch(scratch_w.data(), scratch_w.size() / size, type, 2, stream);
        x = scratch_x.data();
        w = scratch_w.data();
        y = scratch_y.data();
        y_bytes = scratch_y.size();
    }
};

convolution::element_counts convolution::counts_of(const convolution_problem& problem)
{
    problem.validate();
    return {problem.input_elements(), problem.filter_elements(), problem.output_elements(),
            problem.epilogue == convolution_epilogue::none ? 0
                                                           : static_cast<std::size_t>(problem.filter[0])};
}

void convolution::check_buffers(const element_counts& expected, const convolution_problem& problem,
                                detail::element_info element, std::size_t x, std::size_t w,
                                std::optional<std::size_t> bias, std::size_t y, bool running)
{
    const std::string where = running ? "gpu::dnn::convolution::forward: " : "gpu::dnn::convolution: ";
    const bool fp32 = problem.type == data_type::fp32;
    if (element.is_float != fp32 || element.size != element_size(problem.type)) {
        throw std::invalid_argument(where + "the buffers hold " + std::to_string(element.size) +
                                    "-byte " + (element.is_float ? "float" : "non-float") +
                                    " elements but the problem is " +
                                    std::string(to_string(problem.type)) + " (" +
                                    (fp32 ? "float" : "a 2-byte type such as __half") + ")");
    }
    const auto check = [&](const char* name, std::size_t have, std::size_t need) {
        if (have != need) {
            throw std::invalid_argument(where + name + " has " + std::to_string(have) +
                                        " elements but the problem needs " + std::to_string(need) +
                                        " (" + problem.to_string() + ")");
        }
    };
    check("x (the input)", x, expected.input);
    check("w (the filter)", w, expected.filter);
    check("y (the output)", y, expected.output);
    if (!running) {
        return;
    }
    if (bias && problem.epilogue == convolution_epilogue::none) {
        throw std::invalid_argument(where + "a bias was given but the plan's epilogue is none; "
                                            "plan with epilogue bias or bias_relu");
    }
    if (!bias && problem.epilogue != convolution_epilogue::none) {
        throw std::invalid_argument(where + "the plan's epilogue " +
                                    std::string(to_string(problem.epilogue)) + " needs a bias");
    }
    if (bias) {
        check("the bias", *bias, expected.bias);
    }
}

convolution::convolution(handle& h, const convolution_problem& problem,
                         const convolution_options& options)
{
    plan(h, problem, options, nullptr, nullptr, nullptr);
}

void convolution::plan(handle& h, const convolution_problem& problem,
                       const convolution_options& options, const void* x, const void* w, void* y)
{
    // Every check that needs no GPU comes first: a bad problem is refused before anything is
    // allocated, even with an empty handle.
    const element_counts counts = counts_of(problem);
    GPU_EXPECTS(h, std::logic_error,
                "gpu::dnn::convolution: the handle holds nothing (moved from or released)");
    const std::vector<int> out = problem.output();
    input_ = tensor_descriptor(problem.input, problem.type, problem.layout);
    filter_ = filter_descriptor(problem.filter, problem.type, problem.layout);
    output_ = tensor_descriptor(out, problem.type, problem.layout);
    convolution_ = convolution_descriptor(problem.geometry, data_type::fp32,
                                          requested_math(problem.type, options.allow_tf32));
    if (problem.epilogue != convolution_epilogue::none) {
        std::vector<int> bias_dims(out.size(), 1);
        bias_dims[1] = out[1];
        bias_ = tensor_descriptor(bias_dims, problem.type, problem.layout);
        // PyTorch's fused convolution sets ReLU this way (no NaN propagation, the coefficient
        // at the largest double): some fused kernels clip at the coefficient.
        activation_ = activation_descriptor(problem.epilogue == convolution_epilogue::bias_relu
                                                ? activation_mode::relu
                                                : activation_mode::identity,
                                            std::numeric_limits<double>::max(), false);
    }
    problem_ = problem;
    counts_ = counts;
    options_ = options;

    int device = -1;
    GPU_CUDA_CHECK(cudaGetDevice(&device));
    const detail::plan_key key = detail::make_plan_key(problem, options, device);
    if (std::optional<convolution_explanation> cached = cache_lookup(key)) {
        explanation_ = std::move(*cached);
        explanation_.from_cache = true;
    } else {
        explanation_ = search(h, x, w, y);
        cache_insert(key, explanation_);
    }

    // Run with the math type the chosen algorithm was measured or ranked with, and with at
    // least the workspace cuDNN asks for under that math type.
    convolution_.set_math(explanation_.math);
    std::size_t bytes = 0;
    GPU_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h.get(), input_.get(), filter_.get(),
                                                            convolution_.get(), output_.get(),
                                                            native_algorithm(), &bytes));
    workspace_ = device_buffer<std::byte>(std::max(bytes, explanation_.workspace_bytes), h.stream());
    // workspace_bytes() and explain() report what the forward is given (the raw-call comparison
    // in bench/conv sizes its own workspace from it).
    explanation_.workspace_bytes = workspace_.size();
}

convolution_explanation convolution::search(handle& h, const void* x, const void* w, void* y)
{
    convolution_explanation result;
    result.problem = problem_.to_string();
    result.search = options_.search;
    result.deterministic_only = options_.deterministic_only();
    result.allow_tf32 = problem_.type == data_type::fp32 && options_.allow_tf32;
    result.workspace_budget_bytes = options_.workspace_budget_bytes;
    result.epilogue = problem_.epilogue;

    planning_buffers buffers;
    buffers.x = x;
    buffers.w = w;
    buffers.y = y;
    buffers.y_bytes = counts_.output * element_size(problem_.type);
    result.candidates = find_candidates(h, buffers, result.problem);
    const detail::selection_rules rules{options_.search, result.deterministic_only,
                                        result.allow_tf32, problem_.type, problem_.epilogue,
                                        options_.workspace_budget_bytes};

    // cuDNN's heuristic ranks without running, and may refuse at run time what it ranked; the
    // fused epilogue may refuse what cuDNN ranked or timed for the plain convolution. So the
    // choice is tried once here (as PyTorch's try_all runs each algorithm in turn), and a refusal
    // moves on to the next candidate. The exhaustive search has run every plain candidate.
    const detail::candidate_trial try_fused = [&](const algorithm_candidate& c) {
        return try_candidate(h, buffers, c, true);
    };
    detail::candidate_trial try_plain;
    if (options_.search != algorithm_search::exhaustive) {
        try_plain = [&](const algorithm_candidate& c) { return try_candidate(h, buffers, c, false); };
    }
    const detail::epilogue_selection selection =
        detail::select_with_epilogue(result.candidates, rules, try_fused, try_plain);
    result.execution = selection.execution;
    result.unfused_reason = selection.unfused_reason;
    if (!selection.chosen) {
        throw no_algorithm_error(result);
    }
    const algorithm_candidate& winner = result.candidates[*selection.chosen];
    result.algorithm = winner.algorithm;
    result.math = winner.math;
    result.workspace_bytes = winner.workspace_bytes;
    result.time_ms = winner.time_ms;
    result.deterministic = winner.deterministic;
    return result;
}

std::vector<algorithm_candidate> convolution::find_candidates(handle& h, planning_buffers& buffers,
                                                              const std::string& context)
{
    int capacity = 0;
    GPU_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h.get(), &capacity));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(capacity, 1)));
    int returned = 0;
    const bool timed = options_.search == algorithm_search::exhaustive;
    const stream_ref stream = h.stream();
    if (timed) {
        buffers.ensure(*this, stream);
        device_buffer<std::byte> workspace = allocate_search_workspace(
            workspace_sizes_within(h, input_, filter_, convolution_, output_,
                                   options_.workspace_budget_bytes),
            stream);
        const cudnnStatus_t status = cudnnFindConvolutionForwardAlgorithmEx(
            h.get(), input_.get(), buffers.x, filter_.get(), buffers.w, convolution_.get(),
            output_.get(), buffers.y, capacity, &returned, perf.data(), workspace.data(),
            workspace.size());
        if (status != CUDNN_STATUS_SUCCESS) {
            gpu::detail::throw_error(status, "cudnnFindConvolutionForwardAlgorithmEx",
                                     std::source_location::current(), context);
        }
        // A candidate whose run broke the CUDA context comes back as failed; the plan must not
        // go on as if only that algorithm were unusable.
        static_cast<void>(check_cuda_context(stream, "cudnnFindConvolutionForwardAlgorithmEx"));
    } else {
        const cudnnStatus_t status = cudnnGetConvolutionForwardAlgorithm_v7(
            h.get(), input_.get(), filter_.get(), convolution_.get(), output_.get(), capacity,
            &returned, perf.data());
        if (status != CUDNN_STATUS_SUCCESS) {
            gpu::detail::throw_error(status, "cudnnGetConvolutionForwardAlgorithm_v7",
                                     std::source_location::current(), context);
        }
    }
    std::vector<algorithm_candidate> candidates;
    for (int i = 0; i < std::min(returned, capacity); ++i) {
        algorithm_candidate c = candidate_from(perf[static_cast<std::size_t>(i)], timed);
        if (c.status == "CUDNN_STATUS_SUCCESS") {
            // The plan allocates what cuDNN asks under this math type when that exceeds the
            // perf result's figure; the budget and explain() must see what will be allocated.
            const workspace_query query = forward_workspace(h, input_, filter_, convolution_,
                                                            output_, c.algorithm, c.math);
            if (query.status == CUDNN_STATUS_SUCCESS) {
                c.workspace_bytes = std::max(c.workspace_bytes, query.bytes);
            } else {
                c.status = status_name(query.status) +
                           " from cudnnGetConvolutionForwardWorkspaceSize";
            }
        }
        candidates.push_back(std::move(c));
    }
    return candidates;
}

std::optional<std::string> convolution::try_candidate(handle& h, planning_buffers& buffers,
                                                      const algorithm_candidate& c, bool fused)
{
    const stream_ref stream = h.stream();
    buffers.ensure(*this, stream);
    const cudnnConvolutionFwdAlgo_t algo = static_cast<cudnnConvolutionFwdAlgo_t>(c.algorithm);
    // Under the candidate's math type, as the forward will run it (this sets it on the descriptor).
    const workspace_query query = forward_workspace(h, input_, filter_, convolution_, output_,
                                                    c.algorithm, c.math);
    if (query.status != CUDNN_STATUS_SUCCESS) {
        return "its workspace size query said " + status_name(query.status) + " (" +
               std::to_string(static_cast<int>(query.status)) + ")";
    }
    device_buffer<std::byte> workspace(std::max(query.bytes, c.workspace_bytes), stream);
    const float one = 1.0F;
    const float zero = 0.0F;
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    if (fused) {
        if (buffers.bias.empty()) {
            buffers.bias = device_buffer<std::byte>(
                static_cast<std::size_t>(problem_.filter[0]) * element_size(problem_.type), stream);
            buffers.bias.fill_zero_async(stream);
        }
        // z is the output with alpha2 = 0, as in run(), where cuDNN is expected not to read it
        // (TensorFlow, XLA and PyTorch pass an unset output as z). Planning zeroes it anyway:
        // a trial costs one memset, and a planning trial on a caller's NaN-poisoned y must not
        // be what decides whether that expectation holds (the [gpu] test of run() on a poisoned
        // y does).
        GPU_CUDA_CHECK(cudaMemsetAsync(buffers.y, 0, buffers.y_bytes, stream.get()));
        status = cudnnConvolutionBiasActivationForward(
            h.get(), &one, input_.get(), buffers.x, filter_.get(), buffers.w, convolution_.get(),
            algo, workspace.data(), workspace.size(), &zero, output_.get(), buffers.y, bias_.get(),
            buffers.bias.data(), activation_.get(), output_.get(), buffers.y);
    } else {
        status = cudnnConvolutionForward(h.get(), &one, input_.get(), buffers.x, filter_.get(),
                                         buffers.w, convolution_.get(), algo, workspace.data(),
                                         workspace.size(), &zero, output_.get(), buffers.y);
    }
    return trial_verdict(status, stream,
                         std::string(fused ? "cudnnConvolutionBiasActivationForward"
                                           : "cudnnConvolutionForward") +
                             " (trial of " + std::string(to_string(c.algorithm)) + ")");
}

// ---- running --------------------------------------------------------------------------------

void convolution::forward_raw(handle& h, const void* x, const void* w, const void* bias, void* y)
{
    if ((bias == nullptr) != (problem_.epilogue == convolution_epilogue::none)) {
        throw std::invalid_argument(
            "gpu::dnn::convolution::forward_raw: the plan's epilogue is " +
            std::string(to_string(problem_.epilogue)) +
            (bias == nullptr ? ", which needs a bias" : ", which takes no bias"));
    }
    run(h, x, w, bias, y);
}

void convolution::run(handle& h, const void* x, const void* w, const void* bias, void* y)
{
    GPU_EXPECTS(input_, std::logic_error, "gpu::dnn::convolution::forward: the plan was moved from");
    GPU_EXPECTS(h, std::logic_error,
                "gpu::dnn::convolution::forward: the handle holds nothing (moved from or released)");
    GPU_EXPECTS(x != nullptr && w != nullptr && y != nullptr, std::invalid_argument,
                "gpu::dnn::convolution::forward: null ", x == nullptr ? "x" : w == nullptr ? "w" : "y",
                " pointer");
    const stream_ref stream = h.stream();
    // The checks synchronise after the call: refused before it is queued, not breaking a capture.
    gpu::detail::refuse_while_capturing(stream, "gpu::dnn::convolution::forward",
                                        options_.synchronous_checks, options_.check_numerics);
    if (!workspace_.empty() && workspace_.stream() != stream) {
        // Free on the old stream (after its work), allocate on the new one: both stay ordered.
        workspace_ = device_buffer<std::byte>(workspace_.size(), stream);
    }
    const auto check = [&](cudnnStatus_t status, const char* api) {
        if (status != CUDNN_STATUS_SUCCESS) {
            gpu::detail::throw_error(status, api, std::source_location::current(),
                                     explanation_.problem + ", algorithm " +
                                         std::string(to_string(explanation_.algorithm)) + ", math " +
                                         std::string(to_string(explanation_.math)));
        }
    };
    // cuDNN's scaling factors are float for every data type but double.
    const float one = 1.0F;
    const float zero = 0.0F;
    const bool has_epilogue = problem_.epilogue != convolution_epilogue::none;
    const bool unfused = has_epilogue && explanation_.execution == epilogue_execution::unfused;
    if (has_epilogue && !unfused) {
        // z is y with alpha2 = 0: cuDNN does not read it then (TensorFlow and XLA rely on this).
        check(cudnnConvolutionBiasActivationForward(
                  h.get(), &one, input_.get(), x, filter_.get(), w, convolution_.get(),
                  native_algorithm(), workspace_.data(), workspace_.size(), &zero, output_.get(), y,
                  bias_.get(), bias, activation_.get(), output_.get(), y),
              "cudnnConvolutionBiasActivationForward");
    } else {
        check(cudnnConvolutionForward(h.get(), &one, input_.get(), x, filter_.get(), w,
                                      convolution_.get(), native_algorithm(), workspace_.data(),
                                      workspace_.size(), &zero, output_.get(), y),
              "cudnnConvolutionForward");
    }
    if (unfused) {
        // The fused call refused every algorithm (explain() says why). y += bias: bias_ is
        // 1 x K x 1 x 1 in the plan's layout, and cudnnAddTensor broadcasts each dimension of 1.
        check(cudnnAddTensor(h.get(), &one, bias_.get(), bias, &one, output_.get(), y),
              "cudnnAddTensor");
        if (problem_.epilogue == convolution_epilogue::bias_relu) {
            // In place: cuDNN allows it when x and y share one descriptor. The descriptor is the
            // fused call's: ReLU with its upper bound at the largest double, i.e. none. (Identity
            // has no cudnnActivationForward; a bias-only epilogue is complete here.)
            check(cudnnActivationForward(h.get(), activation_.get(), &one, output_.get(), y, &zero,
                                         output_.get(), y),
                  "cudnnActivationForward");
        }
    }
    if (options_.synchronous_checks) {
        stream.synchronize();
    }
    if (options_.check_numerics) {
        const gpu::non_finite_report report = check_finite(y, counts_.output, problem_.type, stream);
        if (!report.all_finite()) {
            throw gpu::numerics_error("gpu::dnn::convolution (" + explanation_.problem + ")", report);
        }
    }
}

} // namespace gpu::dnn
