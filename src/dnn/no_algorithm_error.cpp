// no_algorithm_error, the error of a search that found nothing to run: its message, whether
// memory ran out, and the explanation it carries.
#include "convolution_selection.hpp"
#include "translate.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/error.hpp>

#include <algorithm>
#include <memory>
#include <string>

namespace gpu::dnn {

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

} // namespace gpu::dnn
