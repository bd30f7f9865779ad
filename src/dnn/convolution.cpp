// Forward convolution plans: problem checks, the algorithm search under an explicit policy and
// workspace budget, the process-wide plan cache, explain(), and the forward itself.
//
// The search follows what PyTorch's Conv_v7.cpp learned the hard way: set the math type before
// asking cuDNN (or it leaves tensor-core algorithms out), run with the math type the chosen
// result reports (or cuDNN silently picks a slower kernel), and size the exhaustive search's
// workspace from the algorithms that fit the budget instead of letting cuDNN allocate.
#include "translate.hpp"

#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/numerics.hpp>
#include <gpu/error.hpp>
#include <gpu/numerics.hpp>

#include <algorithm>
#include <limits>
#include <cstdio>
#include <map>
#include <mutex>
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

convolution_options convolution_options::from(const profile& settings)
{
    convolution_options options;
    options.search = settings.convolution_search;
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
    text += "policy: " + std::string(gpu::to_string(search)) +
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

no_algorithm_error::no_algorithm_error(const convolution_explanation& explanation)
    : std::runtime_error("gpu::dnn::convolution: no algorithm fits the policy and the workspace "
                         "budget; raise the budget, allow TF32 or non-deterministic algorithms, "
                         "or change the layout.\n" + explanation.to_string()),
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

epilogue_selection select_with_epilogue(std::vector<algorithm_candidate>& candidates,
                                        const selection_rules& rules, const fused_trial& try_fused)
{
    epilogue_selection result;
    result.chosen = select_algorithm(candidates, rules);
    if (rules.epilogue == convolution_epilogue::none) {
        return result;
    }
    struct refusal {
        std::size_t index;
        std::string plain_status; // what cuDNN said for the plain convolution
        std::string fused_status; // what the fused call said
    };
    std::vector<refusal> refusals;
    while (result.chosen) {
        algorithm_candidate& c = candidates[*result.chosen];
        std::optional<std::string> refused = try_fused(c);
        if (!refused) {
            result.execution = epilogue_execution::fused;
            return result;
        }
        refusals.push_back({*result.chosen, c.status, *refused});
        c.status = *refused + " from cudnnConvolutionBiasActivationForward";
        result.chosen = select_algorithm(candidates, rules);
    }

    // Nothing runs fused. Say why, before the plain selection rewrites the candidates' reasons.
    std::string reason;
    bool precomp_tried = false;
    for (const refusal& r : refusals) {
        const convolution_algorithm algorithm = candidates[r.index].algorithm;
        precomp_tried = precomp_tried || algorithm == convolution_algorithm::implicit_precomp_gemm;
        reason += (reason.empty() ? "cudnnConvolutionBiasActivationForward refused " : ", ") +
                  std::string(dnn::to_string(algorithm)) + " (" + r.fused_status + ")";
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
    if (reason.empty()) {
        reason = "no candidate fits the policy and the budget";
    }
    for (const refusal& r : refusals) {
        candidates[r.index].status = r.plain_status;
    }
    selection_rules plain = rules;
    plain.epilogue = convolution_epilogue::none;
    result.chosen = select_algorithm(candidates, plain);
    result.execution = epilogue_execution::unfused;
    result.unfused_reason = std::move(reason);
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

} // namespace

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
    if (!h) {
        throw std::invalid_argument("gpu::dnn::convolution: the handle holds nothing (moved from "
                                    "or released)");
    }
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

    int capacity = 0;
    GPU_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(h.get(), &capacity));
    std::vector<cudnnConvolutionFwdAlgoPerf_t> perf(static_cast<std::size_t>(std::max(capacity, 1)));
    int returned = 0;
    const bool timed = options_.search == algorithm_search::exhaustive;
    const stream_ref stream = h.stream();

    // Scratch tensors when the caller gave none: zeros, so no NaN or denormal skews a timing.
    device_buffer<std::byte> scratch_x;
    device_buffer<std::byte> scratch_w;
    device_buffer<std::byte> scratch_y;
    const auto ensure_tensors = [&] {
        if (x != nullptr) {
            return;
        }
        scratch_x = device_buffer<std::byte>(input_.size_bytes(), stream);
        scratch_w = device_buffer<std::byte>(filter_.size_bytes(), stream);
        scratch_y = device_buffer<std::byte>(output_.size_bytes(), stream);
        scratch_x.fill_zero_async(stream);
        scratch_w.fill_zero_async(stream);
        x = scratch_x.data();
        w = scratch_w.data();
        y = scratch_y.data();
    };

    if (timed) {
        ensure_tensors();
        device_buffer<std::byte> workspace = allocate_search_workspace(
            workspace_sizes_within(h, input_, filter_, convolution_, output_,
                                   options_.workspace_budget_bytes),
            stream);
        const cudnnStatus_t status = cudnnFindConvolutionForwardAlgorithmEx(
            h.get(), input_.get(), x, filter_.get(), w, convolution_.get(), output_.get(), y,
            capacity, &returned, perf.data(), workspace.data(), workspace.size());
        if (status != CUDNN_STATUS_SUCCESS) {
            detail::throw_dnn_error(status, "cudnnFindConvolutionForwardAlgorithmEx",
                                    std::source_location::current(), result.problem);
        }
    } else {
        const cudnnStatus_t status = cudnnGetConvolutionForwardAlgorithm_v7(
            h.get(), input_.get(), filter_.get(), convolution_.get(), output_.get(), capacity,
            &returned, perf.data());
        if (status != CUDNN_STATUS_SUCCESS) {
            detail::throw_dnn_error(status, "cudnnGetConvolutionForwardAlgorithm_v7",
                                    std::source_location::current(), result.problem);
        }
    }

    for (int i = 0; i < returned; ++i) {
        const cudnnConvolutionFwdAlgoPerf_t& p = perf[static_cast<std::size_t>(i)];
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
        if (p.status == CUDNN_STATUS_SUCCESS) {
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
        result.candidates.push_back(std::move(c));
    }
    const detail::selection_rules rules{options_.search, result.deterministic_only,
                                        result.allow_tf32, problem_.type, problem_.epilogue,
                                        options_.workspace_budget_bytes};

    // cuDNN ranks and times algorithms for the plain convolution; the fused bias epilogue may
    // refuse some of them. Try the choice once on scratch data (as PyTorch's AlgoIterator tries
    // each algorithm in turn) and fall back to the next candidate, saying why; when the fused call
    // refuses every one, the epilogue runs unfused, in the steps of PyTorch's unfused fallback.
    device_buffer<std::byte> trial_bias;
    const detail::fused_trial try_fused =
        [&](const algorithm_candidate& c) -> std::optional<std::string> {
        if (trial_bias.empty()) {
            ensure_tensors();
            trial_bias = device_buffer<std::byte>(
                static_cast<std::size_t>(problem_.filter[0]) * element_size(problem_.type), stream);
            trial_bias.fill_zero_async(stream);
        }
        const workspace_query query = forward_workspace(h, input_, filter_, convolution_, output_,
                                                        c.algorithm, c.math);
        cudnnStatus_t status = query.status;
        if (status == CUDNN_STATUS_SUCCESS) {
            device_buffer<std::byte> workspace(std::max(query.bytes, c.workspace_bytes), stream);
            const float one = 1.0F;
            const float zero = 0.0F;
            status = cudnnConvolutionBiasActivationForward(
                h.get(), &one, input_.get(), x, filter_.get(), w, convolution_.get(),
                static_cast<cudnnConvolutionFwdAlgo_t>(c.algorithm), workspace.data(),
                workspace.size(), &zero, output_.get(), y, bias_.get(), trial_bias.data(),
                activation_.get(), output_.get(), y);
        }
        if (status == CUDNN_STATUS_SUCCESS) {
            return std::nullopt;
        }
        // BAD_PARAM (2xxx) and NOT_SUPPORTED (3xxx) are refusals; anything else is a failure.
        const int category = static_cast<int>(status) / 1000;
        if (category != 2 && category != 3) {
            detail::throw_dnn_error(status, "cudnnConvolutionBiasActivationForward",
                                    std::source_location::current(), result.problem);
        }
        static_cast<void>(take_last_error_string());
        return status_name(status);
    };
    const detail::epilogue_selection selection =
        detail::select_with_epilogue(result.candidates, rules, try_fused);
    const std::optional<std::size_t> chosen = selection.chosen;
    result.epilogue = problem_.epilogue;
    result.execution = selection.execution;
    result.unfused_reason = selection.unfused_reason;
    if (!chosen) {
        throw no_algorithm_error(result);
    }
    const algorithm_candidate& winner = result.candidates[*chosen];
    result.algorithm = winner.algorithm;
    result.math = winner.math;
    result.workspace_bytes = winner.workspace_bytes;
    result.time_ms = winner.time_ms;
    result.deterministic = winner.deterministic;
    return result;
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
    if (!input_) {
        throw std::logic_error("gpu::dnn::convolution::forward: the plan was moved from");
    }
    if (!h) {
        throw std::invalid_argument("gpu::dnn::convolution::forward: the handle holds nothing");
    }
    if (x == nullptr || w == nullptr || y == nullptr) {
        throw std::invalid_argument(std::string("gpu::dnn::convolution::forward: null ") +
                                    (x == nullptr ? "x" : w == nullptr ? "w" : "y") + " pointer");
    }
    const stream_ref stream = h.stream();
    if (!workspace_.empty() && workspace_.stream() != stream) {
        // Free on the old stream (after its work), allocate on the new one: both stay ordered.
        workspace_ = device_buffer<std::byte>(workspace_.size(), stream);
    }
    const auto check = [&](cudnnStatus_t status, const char* api) {
        if (status != CUDNN_STATUS_SUCCESS) {
            detail::throw_dnn_error(status, api, std::source_location::current(),
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
        const gpu::non_finite_report report =
            find_non_finite(y, counts_.output, problem_.type, stream);
        if (!report.all_finite()) {
            throw gpu::numerics_error("gpu::dnn::convolution (" + explanation_.problem + ")", report);
        }
    }
}

} // namespace gpu::dnn
