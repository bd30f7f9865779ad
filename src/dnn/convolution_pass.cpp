// Planning and running one pass of a convolution on cuDNN, once for the three passes: the
// search (heuristic ranking or exhaustive timing), the trials at planning, the workspace, the
// descriptors, and the checks around a run. What differs between the passes is only which
// cuDNN function each step calls, and in which order it takes the descriptors: `pass_api`.
#include "memory_tags.hpp"
#include "convolution_pass.hpp"
#include "ops.hpp"

#include "translate.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/error.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>
#include <string>

namespace gpu::dnn::detail {

namespace {

// The cuDNN functions of a pass, each taking the pass's operands in cuDNN's order (see the
// table in convolution_pass.hpp). `find` and `run` take the first_input, second_input and result
// tensors.
template <class Algorithm>
struct pass_api;

template <>
struct pass_api<convolution_algorithm> {
    using perf = cudnnConvolutionFwdAlgoPerf_t;
    using native = cudnnConvolutionFwdAlgo_t;
    static constexpr int count = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
    static constexpr const char* rank_name = "cudnnGetConvolutionForwardAlgorithm_v7";
    static constexpr const char* find_name = "cudnnFindConvolutionForwardAlgorithmEx";
    static constexpr const char* workspace_name = "cudnnGetConvolutionForwardWorkspaceSize";

    static cudnnStatus_t max_count(cudnnHandle_t h, int* n)
    {
        return cudnnGetConvolutionForwardAlgorithmMaxCount(h, n);
    }
    static cudnnStatus_t workspace(const pass_view& view, native algo, std::size_t* bytes)
    {
        return cudnnGetConvolutionForwardWorkspaceSize(view.h.get(), view.input.get(),
                                                       view.filter.get(), view.convolution.get(),
                                                       view.output.get(), algo, bytes);
    }
    static cudnnStatus_t rank(const pass_view& view, int capacity, int* returned, perf* results)
    {
        return cudnnGetConvolutionForwardAlgorithm_v7(
            view.h.get(), view.input.get(), view.filter.get(), view.convolution.get(),
            view.output.get(), capacity, returned, results);
    }
    static cudnnStatus_t find(const pass_view& view, const planning_buffers& buffers, int capacity,
                              int* returned, perf* results, void* workspace,
                              std::size_t workspace_bytes)
    {
        return cudnnFindConvolutionForwardAlgorithmEx(
            view.h.get(), view.input.get(), buffers.first_input(), view.filter.get(),
            buffers.second_input(), view.convolution.get(), view.output.get(), buffers.result(),
            capacity, returned, results, workspace, workspace_bytes);
    }
    static cudnnStatus_t run(const pass_view& view, native algo, const void* first_input,
                             const void* second_input, void* result, void* workspace,
                             std::size_t workspace_bytes, const float* beta)
    {
        const float one = 1.0F;
        return cudnnConvolutionForward(view.h.get(), &one, view.input.get(), first_input,
                                       view.filter.get(), second_input, view.convolution.get(),
                                       algo, workspace, workspace_bytes, beta, view.output.get(),
                                       result);
    }
    // Bytes of the first_input, second_input and result tensors.
    static std::array<std::size_t, 3> bytes(const pass_view& view)
    {
        return {view.input.size_bytes(), view.filter.size_bytes(), view.output.size_bytes()};
    }
};

// dx from w (first_input) and dy (second_input).
template <>
struct pass_api<backward_data_algorithm> {
    using perf = cudnnConvolutionBwdDataAlgoPerf_t;
    using native = cudnnConvolutionBwdDataAlgo_t;
    static constexpr int count = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
    static constexpr const char* rank_name = "cudnnGetConvolutionBackwardDataAlgorithm_v7";
    static constexpr const char* find_name = "cudnnFindConvolutionBackwardDataAlgorithmEx";
    static constexpr const char* workspace_name = "cudnnGetConvolutionBackwardDataWorkspaceSize";

