// The explanation of a plan as text: its policy, its epilogue, and a line for every candidate
// with its verdict.
#include "convolution_selection.hpp"
#include "translate.hpp"

#include <gpu/error.hpp>

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace gpu::dnn {

namespace {

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
            ", " +
            (time_ms ? detail::milliseconds(*time_ms) + " measured" : std::string("not timed")) +
            ", " + (deterministic ? "deterministic" : "not deterministic") +
            (from_cache ? " (from the plan cache: no search ran)" : "") + "\n";
    text += epilogue_line(epilogue, execution, unfused_reason);
    text += "candidates, in cuDNN's order:\n";
    for (const basic_algorithm_candidate<Algorithm>& c : candidates) {
        text += "  " + pad_right(std::string(dnn::to_string(c.algorithm)), 22) + " " +
                pad_right(std::string(dnn::to_string(c.math)), 10) + " " +
                pad_right(format_bytes(c.workspace_bytes), 11) + " " +
                pad_right(c.time_ms ? detail::milliseconds(*c.time_ms) : std::string("-"), 12) +
                " " + (c.chosen ? "CHOSEN" : (c.rejected ? "rejected: " : "") + c.reason) + "\n";
    }
    return text;
}

template struct basic_convolution_explanation<convolution_algorithm>;
template struct basic_convolution_explanation<backward_data_algorithm>;
template struct basic_convolution_explanation<backward_filter_algorithm>;

namespace detail {

std::string milliseconds(double ms)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.3f ms", ms);
    return text;
}

} // namespace detail

} // namespace gpu::dnn
