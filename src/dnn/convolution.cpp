// Forward convolution plans: the buffer checks, planning with the inference epilogues (the fused
// call tried at planning, unfused when it refuses every algorithm), and the forward itself. The
// search, the trials, the cache and the workspace are every pass's (convolution_pass.cpp).
#include "memory_tags.hpp"
#include "convolution_pass.hpp"
#include "ops.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/dnn/convolution.hpp>
#include <gpu/error.hpp>
#include <gpu/nvtx.hpp>

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace gpu::dnn {

namespace {

// What the fused call's trial needs beside the pass: the epilogue's descriptors and the bias it
// adds (zeros, allocated on the first fused trial).
struct fused_operands {
    const tensor_descriptor& bias;
    const activation_descriptor& activation;
    device_buffer<std::byte> bias_values{};
};

// One trial of `cudnnConvolutionBiasActivationForward` with `c`, on the planning buffers.
std::optional<detail::trial_refusal_reason> try_fused(const detail::pass_view& view,
                                                      detail::planning_buffers& buffers,
                                                      fused_operands& fused,
                                                      const algorithm_candidate& c, data_type type)
{
    buffers.ensure<convolution_algorithm>(view, type);
    // Under the candidate's math type, as the forward will run it (this sets it on the descriptor).
    const detail::workspace_query query = detail::query_workspace(view, c.algorithm, c.math);
    if (query.status != CUDNN_STATUS_SUCCESS) {
        return detail::workspace_refusal(query.status);
    }
    const stream_ref stream = view.h.stream();
    detail::trial_refusal_reason refusal;
    auto workspace =
        detail::trial_workspace(std::max(query.bytes, c.workspace_bytes), stream, refusal);
    if (!workspace) {
        return refusal;
    }
    if (fused.bias_values.empty()) {
        fused.bias_values = device_buffer<std::byte>(fused.bias.size_bytes(), stream,
                                                     detail::cudnn_planning_scratch_tag());
        fused.bias_values.fill_zero_async(stream);
    }
    // z is the output with alpha2 = 0, as in run(), where cuDNN is expected not to read it
    // (TensorFlow, XLA and PyTorch pass an unset output as z). Planning zeroes it anyway: a
    // trial costs one memset, and a planning trial on a caller's NaN-poisoned y must not be what
    // decides whether that expectation holds (the [gpu] test of run() on a poisoned y does).
    GPU_CUDA_CHECK(cudaMemsetAsync(buffers.result(), 0, view.output.size_bytes(), stream.get()));
    const float one = 1.0F;
    const float zero = 0.0F;
    const cudnnStatus_t status = cudnnConvolutionBiasActivationForward(
        view.h.get(), &one, view.input.get(), buffers.first_input(), view.filter.get(),
        buffers.second_input(), view.convolution.get(),
        static_cast<cudnnConvolutionFwdAlgo_t>(c.algorithm), workspace->data(), workspace->size(),
        &zero, view.output.get(), buffers.result(), fused.bias.get(), fused.bias_values.data(),
        fused.activation.get(), view.output.get(), buffers.result());
    return detail::trial_verdict(status, stream,
                                 "cudnnConvolutionBiasActivationForward (trial of " +
                                     std::string(to_string(c.algorithm)) + ")");
}

// The forward's search: the plain search, except that with an epilogue the fused call is tried
// first and the plain call only when the epilogue must run unfused.
convolution_explanation search_forward(const detail::pass_view& view,
                                       detail::planning_buffers& buffers, fused_operands& fused,
                                       const convolution_problem& problem,
                                       const convolution_options& options)
{
    convolution_explanation result =
        detail::start_explanation<convolution_algorithm>(problem, options);
    result.candidates = detail::find_candidates<convolution_algorithm>(
        view, buffers, options, problem.type, result.problem);
    // cuDNN's heuristic ranks without running, and may refuse at run time what it ranked; the
    // fused epilogue may refuse what cuDNN ranked or timed for the plain convolution. So the
    // choice is tried once here (as PyTorch's try_all runs each algorithm in turn), and a refusal
    // moves on to the next candidate. The exhaustive search has run every plain candidate.
    const detail::fused_trial try_fused_call = [&](const algorithm_candidate& c) {
        return try_fused(view, buffers, fused, c, problem.type);
    };
    detail::candidate_trial try_plain;
    if (options.search != algorithm_search::exhaustive) {
        try_plain = [&](const algorithm_candidate& c) {
            return detail::try_candidate(view, buffers, c, problem.type);
        };
    }
    const detail::epilogue_selection selection = detail::select_with_epilogue(
        result.candidates, detail::rules_for(problem, options), try_fused_call, try_plain);
    result.execution = selection.execution;
    result.unfused_reason = selection.unfused_reason;
    if (!selection.chosen) {
        throw no_algorithm_error(result);
    }
    detail::take_choice(result, *selection.chosen);
    return result;
}

} // namespace

convolution::element_counts convolution::counts_of(const convolution_problem& problem)
{
    problem.validate();
    return {problem.input_elements(), problem.filter_elements(), problem.output_elements(),
            problem.epilogue == convolution_epilogue::none
                ? 0
                : static_cast<std::size_t>(problem.filter[0])};
}

void convolution::check_buffers(const element_counts& expected, const convolution_problem& problem,
                                detail::element_info element, std::size_t x, std::size_t w,
                                std::optional<std::size_t> bias, std::size_t y, bool running)
{
    const std::string where =
        running ? "gpu::dnn::convolution::forward: " : "gpu::dnn::convolution: ";
    detail::check_element_type(where, element, problem.type);
    detail::check_element_count(where, "x (the input)", x, expected.input, problem);
    detail::check_element_count(where, "w (the filter)", w, expected.filter, problem);
    detail::check_element_count(where, "y (the output)", y, expected.output, problem);
    if (!running) {
        return;
    }
    GPU_EXPECTS(
        !bias || problem.epilogue != convolution_epilogue::none, std::invalid_argument, where,
        "a bias was given but the plan's epilogue is none; plan with epilogue bias or bias_relu");
    GPU_EXPECTS(bias || problem.epilogue == convolution_epilogue::none, std::invalid_argument,
                where, "the plan's epilogue ", to_string(problem.epilogue), " needs a bias");
    if (bias) {
        detail::check_element_count(where, "the bias", *bias, expected.bias, problem);
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
    detail::require_handle(h, "gpu::dnn::convolution");
    detail::pass_descriptors descriptors = detail::make_pass_descriptors(problem, options);
    input_ = std::move(descriptors.input);
    filter_ = std::move(descriptors.filter);
    output_ = std::move(descriptors.output);
    convolution_ = std::move(descriptors.convolution);
    if (problem.epilogue != convolution_epilogue::none) {
        bias_ = tensor_descriptor(detail::bias_dims(problem), problem.type, problem.layout);
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

    const detail::pass_view view{h, input_, filter_, output_, convolution_};
    detail::planning_buffers buffers(x, w, y);
    fused_operands fused{bias_, activation_};
    explanation_ =
        detail::cached_or_searched<convolution_algorithm>(problem, options, h.device().id(), [&] {
            return search_forward(view, buffers, fused, problem, options);
        });
    // explain() and workspace_bytes() report what the forward is given (the raw-call comparison
    // in bench/conv sizes its own workspace from it).
    workspace_ = detail::plan_workspace(view, explanation_);
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
    static constexpr const char* names[3] = {"x", "w", "y"};
    detail::check_run("gpu::dnn::convolution::forward", static_cast<bool>(input_), h, x, w, y,
                      names);
    const stream_ref stream = h.stream();
    // The checks synchronise after the call: refused before it is queued, not breaking a capture.
    const gpu::detail::checked_call checked(detail::call_checks_of(options_), stream,
                                            "gpu::dnn::convolution::forward");
    // cuDNN runs a handle's work on the device current at the call: the handle's, here.
    const scoped_device on(h.device());
    const nvtx::range range(
        [&] {
            return detail::range_name(problem_, convolution_pass::forward,
                                      dnn::to_string(explanation_.algorithm));
        },
        nvtx::colours::compute);
    detail::follow_stream(workspace_, stream);
    const detail::pass_view view{h, input_, filter_, output_, convolution_};
    const bool has_epilogue = problem_.epilogue != convolution_epilogue::none;
    const bool unfused = has_epilogue && explanation_.execution == epilogue_execution::unfused;
    const float one = 1.0F;
    const float zero = 0.0F;
    if (has_epilogue && !unfused) {
        // z is y with alpha2 = 0: cuDNN does not read it then (TensorFlow and XLA rely on this).
        detail::check_pass_status(cudnnConvolutionBiasActivationForward(
                                      h.get(), &one, input_.get(), x, filter_.get(), w,
                                      convolution_.get(), native_algorithm(), workspace_.data(),
                                      workspace_.size(), &zero, output_.get(), y, bias_.get(), bias,
                                      activation_.get(), output_.get(), y),
                                  "cudnnConvolutionBiasActivationForward", explanation_);
    } else {
        detail::check_pass_status(detail::run_without_epilogue(view, explanation_.algorithm, x, w,
                                                               y, workspace_,
                                                               gradient_update::overwrite),
                                  "cudnnConvolutionForward", explanation_);
    }
    if (unfused) {
        // The fused call refused every algorithm (explain() says why). y += bias: bias_ is
        // 1 x K x 1 x 1 in the plan's layout, and cudnnAddTensor broadcasts each dimension of 1.
        detail::check_pass_status(
            cudnnAddTensor(h.get(), &one, bias_.get(), bias, &one, output_.get(), y),
            "cudnnAddTensor", explanation_);
        if (problem_.epilogue == convolution_epilogue::bias_relu) {
            // In place: cuDNN allows it when x and y share one descriptor. The descriptor is the
            // fused call's: ReLU with its upper bound at the largest double, i.e. none. (Identity
            // has no cudnnActivationForward; a bias-only epilogue is complete here.)
            detail::check_pass_status(cudnnActivationForward(h.get(), activation_.get(), &one,
                                                             output_.get(), y, &zero, output_.get(),
                                                             y),
                                      "cudnnActivationForward", explanation_);
        }
    }
    checked.finish(y, to_element_type(problem_.type),
                   gpu::detail::contiguous_elements(counts_.output),
                   [&] { return explanation_.problem; });
}

} // namespace gpu::dnn
