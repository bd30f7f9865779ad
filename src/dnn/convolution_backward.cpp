// The backward passes of a convolution: backward data and backward filter, planned like the
// forward (the search, the trials, the cache and the workspace are every pass's, in
// convolution_pass.cpp), and the bias gradient, which has no algorithm to choose.
#include "convolution_pass.hpp"
#include "ops.hpp"
#include "translate.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/dnn/convolution_backward.hpp>
#include <gpu/nvtx.hpp>

#include <array>
#include <stdexcept>
#include <string>

namespace gpu::dnn {

namespace {

// What differs between the two backward passes besides cuDNN's calls: the names in messages,
// and which of the problem's tensors the pass reads (first_input, second_input) and writes
// (result).
template <class Algorithm>
struct backward_pass;

template <>
struct backward_pass<backward_data_algorithm> {
    static constexpr const char* plan = "gpu::dnn::convolution_backward_data";
    static constexpr const char* run = "gpu::dnn::convolution_backward_data::backward_data";
    static constexpr const char* names[3] = {"w", "dy", "dx"};
    static constexpr const char* described[3] = {"w (the filter)", "dy (the output gradient)",
                                                 "dx (the input gradient)"};
    // first_input, second_input and result, as element counts.
    static std::array<std::size_t, 3> counts(const detail::convolution_counts& c)
    {
        return {c.filter, c.output, c.input};
    }
};

template <>
struct backward_pass<backward_filter_algorithm> {
    static constexpr const char* plan = "gpu::dnn::convolution_backward_filter";
    static constexpr const char* run = "gpu::dnn::convolution_backward_filter::backward_filter";
    static constexpr const char* names[3] = {"x", "dy", "dw"};
    static constexpr const char* described[3] = {"x (the input)", "dy (the output gradient)",
                                                 "dw (the filter gradient)"};
    static std::array<std::size_t, 3> counts(const detail::convolution_counts& c)
    {
        return {c.input, c.output, c.filter};
    }
};

// The counts of `problem`, checked for a backward pass (named `plan`): valid, and without an
// epilogue, whose gradient is not the convolution's.
detail::convolution_counts backward_counts(const convolution_problem& problem, const char* plan)
{
    problem.validate();
    GPU_EXPECTS(problem.epilogue == convolution_epilogue::none, std::invalid_argument, plan,
                ": the problem's epilogue is ", to_string(problem.epilogue),
                ", but the backward passes take the convolution alone (epilogue none): apply the "
                "ReLU's gradient to dy first, and take the bias gradient with "
                "convolution_backward_bias");
    return {problem.input_elements(), problem.filter_elements(), problem.output_elements()};
}

template <class Algorithm>
void check_buffers(const std::string& where, const detail::convolution_counts& counts,
                   const convolution_problem& problem, detail::element_info element,
                   const std::array<std::size_t, 3>& sizes)
{
    using pass = backward_pass<Algorithm>;
    detail::check_element_type(where, element, problem.type);
    const std::array<std::size_t, 3> need = pass::counts(counts);
    for (std::size_t i = 0; i < 3; ++i) {
        detail::check_element_count(where, pass::described[i], sizes[i], need[i], problem);
    }
}

} // namespace

namespace detail {

template <class Algorithm>
backward_plan<Algorithm>::backward_plan(handle& h, const convolution_problem& problem,
                                        const convolution_options& options, const void* first_input,
                                        const void* second_input, void* result)
    : problem(problem), counts(backward_counts(problem, backward_pass<Algorithm>::plan)),
      options(options)
{
    // The problem was checked above (counts), before anything is allocated, even with an empty
    // handle; the handle next, then the descriptors and the search.
    require_handle(h, backward_pass<Algorithm>::plan);
    pass_descriptors descriptors = make_pass_descriptors(problem, options);
    input = std::move(descriptors.input);
    filter = std::move(descriptors.filter);
    output = std::move(descriptors.output);
    convolution = std::move(descriptors.convolution);
    const pass_view view{h, input, filter, output, convolution};
    planning_buffers buffers(first_input, second_input, result);
    explanation = plan_without_epilogue<Algorithm>(view, buffers, problem, options);
    workspace = plan_workspace(view, explanation);
}

template <class Algorithm>
void backward_plan<Algorithm>::check_planning_buffers(const convolution_problem& problem,
                                                      element_info element, std::size_t first_input,
                                                      std::size_t second_input, std::size_t result)
{
    const char* plan = backward_pass<Algorithm>::plan;
    dnn::check_buffers<Algorithm>(std::string(plan) + ": ", backward_counts(problem, plan), problem,
                                  element, {first_input, second_input, result});
}

template <class Algorithm>
void backward_plan<Algorithm>::check_running_buffers(element_info element, std::size_t first_input,
                                                     std::size_t second_input,
                                                     std::size_t result) const
{
    const char* run = backward_pass<Algorithm>::run;
    require_planned(static_cast<bool>(input), run);
    dnn::check_buffers<Algorithm>(std::string(run) + ": ", counts, problem, element,
                                  {first_input, second_input, result});
}

template <class Algorithm>
void backward_plan<Algorithm>::run(handle& h, const void* first_input, const void* second_input,
                                   void* result, gradient_update update)
{
    using pass = backward_pass<Algorithm>;
    check_run(pass::run, static_cast<bool>(input), h, first_input, second_input, result,
              pass::names);
    require_named(pass::run, "gradient_update", update);
    const stream_ref stream = h.stream();
    // The checks synchronise after the call: refused before it is queued, not breaking a capture.
    const gpu::detail::checked_call checked(call_checks_of(options), stream, pass::run);
    // cuDNN runs a handle's work on the device current at the call: the handle's, here.
    const scoped_device on(h.device());
    const nvtx::range range(
        [&] {
            return range_name(problem, pass_of_algorithm<Algorithm>,
                              dnn::to_string(explanation.algorithm));
        },
        nvtx::colours::compute);
    follow_stream(workspace, stream);
    const pass_view view{h, input, filter, output, convolution};
    check_pass_status(run_without_epilogue(view, explanation.algorithm, first_input, second_input,
                                           result, workspace, update),
                      plain_call(pass_of_algorithm<Algorithm>), explanation);
    checked.finish(result, to_element_type(problem.type),
                   gpu::detail::contiguous_elements(pass::counts(counts)[2]),
                   [&] { return explanation.problem; });
}

template class backward_plan<backward_data_algorithm>;
template class backward_plan<backward_filter_algorithm>;

void run_backward_bias(handle& h, const convolution_problem& problem, const void* dy, void* db,
                       gradient_update update, const convolution_options& options,
                       std::optional<bias_buffer_sizes> sizes)
{
    const char* what = "gpu::dnn::convolution_backward_bias";
    const convolution_counts counts = backward_counts(problem, what);
    require_handle(h, what);
    require_named(what, "gradient_update", update);
    const std::size_t channels = static_cast<std::size_t>(problem.filter[0]);
    if (sizes) {
        const std::string where = std::string(what) + ": ";
        check_element_type(where, sizes->element, problem.type);
        check_element_count(where, "dy (the output gradient)", sizes->dy, counts.output, problem);
        check_element_count(where, "db (the bias gradient, one per output channel)", sizes->db,
                            channels, problem);
    }
    GPU_EXPECTS(dy != nullptr && db != nullptr, std::invalid_argument, what, ": null ",
                dy == nullptr ? "dy" : "db", " pointer");
    const gpu::detail::checked_call checked(call_checks_of(options), h.stream(), what);
    // Descriptors per call: creating one is a host-side allocation (no GPU work, no
    // synchronisation), so the call stays capturable; the bias gradient is 1 x K x 1 x 1 in the
    // problem's layout, as the forward's bias.
    const tensor_descriptor dy_desc(problem.output(), problem.type, problem.layout);
    const tensor_descriptor db_desc(bias_dims(problem), problem.type, problem.layout);
    // cuDNN's scaling factors are float for every data type but double.
    const float one = 1.0F;
    const float beta = update == gradient_update::accumulate ? 1.0F : 0.0F;
    const cudnnStatus_t status =
        cudnnConvolutionBackwardBias(h.get(), &one, dy_desc.get(), dy, &beta, db_desc.get(), db);
    if (status != CUDNN_STATUS_SUCCESS) {
        throw_pass_error(status, "cudnnConvolutionBackwardBias", problem.to_string(),
                         std::source_location::current());
    }
    checked.finish(db, to_element_type(problem.type), gpu::detail::contiguous_elements(channels),
                   [&] { return problem.to_string(); });
}

} // namespace detail

} // namespace gpu::dnn