    static cudnnStatus_t max_count(cudnnHandle_t h, int* n)
    {
        return cudnnGetConvolutionBackwardDataAlgorithmMaxCount(h, n);
    }
    static cudnnStatus_t workspace(const pass_view& view, native algo, std::size_t* bytes)
    {
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            view.h.get(), view.filter.get(), view.output.get(), view.convolution.get(),
            view.input.get(), algo, bytes);
    }
    static cudnnStatus_t rank(const pass_view& view, int capacity, int* returned, perf* results)
    {
        return cudnnGetConvolutionBackwardDataAlgorithm_v7(
            view.h.get(), view.filter.get(), view.output.get(), view.convolution.get(),
            view.input.get(), capacity, returned, results);
    }
    static cudnnStatus_t find(const pass_view& view, const planning_buffers& buffers, int capacity,
                              int* returned, perf* results, void* workspace,
                              std::size_t workspace_bytes)
    {
        return cudnnFindConvolutionBackwardDataAlgorithmEx(
            view.h.get(), view.filter.get(), buffers.first_input(), view.output.get(),
            buffers.second_input(), view.convolution.get(), view.input.get(), buffers.result(),
            capacity, returned, results, workspace, workspace_bytes);
    }
    static cudnnStatus_t run(const pass_view& view, native algo, const void* first_input,
                             const void* second_input, void* result, void* workspace,
                             std::size_t workspace_bytes, const float* beta)
    {
        const float one = 1.0F;
        return cudnnConvolutionBackwardData(view.h.get(), &one, view.filter.get(), first_input,
                                            view.output.get(), second_input, view.convolution.get(),
                                            algo, workspace, workspace_bytes, beta,
                                            view.input.get(), result);
    }
    static std::array<std::size_t, 3> bytes(const pass_view& view)
    {
        return {view.filter.size_bytes(), view.output.size_bytes(), view.input.size_bytes()};
    }
};

// dw from x (first_input) and dy (second_input).
template <>
struct pass_api<backward_filter_algorithm> {
    using perf = cudnnConvolutionBwdFilterAlgoPerf_t;
    using native = cudnnConvolutionBwdFilterAlgo_t;
    static constexpr int count = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
    static constexpr const char* rank_name = "cudnnGetConvolutionBackwardFilterAlgorithm_v7";
    static constexpr const char* find_name = "cudnnFindConvolutionBackwardFilterAlgorithmEx";
    static constexpr const char* workspace_name = "cudnnGetConvolutionBackwardFilterWorkspaceSize";

    static cudnnStatus_t max_count(cudnnHandle_t h, int* n)
    {
        return cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(h, n);
    }
    static cudnnStatus_t workspace(const pass_view& view, native algo, std::size_t* bytes)
    {
        return cudnnGetConvolutionBackwardFilterWorkspaceSize(
            view.h.get(), view.input.get(), view.output.get(), view.convolution.get(),
            view.filter.get(), algo, bytes);
    }
    static cudnnStatus_t rank(const pass_view& view, int capacity, int* returned, perf* results)
    {
        return cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            view.h.get(), view.input.get(), view.output.get(), view.convolution.get(),
            view.filter.get(), capacity, returned, results);
    }
    static cudnnStatus_t find(const pass_view& view, const planning_buffers& buffers, int capacity,
                              int* returned, perf* results, void* workspace,
                              std::size_t workspace_bytes)
    {
        return cudnnFindConvolutionBackwardFilterAlgorithmEx(
            view.h.get(), view.input.get(), buffers.first_input(), view.output.get(),
            buffers.second_input(), view.convolution.get(), view.filter.get(), buffers.result(),
            capacity, returned, results, workspace, workspace_bytes);
    }
    static cudnnStatus_t run(const pass_view& view, native algo, const void* first_input,
                             const void* second_input, void* result, void* workspace,
                             std::size_t workspace_bytes, const float* beta)
    {
        const float one = 1.0F;
        return cudnnConvolutionBackwardFilter(view.h.get(), &one, view.input.get(), first_input,
                                              view.output.get(), second_input,
                                              view.convolution.get(), algo, workspace,
                                              workspace_bytes, beta, view.filter.get(), result);
    }
    static std::array<std::size_t, 3> bytes(const pass_view& view)
    {
        return {view.input.size_bytes(), view.output.size_bytes(), view.filter.size_bytes()};
    }
};

template <class Algorithm>
typename pass_api<Algorithm>::native native_of(Algorithm algorithm) noexcept
{
    return static_cast<typename pass_api<Algorithm>::native>(algorithm);
}

