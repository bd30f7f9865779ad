// Private to the cuDNN wrapper: planning and running one pass of a convolution on cuDNN, written
// once for the three passes (forward, backward data, backward filter). Each pass reads two
// tensors and writes one:
//
//   pass             first_input   second_input   result   cuDNN call
//   forward          x             w              y        cudnnConvolutionForward
//   backward data    w             dy             dx       cudnnConvolutionBackwardData
//   backward filter  x             dy             dw       cudnnConvolutionBackwardFilter
//
// and every pass uses the same four descriptors: the input (x, dx), the filter (w, dw), the
// output (y, dy) and the convolution. The search follows what PyTorch's Conv_v7.cpp learned the
// hard way, for every pass: set the math type before asking cuDNN (or it leaves tensor-core
// algorithms out), run with the math type the chosen result reports (or cuDNN silently picks a
// slower kernel), and size the exhaustive search's workspace from the algorithms that fit the
// budget instead of letting cuDNN allocate.
#pragma once

#include "convolution_selection.hpp"

#include <gpu/call_checks.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>

#include <cudnn.h>

#include <cstddef>
#include <optional>
#include <source_location>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::dnn::detail {

// The math type a plan asks cuDNN for before the search: tensor ops for FP16/BF16, TF32 (the
// default math) for FP32 only when allowed, FMA otherwise.
[[nodiscard]] math_type requested_math(data_type type, bool allow_tf32) noexcept;

// The descriptors of a problem, built on the host (no handle, no GPU): the input, the filter
// and the output in the problem's type and layout, and the convolution (FP32 compute) with the
// requested math type.
struct pass_descriptors {
    tensor_descriptor input;
    filter_descriptor filter;
    tensor_descriptor output;
    convolution_descriptor convolution;
};

// Throws std::invalid_argument as `convolution_problem::validate`.
[[nodiscard]] pass_descriptors make_pass_descriptors(const convolution_problem& problem,
                                                     const convolution_options& options);

// The dimensions of a bias and of its gradient: 1 x K x 1 x ... (the output's rank).
[[nodiscard]] std::vector<int> bias_dims(const convolution_problem& problem);

// What a search, a trial or a run of a pass works on: the handle and a plan's descriptors.
struct pass_view {
    const handle& h;
    const tensor_descriptor& input;
    const filter_descriptor& filter;
    const tensor_descriptor& output;
    convolution_descriptor& convolution;
};

// The three tensors a pass's search and trials run on: the caller's (when the plan was given
// buffers), or scratch that planning allocates on the handle's stream on first need and frees
// when planning ends: the two read filled with seeded non-zero values (the exhaustive search
// times on them, and zeros run faster), the one written zeroed.
class planning_buffers {
public:
    planning_buffers(const void* first_input, const void* second_input, void* result) noexcept
        : first_input_(first_input), second_input_(second_input), result_(result)
    {}

    // Allocates and fills the scratch of pass `Algorithm` unless the caller gave buffers.
    template <class Algorithm>
    void ensure(const pass_view& view, data_type type);

    [[nodiscard]] const void* first_input() const noexcept { return first_input_; }
    [[nodiscard]] const void* second_input() const noexcept { return second_input_; }
    [[nodiscard]] void* result() const noexcept { return result_; }

private:
    const void* first_input_;
    const void* second_input_;
    void* result_;
    device_buffer<std::byte> scratch_first_input_;
    device_buffer<std::byte> scratch_second_input_;
    device_buffer<std::byte> scratch_result_;
};

// What the workspace query of a pass asks for an algorithm under a math type (which it leaves
// set on the convolution descriptor); the status when cuDNN cannot say. A pass is given at
// least this much, so the budget must see it, not only the figure a perf result reports.
struct workspace_query {
    cudnnStatus_t status = CUDNN_STATUS_SUCCESS;
    std::size_t bytes = 0;
};

template <class Algorithm>
[[nodiscard]] workspace_query query_workspace(const pass_view& view, Algorithm algorithm,
                                              math_type math);

// Every algorithm cuDNN offers for the pass, in its order: ranked by its heuristic, or timed on
// the planning buffers under the `exhaustive` search; each with the workspace it will be given.
template <class Algorithm>
[[nodiscard]] std::vector<basic_algorithm_candidate<Algorithm>>
find_candidates(const pass_view& view, planning_buffers& buffers,
                const convolution_options& options, data_type type, const std::string& context);

// After a cuDNN call at planning that failed (or ran work on `stream`): a failure of the CUDA
// context is no refusal of one algorithm. Throws a sticky error, or any error the stream reports
// when synchronised; clears and returns a non-sticky one (a launch cuDNN could not make).
cudaError_t check_cuda_context(stream_ref stream, const std::string& what);

// The verdict on a trial that returned `status`: empty when it ran (and the stream completed
// it), otherwise the refusal: `status` and its words, e.g. `CUDNN_STATUS_NOT_SUPPORTED (3000)`.
// Every status but success
// is a refusal (NOT_SUPPORTED, BAD_PARAM, EXECUTION_FAILED, an internal error...), as PyTorch's
// try_all catches every cuDNN error; a CUDA context that failed is thrown instead.
[[nodiscard]] std::optional<trial_refusal_reason>
trial_verdict(cudnnStatus_t status, stream_ref stream, const std::string& what);

// A trial's refusal when the workspace query of the candidate failed.
[[nodiscard]] trial_refusal_reason workspace_refusal(cudnnStatus_t status);

