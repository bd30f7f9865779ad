// Algorithm candidates as cuDNN's search would report them, made by hand, for the host tests
// that drive a convolution plan's selection (forward and backward passes) without a GPU. Test
// code only.
#pragma once

#include <gpu/dnn/convolution_planning.hpp>
#include <gpu/dnn/error.hpp>

#include "convolution_selection.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <utility>

namespace gpu::test {

/// A candidate of any pass: @p algorithm with @p workspace bytes, a time when it was timed, and
/// cuDNN's determinism, math type and status.
template <class Algorithm>
dnn::basic_algorithm_candidate<Algorithm>
candidate(Algorithm algorithm, std::size_t workspace, std::optional<double> time_ms = std::nullopt,
          bool deterministic = true, dnn::math_type math = dnn::math_type::fma,
          cudnnStatus_t status = CUDNN_STATUS_SUCCESS)
{
    dnn::basic_algorithm_candidate<Algorithm> c;
    c.algorithm = algorithm;
    c.status_code = status;
    c.status = dnn::status_name(status);
    c.workspace_bytes = workspace;
    c.time_ms = time_ms;
    c.deterministic = deterministic;
    c.math = math;
    return c;
}

/// A trial's refusal of a candidate with @p status, in the words the real trial uses
/// (`trial_verdict`): its name and number, e.g. `CUDNN_STATUS_NOT_SUPPORTED (3000)`.
inline dnn::detail::trial_refusal_reason refusal_of(cudnnStatus_t status)
{
    return {status,
            dnn::status_name(status) + " (" + std::to_string(static_cast<int>(status)) + ")"};
}

} // namespace gpu::test
