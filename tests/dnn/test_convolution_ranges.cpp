// The names of the NVTX ranges of the convolution passes (src/dnn/convolution_pass.hpp): what a
// Nsight Systems timeline shows for each run of a plan. The runs themselves, with the ranges
// read back from NVTX, are in tests/nn/test_nvtx_ranges.cpp (conv2d's three passes, [gpu]).
#include "convolution_pass.hpp" // the dnn wrapper's private pass helpers

#include <gpu/dnn/convolution_planning.hpp>

#include "catch.hpp"

namespace dnn = gpu::dnn;

TEST_CASE("a convolution pass's range names the pass, the input, the algorithm and the epilogue",
          "[dnn]")
{
    dnn::convolution_problem problem;
    problem.input = {32, 3, 224, 224};
    problem.filter = {64, 3, 7, 7};
    CHECK(dnn::detail::range_name(
              problem, dnn::convolution_pass::forward,
              dnn::to_string(dnn::convolution_algorithm::implicit_precomp_gemm)) ==
          "conv fwd [32,3,224,224] implicit_precomp_gemm");
    CHECK(dnn::detail::range_name(problem, dnn::convolution_pass::backward_data,
                                  dnn::to_string(dnn::backward_data_algorithm::algo_1)) ==
          "conv bwd data [32,3,224,224] algo_1");
    CHECK(dnn::detail::range_name(problem, dnn::convolution_pass::backward_filter,
                                  dnn::to_string(dnn::backward_filter_algorithm::algo_3)) ==
          "conv bwd filter [32,3,224,224] algo_3");
    problem.epilogue = dnn::convolution_epilogue::bias_relu;
    CHECK(dnn::detail::range_name(problem, dnn::convolution_pass::forward,
                                  dnn::to_string(dnn::convolution_algorithm::winograd)) ==
          "conv fwd [32,3,224,224] winograd bias_relu");
    // A 3-d convolution: every dimension of the input.
    problem.input = {2, 4, 8, 16, 16};
    problem.epilogue = dnn::convolution_epilogue::none;
    CHECK(dnn::detail::range_name(problem, dnn::convolution_pass::forward, "implicit_gemm") ==
          "conv fwd [2,4,8,16,16] implicit_gemm");
}