// A trial's workspace of `bytes` on `stream`; empty, with `refusal` set to why (and to cuDNN's
// status for a failed device allocation), when the device is out of memory: the candidate is
// refused and the next (which may need less) is tried, as the exhaustive search falls back to
// smaller workspaces.
[[nodiscard]] std::optional<device_buffer<std::byte>>
trial_workspace(std::size_t bytes, stream_ref stream, trial_refusal_reason& refusal);

// One trial of the pass's plain call on `candidate`, under its math type and with its
// workspace, on the planning buffers (overwriting the result tensor).
template <class Algorithm>
[[nodiscard]] std::optional<trial_refusal_reason>
try_candidate(const pass_view& view, planning_buffers& buffers,
              const basic_algorithm_candidate<Algorithm>& candidate, data_type type);

// An explanation of `problem` planned with `options`, before the search: the policy's fields.
template <class Algorithm>
[[nodiscard]] basic_convolution_explanation<Algorithm>
start_explanation(const convolution_problem& problem, const convolution_options& options);

// Copies the chosen candidate's algorithm, math, workspace, time and determinism.
template <class Algorithm>
void take_choice(basic_convolution_explanation<Algorithm>& explanation, std::size_t chosen);

// The search of a pass without an epilogue: the candidates, the choice tried with the plain
// call (unless the search is exhaustive), or no_algorithm_error with every verdict.
template <class Algorithm>
[[nodiscard]] basic_convolution_explanation<Algorithm>
search_without_epilogue(const pass_view& view, planning_buffers& buffers,
                        const convolution_problem& problem, const convolution_options& options);

// The workspace a plan runs with: the chosen algorithm's under its math type (set on the
// descriptor), at least what the explanation says, on the handle's stream. The explanation's
// workspace_bytes becomes what was allocated (explain() reports what a pass is given).
template <class Algorithm>
[[nodiscard]] device_buffer<std::byte>
plan_workspace(const pass_view& view, basic_convolution_explanation<Algorithm>& explanation);

// The explanation of a pass without an epilogue: from the cache, or searched on `buffers`.
template <class Algorithm>
[[nodiscard]] basic_convolution_explanation<Algorithm>
plan_without_epilogue(const pass_view& view, planning_buffers& buffers,
                      const convolution_problem& problem, const convolution_options& options);

// Runs the pass's plain call with the workspace given: result = the call's value (overwrite)
// or result += the call's value (accumulate).
template <class Algorithm>
[[nodiscard]] cudnnStatus_t run_without_epilogue(const pass_view& view, Algorithm algorithm,
                                                 const void* first_input, const void* second_input,
                                                 void* result, device_buffer<std::byte>& workspace,
                                                 gradient_update update);

// The checks before a pass runs: a moved-from plan (`planned` false) or an empty handle is
// std::logic_error; a null pointer is std::invalid_argument naming it (`names` e.g. "x", "w", "y").
void check_run(const char* what, bool planned, const handle& h, const void* first_input,
               const void* second_input, const void* result, const char* const (&names)[3]);

// A workspace allocated on another stream moves to `stream` (freed on the old stream after its
// work, allocated on the new one: both stay ordered).
void follow_stream(device_buffer<std::byte>& workspace, stream_ref stream);

// `<problem>, algorithm <name>, math <math>`: what a failed pass call says it was doing.
template <class Algorithm>
[[nodiscard]] std::string pass_context(const basic_convolution_explanation<Algorithm>& explanation);

// Throws the dnn_error of a failed pass call, with `context` in its hint.
[[noreturn]] void throw_pass_error(cudnnStatus_t status, const char* api,
                                   const std::string& context, std::source_location where);

// Throws the dnn_error of a failed pass call of the plan `explanation` explains, naming the
// problem, the algorithm and the math type (composed only on failure: this runs every step).
template <class Algorithm>
void check_pass_status(cudnnStatus_t status, const char* api,
                       const basic_convolution_explanation<Algorithm>& explanation,
                       std::source_location where = std::source_location::current())
{
    if (status != CUDNN_STATUS_SUCCESS) {
        throw_pass_error(status, api, pass_context(explanation), where);
    }
}

// The per-call checks a plan's options ask for, which gpu::detail::checked_call refuses during a
// capture and runs after each pass.
[[nodiscard]] constexpr gpu::detail::call_checks
call_checks_of(const convolution_options& options) noexcept
{
    return {.synchronous_checks = options.synchronous_checks,
            .check_numerics = options.check_numerics};
}

// Throws std::invalid_argument unless `element` is the element type of `type` (float for FP32,
// a 2-byte type for FP16/BF16), naming both; `where` starts the message.
void check_element_type(const std::string& where, element_info element, data_type type);

// Throws std::invalid_argument unless `have` equals `need`, naming the buffer and the problem.
void check_element_count(const std::string& where, const char* name, std::size_t have,
                         std::size_t need, const convolution_problem& problem);

// The NVTX range of a run of `pass` with `algorithm`, built only while ranges are on: the
// input's dimensions, then the algorithm and a forward's epilogue, e.g.
// `conv fwd [32,3,224,224] implicit_precomp_gemm`, `conv bwd data [32,64,56,56] algo_1`.
[[nodiscard]] std::string range_name(const convolution_problem& problem, convolution_pass pass,
                                     std::string_view algorithm);

} // namespace gpu::dnn::detail
