// bench/conv/policy_plan.hpp: a policy that cannot plan a case loses its own row, with a note
// that says why, in the printed report and the JSON, and the run's exit status stands; a
// sticky CUDA error or a bug of the benchmark still fails the case.
#include "policy_plan.hpp"

#include <gpu/dnn/convolution.hpp>
#include <gpu/error.hpp>

#include "catch.hpp"

#include <cuda_runtime_api.h>

#include <source_location>
#include <sstream>
#include <stdexcept>
#include <string>

using Catch::Matchers::ContainsSubstring;
namespace bench = gpu::bench;

namespace {

bench::report conv_report()
{
    return bench::report("conv", "policy rows made by the tests", {}, bench::environment{});
}

// What planning throws when cuDNN refused, at trial, the only candidate that fits.
gpu::dnn::no_algorithm_error refused_everything()
{
    gpu::dnn::convolution_explanation e;
    e.problem = "fp16 nhwc input [32, 3, 224, 224] filter [64, 3, 3, 3], padding [1, 1]";
    gpu::dnn::algorithm_candidate c;
    c.algorithm = gpu::dnn::convolution_algorithm::implicit_gemm;
    c.status = "CUDNN_STATUS_NOT_SUPPORTED (3000) from cudnnConvolutionForward";
    c.rejected = true;
    c.reason = "refused at trial: " + c.status;
    e.candidates.push_back(c);
    return gpu::dnn::no_algorithm_error(e);
}

const std::string case_name = "N32 C3 224x224 K64 3x3 pad1 stride1 fp16 nhwc";

} // namespace

TEST_CASE("a policy that plans keeps its plan and leaves no note", "[bench]")
{
    bench::report r = conv_report();
    const std::optional<int> plan =
        bench::conv::plan_or_lose_row(r, case_name, "cudagap heuristic", [] { return 42; });
    CHECK(plan == std::optional<int>(42));
    CHECK(r.notes().empty());
    CHECK(r.errors().empty());
}

TEST_CASE("a policy that finds no algorithm loses its own row, not the run's exit status",
          "[bench]")
{
    bench::report r = conv_report();
    const auto lost = bench::conv::plan_or_lose_row(r, case_name, "cudagap heuristic",
                                                    []() -> int { throw refused_everything(); });
    CHECK_FALSE(lost.has_value());
    // The next policy of the same case still plans and gets its row.
    const auto kept =
        bench::conv::plan_or_lose_row(r, case_name, "cudagap exhaustive", [] { return 7; });
    CHECK(kept == std::optional<int>(7));
    bench::measurement m;
    m.case_name = case_name;
    m.variant = "cudagap exhaustive";
    m.median_ms = m.min_ms = m.max_ms = 1.0;
    m.repetitions = 1;
    m.timing = "CUDA events";
    r.add(m);
    r.add_ratio(case_name, "cudagap heuristic", "cudagap exhaustive");

    CHECK(r.errors().empty());
    CHECK(r.exit_code() == 0);
    REQUIRE(r.notes().size() == 1);
    const std::string& note = r.notes().front();
    CHECK_THAT(note, ContainsSubstring(case_name + " / cudagap heuristic: no row: planning failed: "
                                                   "gpu::dnn::convolution: no_algorithm (3000): "
                                                   "no algorithm fits"));
    // Every candidate's reason comes with it.
    CHECK_THAT(note, ContainsSubstring("refused at trial: CUDNN_STATUS_NOT_SUPPORTED (3000) from "
                                       "cudnnConvolutionForward"));
    CHECK(r.ratios().front().note == "not measured: no row for 'cudagap heuristic'");

    // The printed report and the JSON both say it.
    std::ostringstream printed;
    r.print(printed);
    CHECK_THAT(printed.str(), ContainsSubstring("cudagap heuristic: no row: planning failed"));
    const nlohmann::json j = r.to_json();
    CHECK(j.at("exit_code") == 0);
    CHECK(j.at("errors").empty());
    CHECK(j.at("rows").size() == 1);
    CHECK_THAT(j.at("notes").at(0).get<std::string>(),
               ContainsSubstring("cudagap heuristic: no row"));
}

TEST_CASE("a cuDNN or memory failure of the planning loses the row too", "[bench]")
{
    bench::report r = conv_report();
    const auto cudnn =
        bench::conv::plan_or_lose_row(r, case_name, "cudagap exhaustive", []() -> int {
            throw gpu::dnn::dnn_error(
                "cudnnFindConvolutionForwardAlgorithmEx", "CUDNN_STATUS_INTERNAL_ERROR", 4000,
                "an internal cuDNN failure", "", 0, std::source_location::current());
        });
    const auto memory =
        bench::conv::plan_or_lose_row(r, case_name, "cudagap deterministic", []() -> int {
            throw gpu::cuda_error(cudaErrorMemoryAllocation, "cudaMallocAsync", "", 0,
                                  std::source_location::current());
        });
    CHECK_FALSE(cudnn.has_value());
    CHECK_FALSE(memory.has_value());
    REQUIRE(r.notes().size() == 2);
    CHECK_THAT(r.notes()[0], ContainsSubstring("cudagap exhaustive: no row: planning failed: "));
    CHECK_THAT(r.notes()[0], ContainsSubstring("CUDNN_STATUS_INTERNAL_ERROR"));
    CHECK_THAT(r.notes()[1], ContainsSubstring("cudagap deterministic: no row: planning failed: "));
    CHECK(r.exit_code() == 0);
}

TEST_CASE("a sticky CUDA error or a bug of the benchmark still fails the case", "[bench]")
{
    bench::report r = conv_report();
    CHECK_THROWS_AS(bench::conv::plan_or_lose_row(
                        r, case_name, "cudagap heuristic",
                        []() -> int {
                            throw gpu::cuda_error(cudaErrorIllegalAddress, "cudaStreamSynchronize",
                                                  "", 0, std::source_location::current());
                        }),
                    gpu::cuda_error);
    CHECK_THROWS_AS(bench::conv::plan_or_lose_row(
                        r, case_name, "cudagap heuristic",
                        []() -> int { throw std::invalid_argument("a bad problem"); }),
                    std::invalid_argument);
    CHECK(r.notes().empty());
}
