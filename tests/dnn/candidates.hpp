// Algorithm candidates as cuDNN's search would report them, made by hand, for the host tests
// that drive a convolution plan's selection (forward and backward passes) without a GPU. Test
// code only.
#pragma once

#include <gpu/dnn/convolution_planning.hpp>

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
          std::string status = "CUDNN_STATUS_SUCCESS")
{
    dnn::basic_algorithm_candidate<Algorithm> c;
    c.algorithm = algorithm;
    c.status = std::move(status);
    c.workspace_bytes = workspace;
    c.time_ms = time_ms;
    c.deterministic = deterministic;
    c.math = math;
    return c;
}

} // namespace gpu::test