// The workspace sizes of every algorithm of the pass that cuDNN supports for this problem and
// that fit the budget, largest first: what the exhaustive search may use.
template <class Algorithm>
std::vector<std::size_t> workspace_sizes_within(const pass_view& view, std::size_t budget)
{
    std::vector<std::size_t> sizes;
    for (int algo = 0; algo < pass_api<Algorithm>::count; ++algo) {
        std::size_t bytes = 0;
        const cudnnStatus_t status = pass_api<Algorithm>::workspace(
            view, static_cast<typename pass_api<Algorithm>::native>(algo), &bytes);
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

// The largest workspace in `sizes` that the device can give now; an empty buffer when even the
// smallest fails (the search then reports the algorithms that needed it as failed).
device_buffer<std::byte> allocate_search_workspace(const std::vector<std::size_t>& sizes,
                                                   stream_ref stream)
{
    for (const std::size_t bytes : sizes) {
        try {
            return device_buffer<std::byte>(bytes, stream, cudnn_planning_scratch_tag());
        } catch (const out_of_memory&) {
            // Fall back to the next smaller size, as PyTorch caps at its largest free block.
        }
    }
    return {};
}

// One perf result as a candidate, before the workspace check.
template <class Algorithm, class Perf>
basic_algorithm_candidate<Algorithm> candidate_from(const Perf& perf, bool timed)
{
    basic_algorithm_candidate<Algorithm> c;
    c.algorithm = static_cast<Algorithm>(perf.algo);
    c.status_code = perf.status;
    c.status = status_name(perf.status);
    c.workspace_bytes = perf.memory;
    if (timed && perf.status == CUDNN_STATUS_SUCCESS && perf.time >= 0.0F) {
        c.time_ms = static_cast<double>(perf.time);
    }
    c.deterministic = perf.determinism == CUDNN_DETERMINISTIC;
    // An entry cuDNN cannot run may carry a math type it never set; only a runnable one's
    // must be known.
    if (perf.status == CUDNN_STATUS_SUCCESS ||
        (static_cast<int>(perf.mathType) >= static_cast<int>(CUDNN_DEFAULT_MATH) &&
         static_cast<int>(perf.mathType) <= static_cast<int>(CUDNN_FMA_MATH))) {
        c.math = from_cudnn(perf.mathType);
    }
    return c;
}

// Asks cuDNN for the perf results of the pass: ranked, or timed on the planning buffers with a
// workspace sized from the algorithms that fit the budget.
template <class Algorithm>
std::vector<typename pass_api<Algorithm>::perf>
perf_results(const pass_view& view, planning_buffers& buffers, const convolution_options& options,
             data_type type, const std::string& context)
{
    using api = pass_api<Algorithm>;
    int capacity = 0;
    GPU_CUDNN_CHECK(api::max_count(view.h.get(), &capacity));
    std::vector<typename api::perf> perf(static_cast<std::size_t>(std::max(capacity, 1)));
    int returned = 0;
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    const char* call = api::rank_name;
    if (options.search == algorithm_search::exhaustive) {
        buffers.ensure<Algorithm>(view, type);
        device_buffer<std::byte> workspace = allocate_search_workspace(
            workspace_sizes_within<Algorithm>(view, options.workspace_budget_bytes),
            view.h.stream());
        call = api::find_name;
        status = api::find(view, buffers, capacity, &returned, perf.data(), workspace.data(),
                           workspace.size());
        if (status == CUDNN_STATUS_SUCCESS) {
            // A candidate whose run broke the CUDA context comes back as failed; the plan must
            // not go on as if only that algorithm were unusable.
            static_cast<void>(check_cuda_context(view.h.stream(), call));
        }
    } else {
        status = api::rank(view, capacity, &returned, perf.data());
    }
    if (status != CUDNN_STATUS_SUCCESS) {
        gpu::detail::throw_error(status, call, std::source_location::current(), context);
    }
    perf.resize(static_cast<std::size_t>(std::clamp(returned, 0, capacity)));
    return perf;
}

} // namespace

math_type requested_math(data_type type, bool allow_tf32) noexcept
{
    if (type != data_type::fp32) {
        return math_type::tensor_op;
    }
    return allow_tf32 ? math_type::default_math : math_type::fma;
}

pass_descriptors make_pass_descriptors(const convolution_problem& problem,
                                       const convolution_options& options)
{
    const std::vector<int> out = problem.output();
    return {tensor_descriptor(problem.input, problem.type, problem.layout),
            filter_descriptor(problem.filter, problem.type, problem.layout),
            tensor_descriptor(out, problem.type, problem.layout),
            convolution_descriptor(problem.geometry, data_type::fp32,
                                   requested_math(problem.type, options.allow_tf32))};
}

std::vector<int> bias_dims(const convolution_problem& problem)
{
    std::vector<int> dims(problem.output().size(), 1);
    dims[1] = problem.filter[0];
    return dims;
}

template <class Algorithm>
void planning_buffers::ensure(const pass_view& view, data_type type)
{
    if (first_input_ != nullptr) {
        return;
    }
    const stream_ref stream = view.h.stream();
    const std::array<std::size_t, 3> bytes = pass_api<Algorithm>::bytes(view);
    const memory_tag tag = cudnn_planning_scratch_tag();
    scratch_first_input_ = device_buffer<std::byte>(bytes[0], stream, tag);
    scratch_second_input_ = device_buffer<std::byte>(bytes[1], stream, tag);
    scratch_result_ = device_buffer<std::byte>(bytes[2], stream, tag);
    scratch_result_.fill_zero_async(stream);
    const std::size_t size = element_size(type);
    fill_seeded_scratch(scratch_first_input_.data(), bytes[0] / size, type, 1, stream);
    fill_seeded_scratch(scratch_second_input_.data(), bytes[1] / size, type, 2, stream);
    first_input_ = scratch_first_input_.data();
    second_input_ = scratch_second_input_.data();
    result_ = scratch_result_.data();
}

template <class Algorithm>
workspace_query query_workspace(const pass_view& view, Algorithm algorithm, math_type math)
{
    view.convolution.set_math(math);
    workspace_query query;
    query.status = pass_api<Algorithm>::workspace(view, native_of(algorithm), &query.bytes);
    if (query.status != CUDNN_STATUS_SUCCESS) {
        static_cast<void>(take_last_error_string());
    }
    return query;
}

template <class Algorithm>
std::vector<basic_algorithm_candidate<Algorithm>>
find_candidates(const pass_view& view, planning_buffers& buffers,
                const convolution_options& options, data_type type, const std::string& context)
{
    const bool timed = options.search == algorithm_search::exhaustive;
    std::vector<basic_algorithm_candidate<Algorithm>> candidates;
    for (const auto& p : perf_results<Algorithm>(view, buffers, options, type, context)) {
        basic_algorithm_candidate<Algorithm> c = candidate_from<Algorithm>(p, timed);
        if (c.status_code == CUDNN_STATUS_SUCCESS) {
            // The plan allocates what cuDNN asks under this math type when that exceeds the
            // perf result's figure; the budget and explain() must see what will be allocated.
            const workspace_query query = query_workspace(view, c.algorithm, c.math);
            if (query.status == CUDNN_STATUS_SUCCESS) {
                c.workspace_bytes = std::max(c.workspace_bytes, query.bytes);
            } else {
                c.status_code = query.status;
                c.status =
                    status_name(query.status) + " from " + pass_api<Algorithm>::workspace_name;
            }
        }
        candidates.push_back(std::move(c));
    }
    return candidates;
}

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

std::optional<trial_refusal_reason> trial_verdict(cudnnStatus_t status, stream_ref stream,
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
    return trial_refusal_reason{status, std::move(why)};
}

trial_refusal_reason workspace_refusal(cudnnStatus_t status)
{
    return {status, "its workspace size query said " + status_name(status) + " (" +
                        std::to_string(static_cast<int>(status)) + ")"};
}

std::optional<device_buffer<std::byte>> trial_workspace(std::size_t bytes, stream_ref stream,
                                                        trial_refusal_reason& refusal)
{
    try {
        return device_buffer<std::byte>(bytes, stream, cudnn_planning_scratch_tag());
    } catch (const gpu::out_of_memory&) {
        refusal = {CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
                   "its workspace of " + std::to_string(bytes) + " bytes " +
                       std::string(out_of_memory_refusal)};
        return std::nullopt;
    }
}

template <class Algorithm>
std::optional<trial_refusal_reason> try_candidate(const pass_view& view, planning_buffers& buffers,
                                                  const basic_algorithm_candidate<Algorithm>& c,
                                                  data_type type)
{
    buffers.ensure<Algorithm>(view, type);
    // Under the candidate's math type, as the pass will run it (this sets it on the descriptor).
    const workspace_query query = query_workspace(view, c.algorithm, c.math);
    if (query.status != CUDNN_STATUS_SUCCESS) {
        return workspace_refusal(query.status);
    }
    const stream_ref stream = view.h.stream();
    trial_refusal_reason refusal;
    auto workspace = trial_workspace(std::max(query.bytes, c.workspace_bytes), stream, refusal);
    if (!workspace) {
        return refusal;
    }
    const float zero = 0.0F;
    const cudnnStatus_t status = pass_api<Algorithm>::run(
        view, native_of(c.algorithm), buffers.first_input(), buffers.second_input(),
        buffers.result(), workspace->data(), workspace->size(), &zero);
    return trial_verdict(status, stream,
                         std::string(plain_call(pass_of_algorithm<Algorithm>)) + " (trial of " +
                             std::string(to_string(c.algorithm)) + ")");
}

template <class Algorithm>
basic_convolution_explanation<Algorithm> start_explanation(const convolution_problem& problem,
                                                           const convolution_options& options)
{
    basic_convolution_explanation<Algorithm> result;
    result.problem = problem.to_string();
    result.search = options.search;
    result.deterministic_only = options.deterministic_only();
    result.allow_tf32 = problem.type == data_type::fp32 && options.allow_tf32;
    result.workspace_budget_bytes = options.workspace_budget_bytes;
    result.epilogue = problem.epilogue;
    return result;
}

template <class Algorithm>
void take_choice(basic_convolution_explanation<Algorithm>& explanation, std::size_t chosen)
{
    const basic_algorithm_candidate<Algorithm>& winner = explanation.candidates.at(chosen);
    explanation.algorithm = winner.algorithm;
    explanation.math = winner.math;
    explanation.workspace_bytes = winner.workspace_bytes;
    explanation.time_ms = winner.time_ms;
    explanation.deterministic = winner.deterministic;
}

template <class Algorithm>
basic_convolution_explanation<Algorithm>
search_without_epilogue(const pass_view& view, planning_buffers& buffers,
                        const convolution_problem& problem, const convolution_options& options)
{
    basic_convolution_explanation<Algorithm> result =
        start_explanation<Algorithm>(problem, options);
    result.candidates =
        find_candidates<Algorithm>(view, buffers, options, problem.type, result.problem);
    // cuDNN's heuristic ranks without running, and may refuse at run time what it ranked: the
    // choice is tried once here (as PyTorch's try_all runs each algorithm in turn), and a refusal
    // moves on to the next candidate. The exhaustive search has run every candidate.
    basic_candidate_trial<Algorithm> trial;
    if (options.search != algorithm_search::exhaustive) {
        trial = [&](const basic_algorithm_candidate<Algorithm>& c) {
            return try_candidate(view, buffers, c, problem.type);
        };
    }
    const std::optional<std::size_t> chosen =
        select_tried(result.candidates, rules_for(problem, options), trial);
    if (!chosen) {
        throw no_algorithm_error(result);
    }
    take_choice(result, *chosen);
    return result;
}

template <class Algorithm>
device_buffer<std::byte> plan_workspace(const pass_view& view,
                                        basic_convolution_explanation<Algorithm>& explanation)
{
    // Run with the math type the chosen algorithm was measured or ranked with, and with at
    // least the workspace cuDNN asks for under that math type.
    view.convolution.set_math(explanation.math);
    std::size_t bytes = 0;
    GPU_CUDNN_CHECK(pass_api<Algorithm>::workspace(view, native_of(explanation.algorithm), &bytes));
    device_buffer<std::byte> workspace(std::max(bytes, explanation.workspace_bytes),
                                       view.h.stream(), cudnn_plan_workspace_tag());
    explanation.workspace_bytes = workspace.size();
    return workspace;
}

template <class Algorithm>
basic_convolution_explanation<Algorithm>
plan_without_epilogue(const pass_view& view, planning_buffers& buffers,
                      const convolution_problem& problem, const convolution_options& options)
{
    return cached_or_searched<Algorithm>(problem, options, view.h.device().id(), [&] {
        return search_without_epilogue<Algorithm>(view, buffers, problem, options);
    });
}

template <class Algorithm>
cudnnStatus_t run_without_epilogue(const pass_view& view, Algorithm algorithm,
                                   const void* first_input, const void* second_input, void* result,
                                   device_buffer<std::byte>& workspace, gradient_update update)
{
    // cuDNN's scaling factors are float for every data type but double.
    const float beta = update == gradient_update::accumulate ? 1.0F : 0.0F;
    return pass_api<Algorithm>::run(view, native_of(algorithm), first_input, second_input, result,
                                    workspace.data(), workspace.size(), &beta);
}

void check_run(const char* what, bool planned, const handle& h, const void* first_input,
               const void* second_input, const void* result, const char* const (&names)[3])
{
    require_ready(planned, h, what);
    GPU_EXPECTS(first_input != nullptr && second_input != nullptr && result != nullptr,
                std::invalid_argument, what, ": null ",
                first_input == nullptr    ? names[0]
                : second_input == nullptr ? names[1]
                                          : names[2],
                " pointer");
}

void follow_stream(device_buffer<std::byte>& workspace, stream_ref stream)
{
    if (!workspace.empty() && workspace.stream() != stream) {
        // A plan's workspace: the new one keeps the tag.
        workspace = device_buffer<std::byte>(workspace.size(), stream, cudnn_plan_workspace_tag());
    }
}

void throw_pass_error(cudnnStatus_t status, const char* api, const std::string& context,
                      std::source_location where)
{
    gpu::detail::throw_error(status, api, where, context);
}

template <class Algorithm>
std::string pass_context(const basic_convolution_explanation<Algorithm>& explanation)
{
    return explanation.problem + ", algorithm " + std::string(to_string(explanation.algorithm)) +
           ", math " + std::string(to_string(explanation.math));
}

void check_element_type(const std::string& where, element_info element, data_type type)
{
    const bool fp32 = type == data_type::fp32;
    GPU_EXPECTS(element.is_float == fp32 && element.size == element_size(type),
                std::invalid_argument, where, "the buffers hold ", element.size, "-byte ",
                element.is_float ? "float" : "non-float", " elements but the problem is ",
                to_string(type), " (", fp32 ? "float" : "a 2-byte type such as __half", ")");
}

void check_element_count(const std::string& where, const char* name, std::size_t have,
                         std::size_t need, const convolution_problem& problem)
{
    GPU_EXPECTS(have == need, std::invalid_argument, where, name, " has ", have,
                " elements but the problem needs ", need, " (", problem.to_string(), ")");
}

std::string range_name(const convolution_problem& problem, convolution_pass pass,
                       std::string_view algorithm)
{
    std::string name = pass == convolution_pass::forward         ? "conv fwd ["
                       : pass == convolution_pass::backward_data ? "conv bwd data ["
                                                                 : "conv bwd filter [";
    for (std::size_t i = 0; i < problem.input.size(); ++i) {
        // Appended piece by piece: GCC 12 misreads `"," + std::to_string(n)` as an overlap.
        if (i != 0) {
            name += ',';
        }
        name += std::to_string(problem.input[i]);
    }
    name += "] ";
    name += algorithm;
    if (problem.epilogue != convolution_epilogue::none) {
        name += ' ';
        name += to_string(problem.epilogue);
    }
    return name;
}

// The three passes' instantiations.
template void planning_buffers::ensure<convolution_algorithm>(const pass_view&, data_type);
template workspace_query query_workspace(const pass_view&, convolution_algorithm, math_type);
template std::vector<algorithm_candidate>
find_candidates<convolution_algorithm>(const pass_view&, planning_buffers&,
                                       const convolution_options&, data_type, const std::string&);
template std::optional<trial_refusal_reason> try_candidate(const pass_view&, planning_buffers&,
                                                           const algorithm_candidate&, data_type);
template convolution_explanation
start_explanation<convolution_algorithm>(const convolution_problem&, const convolution_options&);
template void take_choice(convolution_explanation&, std::size_t);
template device_buffer<std::byte> plan_workspace(const pass_view&, convolution_explanation&);
template cudnnStatus_t run_without_epilogue(const pass_view&, convolution_algorithm, const void*,
                                            const void*, void*, device_buffer<std::byte>&,
                                            gradient_update);
template std::string pass_context(const convolution_explanation&);

template backward_data_explanation plan_without_epilogue<backward_data_algorithm>(
    const pass_view&, planning_buffers&, const convolution_problem&, const convolution_options&);
template device_buffer<std::byte> plan_workspace(const pass_view&, backward_data_explanation&);
template cudnnStatus_t run_without_epilogue(const pass_view&, backward_data_algorithm, const void*,
                                            const void*, void*, device_buffer<std::byte>&,
                                            gradient_update);
template std::string pass_context(const backward_data_explanation&);

template backward_filter_explanation plan_without_epilogue<backward_filter_algorithm>(
    const pass_view&, planning_buffers&, const convolution_problem&, const convolution_options&);
template device_buffer<std::byte> plan_workspace(const pass_view&, backward_filter_explanation&);
template cudnnStatus_t run_without_epilogue(const pass_view&, backward_filter_algorithm,
                                            const void*, const void*, void*,
                                            device_buffer<std::byte>&, gradient_update);
template std::string pass_context(const backward_filter_explanation&);

} // namespace gpu::dnn::detail
