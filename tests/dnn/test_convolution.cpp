// gpu/dnn/convolution.hpp: problems, options, cache keys, algorithm selection and explanations
// on the host; forward convolutions against a float64 CPU reference on a GPU.
#include "candidates.hpp"
#include "convolution_selection.hpp" // the dnn wrapper's private selection machinery
#include "reference_convolution.hpp"
#include "typed_values.hpp"

#include <gpu/capture.hpp>
#include <gpu/device.hpp>
#include <gpu/dnn/convolution.hpp>
#include <gpu/graph.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include <test_support.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::dnn::algorithm_candidate;
using gpu::dnn::algorithm_search;
using gpu::dnn::convolution;
using gpu::dnn::convolution_algorithm;
using gpu::dnn::convolution_epilogue;
using gpu::dnn::convolution_options;
using gpu::dnn::convolution_problem;
using gpu::dnn::data_type;
using gpu::dnn::math_type;
using gpu::dnn::tensor_layout;
using gpu::test::candidate;

namespace {

// The convolution cudagap-demo runs: nn.Conv2d(3, 64, 3, padding=1) on 32x3x224x224.
convolution_problem demo_problem()
{
    return {.input = {32, 3, 224, 224}, .filter = {64, 3, 3, 3}, .geometry = {.padding = {1, 1}}};
}

} // namespace

// ---- host: problems, options, keys, selection ---------------------------------------------

TEST_CASE("the demo's convolution problem: shapes, work and bytes", "[dnn]")
{
    const convolution_problem p = demo_problem();
    CHECK(p.output() == std::vector<int>{32, 64, 224, 224});
    CHECK(p.input_elements() == 32u * 3 * 224 * 224);
    CHECK(p.filter_elements() == 64u * 3 * 3 * 3);
    CHECK(p.output_elements() == 32u * 64 * 224 * 224);
    // The output alone is 411 MB in FP32.
    CHECK(p.output_elements() * 4 == 411041792u);
    CHECK(p.minimum_bytes() ==
          Approx(4.0 * (32 * 3 * 224 * 224 + 64 * 27 + 32.0 * 64 * 224 * 224)));
    CHECK(p.flops() == Approx(2.0 * 32 * 64 * 224 * 224 * 27));
    CHECK(p.to_string() ==
          "fp32 nchw input [32, 3, 224, 224] filter [64, 3, 3, 3], padding [1, 1], "
          "stride [1, 1], dilation [1, 1], groups 1, cross_correlation");
    convolution_problem with_bias = p;
    with_bias.epilogue = convolution_epilogue::bias_relu;
    CHECK_THAT(with_bias.to_string(), ContainsSubstring("epilogue bias_relu"));
    CHECK(with_bias.minimum_bytes() == Approx(p.minimum_bytes() + 4.0 * 64));
}

TEST_CASE("bad problems are refused with their values, before any handle is used", "[dnn]")
{
    convolution_problem p = demo_problem();
    p.filter = {64, 4, 3, 3};
    CHECK_THROWS_WITH(p.validate(), ContainsSubstring("the input has 3 channels"));
    // A plan refuses it even with an empty handle: nothing was allocated or asked of cuDNN.
    gpu::dnn::handle empty = gpu::dnn::handle::from_native_handle(nullptr);
    CHECK_THROWS_WITH(convolution(empty, p), ContainsSubstring("the input has 3 channels"));
    p = demo_problem();
    p.geometry.stride = {0, 1};
    CHECK_THROWS_WITH(convolution(empty, p), ContainsSubstring("stride [0, 1]"));
    p = demo_problem();
    p.input = {32, 3, 2, 2};
    p.geometry.padding = {0, 0};
    CHECK_THROWS_WITH(convolution(empty, p), ContainsSubstring("padded input is only 2"));
    // An output beyond cuDNN's 32-bit indexing.
    p = demo_problem();
    p.input = {1024, 3, 224, 224};
    CHECK_THROWS_WITH(p.validate(),
                      ContainsSubstring("convolution output") && ContainsSubstring("INT_MAX"));
    // A good problem with an empty handle: the handle is named.
    CHECK_THROWS_WITH(convolution(empty, demo_problem()),
                      ContainsSubstring("gpu::dnn::handle is empty"));
}

TEST_CASE("nothing is computed from an invalid problem", "[dnn]")
{
    // Every accessor checks first: no product of negative dimensions, no filter.at(0) of an
    // empty filter (std::out_of_range), only std::invalid_argument with the values.
    const convolution_problem no_filter{.input = {1, 3, 8, 8}};
    CHECK_THROWS_WITH(no_filter.flops(), ContainsSubstring("filter [] 0"));
    CHECK_THROWS_AS(no_filter.minimum_bytes(), std::invalid_argument);
    convolution_problem negative = demo_problem();
    negative.input[0] = -32;
    CHECK_THROWS_WITH(negative.input_elements(),
                      ContainsSubstring("dimension 0 of [-32, 3, 224, 224]"));
    CHECK_THROWS_AS(negative.filter_elements(), std::invalid_argument);
    CHECK_THROWS_AS(negative.output_elements(), std::invalid_argument);
    // Padding so large that the padded input does not fit int, reported before any handle.
    convolution_problem padded = demo_problem();
    padded.geometry.padding = {1 << 30, 1};
    CHECK_THROWS_WITH(padded.output(), ContainsSubstring("padded input is 2147483872"));
    gpu::dnn::handle empty = gpu::dnn::handle::from_native_handle(nullptr);
    CHECK_THROWS_WITH(convolution(empty, padded), ContainsSubstring("more than INT_MAX"));
    // Enumerators cast from integers.
    convolution_problem cast = demo_problem();
    cast.epilogue = static_cast<convolution_epilogue>(3);
    CHECK_THROWS_WITH(cast.validate(), ContainsSubstring("convolution_epilogue value 3"));
    cast = demo_problem();
    cast.type = static_cast<gpu::dnn::data_type>(-1);
    CHECK_THROWS_WITH(cast.output(), ContainsSubstring("data_type value -1"));
}

TEST_CASE("convolution options follow the three profiles", "[dnn]")
{
    const convolution_options dev = convolution_options::from_profile(gpu::profile::development());
    CHECK(dev.search == algorithm_search::heuristic);
    CHECK(dev.synchronous_checks);
    CHECK(dev.check_numerics);
    CHECK_FALSE(dev.allow_tf32);
    const convolution_options prod = convolution_options::from_profile(gpu::profile::production());
    CHECK(prod.search == algorithm_search::exhaustive);
    CHECK(prod.allow_tf32);
    CHECK_FALSE(prod.deterministic_only());
    CHECK_FALSE(prod.check_numerics);
    const convolution_options test = convolution_options::from_profile(gpu::profile::testing());
    CHECK(test.search == algorithm_search::deterministic);
    CHECK(test.deterministic_only());
    CHECK_FALSE(test.allow_tf32);
    CHECK(test.workspace_budget_bytes == gpu::dnn::default_workspace_budget);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CHECK(convolution_options::from(gpu::profile::testing()).search == test.search); // the old name
#pragma GCC diagnostic pop
    convolution_options benchmark_and_deterministic;
    benchmark_and_deterministic.search = algorithm_search::exhaustive;
    benchmark_and_deterministic.deterministic = true;
    CHECK(benchmark_and_deterministic.deterministic_only());
}

TEST_CASE("the profile's benchmark and deterministic switches give the search", "[dnn]")
{
    gpu::profile p;
    CHECK(convolution_options::from_profile(p).search == algorithm_search::heuristic);
    p.benchmark = true;
    CHECK(convolution_options::from_profile(p).search == algorithm_search::exhaustive);
    CHECK_FALSE(convolution_options::from_profile(p).deterministic_only());
    p.deterministic = true; // as PyTorch: the deterministic algorithms are timed
    CHECK(convolution_options::from_profile(p).search == algorithm_search::exhaustive);
    CHECK(convolution_options::from_profile(p).deterministic_only());
    p.benchmark = false;
    CHECK(convolution_options::from_profile(p).search == algorithm_search::deterministic);
}

TEST_CASE("plan cache keys tell apart exactly what changes the choice", "[dnn]")
{
    using gpu::dnn::detail::make_plan_key;
    const convolution_problem p = demo_problem();
    const convolution_options o;
    const auto base = make_plan_key(p, o, 0);
    CHECK(base == make_plan_key(p, o, 0));

    convolution_problem other = p;
    other.input[0] = 16;
    CHECK(make_plan_key(other, o, 0) != base); // shape
    other = p;
    other.type = data_type::fp16;
    CHECK(make_plan_key(other, o, 0) != base); // type
    other = p;
    other.layout = tensor_layout::nhwc;
    CHECK(make_plan_key(other, o, 0) != base); // layout
    other = p;
    other.epilogue = convolution_epilogue::bias;
    CHECK(make_plan_key(other, o, 0) != base); // epilogue
    CHECK(make_plan_key(p, o, 1) != base);     // device

    convolution_options exhaustive = o;
    exhaustive.search = algorithm_search::exhaustive;
    CHECK(make_plan_key(p, exhaustive, 0) != base); // policy
    convolution_options budget = o;
    budget.workspace_budget_bytes = 0;
    CHECK(make_plan_key(p, budget, 0) != base); // budget
    convolution_options tf32 = o;
    tf32.allow_tf32 = true;
    CHECK(make_plan_key(p, tf32, 0) != base); // TF32 changes FP32 plans...
    convolution_problem half = p;
    half.type = data_type::fp16;
    CHECK(make_plan_key(half, tf32, 0) == make_plan_key(half, o, 0)); // ...but not FP16 ones
    convolution_options checks = o;
    checks.synchronous_checks = true;
    checks.check_numerics = true;
    CHECK(make_plan_key(p, checks, 0) == base); // checks do not change the choice
}

TEST_CASE("the heuristic policy takes the first usable candidate and says why not the others",
          "[dnn]")
{
    std::vector<algorithm_candidate> c{
        candidate(convolution_algorithm::winograd, 0, {}, true, math_type::fma,
                  CUDNN_STATUS_NOT_SUPPORTED),
        candidate(convolution_algorithm::fft, std::size_t{3} << 30),
        candidate(convolution_algorithm::gemm, 1024, {}, false),
        candidate(convolution_algorithm::implicit_gemm, 0, {}, true, math_type::tensor_op),
        candidate(convolution_algorithm::implicit_precomp_gemm, 4096),
        candidate(convolution_algorithm::direct, 0),
    };
    gpu::dnn::detail::selection_rules rules;
    rules.deterministic_only = true;
    rules.workspace_budget_bytes = std::size_t{1} << 30;
    const auto chosen = gpu::dnn::detail::select_algorithm(c, rules);
    REQUIRE(chosen.has_value());
    CHECK(*chosen == 4);
    CHECK(c[4].chosen);
    CHECK_FALSE(c[4].rejected);
    CHECK_THAT(c[0].reason, ContainsSubstring("CUDNN_STATUS_NOT_SUPPORTED"));
    CHECK_THAT(c[1].reason,
               ContainsSubstring("needs 3.00 GiB of workspace, over the budget of 1.00 GiB"));
    CHECK_THAT(c[2].reason, ContainsSubstring("not deterministic"));
    CHECK_THAT(c[3].reason, ContainsSubstring("TF32 is off"));
    CHECK_FALSE(c[5].rejected);
    CHECK_THAT(c[5].reason, ContainsSubstring("ranks it lower"));
    for (std::size_t i = 0; i < 4; ++i) {
        CHECK(c[i].rejected);
    }

    // TF32 allowed and non-deterministic algorithms welcome: the tensor-op candidate wins.
    rules.allow_tf32 = true;
    rules.deterministic_only = false;
    CHECK(*gpu::dnn::detail::select_algorithm(c, rules) == 2);
    // FP16 never counts as TF32.
    rules.allow_tf32 = false;
    rules.type = data_type::fp16;
    CHECK(*gpu::dnn::detail::select_algorithm(c, rules) == 2);
}

TEST_CASE("the exhaustive policy takes the fastest usable candidate", "[dnn]")
{
    std::vector<algorithm_candidate> c{
        candidate(convolution_algorithm::fft, std::size_t{8} << 30, 0.5),
        candidate(convolution_algorithm::implicit_gemm, 0, 2.0),
        candidate(convolution_algorithm::implicit_precomp_gemm, 2048, 1.25),
        candidate(convolution_algorithm::winograd, 0, std::nullopt, true, math_type::fma,
                  CUDNN_STATUS_NOT_SUPPORTED),
    };
    gpu::dnn::detail::selection_rules rules;
    rules.search = algorithm_search::exhaustive;
    rules.workspace_budget_bytes = gpu::dnn::default_workspace_budget;
    const auto chosen = gpu::dnn::detail::select_algorithm(c, rules);
    REQUIRE(chosen.has_value());
    CHECK(c[*chosen].algorithm == convolution_algorithm::implicit_precomp_gemm);
    CHECK_THAT(c[0].reason, ContainsSubstring("over the budget of 4.00 GiB"));
    CHECK_THAT(c[1].reason, ContainsSubstring("usable; slower (2.000 ms against 1.250 ms)"));

    // A fused bias without activation admits only implicit_precomp_gemm, whatever the timings.
    c.push_back(candidate(convolution_algorithm::implicit_gemm, 0, 0.1));
    rules.epilogue = convolution_epilogue::bias;
    CHECK(c[*gpu::dnn::detail::select_algorithm(c, rules)].algorithm ==
          convolution_algorithm::implicit_precomp_gemm);
    CHECK_THAT(c[4].reason, ContainsSubstring("only with implicit_precomp_gemm"));
    rules.epilogue = convolution_epilogue::bias_relu;
    CHECK(*gpu::dnn::detail::select_algorithm(c, rules) == 4);
}

namespace {

// A stand-in for the fused call: refuses the algorithms in `refused` with their statuses and
// records every candidate it is tried on.
struct fake_fused_call {
    std::vector<std::pair<convolution_algorithm, cudnnStatus_t>> refused;
    std::vector<convolution_algorithm> tried;

    gpu::dnn::detail::fused_trial trial()
    {
        return [this](const algorithm_candidate& c)
                   -> std::optional<gpu::dnn::detail::trial_refusal_reason> {
            tried.push_back(c.algorithm);
            for (const auto& [algorithm, status] : refused) {
                if (algorithm == c.algorithm) {
                    return gpu::dnn::detail::trial_refusal_reason{status,
                                                                  gpu::dnn::status_name(status)};
                }
            }
            return std::nullopt;
        };
    }
};

} // namespace

TEST_CASE("without an epilogue the fused call is never tried", "[dnn]")
{
    std::vector<algorithm_candidate> c{candidate(convolution_algorithm::gemm, std::size_t{2} << 30),
                                       candidate(convolution_algorithm::implicit_gemm, 0)};
    gpu::dnn::detail::selection_rules rules;
    rules.workspace_budget_bytes = std::size_t{1} << 30;
    fake_fused_call fused;
    const auto selection = gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial());
    CHECK(selection.chosen == std::optional<std::size_t>(1));
    CHECK(selection.execution == gpu::dnn::epilogue_execution::none);
    CHECK(selection.unfused_reason.empty());
    CHECK(fused.tried.empty());
}

TEST_CASE("an epilogue runs fused with the first candidate the fused call accepts", "[dnn]")
{
    std::vector<algorithm_candidate> c{
        candidate(convolution_algorithm::implicit_gemm, 0),
        candidate(convolution_algorithm::implicit_precomp_gemm, 4096),
        candidate(convolution_algorithm::gemm, 1024),
    };
    gpu::dnn::detail::selection_rules rules;
    rules.epilogue = convolution_epilogue::bias_relu;
    rules.workspace_budget_bytes = std::size_t{1} << 30;
    fake_fused_call fused{{{convolution_algorithm::implicit_gemm, CUDNN_STATUS_NOT_SUPPORTED}}, {}};
    const auto selection = gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial());
    CHECK(selection.chosen == std::optional<std::size_t>(1));
    CHECK(selection.execution == gpu::dnn::epilogue_execution::fused);
    CHECK(selection.unfused_reason.empty());
    CHECK(fused.tried ==
          std::vector<convolution_algorithm>{convolution_algorithm::implicit_gemm,
                                             convolution_algorithm::implicit_precomp_gemm});
    CHECK(c[0].rejected);
    CHECK_THAT(
        c[0].reason,
        ContainsSubstring("CUDNN_STATUS_NOT_SUPPORTED from cudnnConvolutionBiasActivationForward"));
    CHECK(c[1].chosen);
    CHECK_THAT(c[2].reason, ContainsSubstring("ranks it lower"));
}

TEST_CASE("when the fused call refuses every candidate, the epilogue runs unfused and says why",
          "[dnn]")
{
    gpu::dnn::detail::selection_rules rules;
    rules.type = data_type::fp16;
    rules.workspace_budget_bytes = std::size_t{4} << 30;
    SECTION("bias and ReLU (cuDNN 9 refuses some FP16 NHWC problems with few channels)")
    {
        std::vector<algorithm_candidate> c{
            candidate(convolution_algorithm::winograd, 0, {}, true, math_type::tensor_op,
                      CUDNN_STATUS_NOT_SUPPORTED),
            candidate(convolution_algorithm::implicit_gemm, 0, {}, true, math_type::tensor_op),
            candidate(convolution_algorithm::fft, std::size_t{8} << 30, {}, true,
                      math_type::tensor_op),
            candidate(convolution_algorithm::implicit_precomp_gemm, 4096, {}, true,
                      math_type::tensor_op),
        };
        rules.epilogue = convolution_epilogue::bias_relu;
        fake_fused_call fused{
            {{convolution_algorithm::implicit_gemm, CUDNN_STATUS_NOT_SUPPORTED},
             {convolution_algorithm::implicit_precomp_gemm, CUDNN_STATUS_BAD_PARAM}},
            {}};
        const auto selection = gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial());
        // Only the candidates the policy admits were tried, in cuDNN's order.
        CHECK(fused.tried ==
              std::vector<convolution_algorithm>{convolution_algorithm::implicit_gemm,
                                                 convolution_algorithm::implicit_precomp_gemm});
        CHECK(selection.execution == gpu::dnn::epilogue_execution::unfused);
        CHECK(selection.unfused_reason == "cudnnConvolutionBiasActivationForward refused "
                                          "implicit_gemm (CUDNN_STATUS_NOT_SUPPORTED), "
                                          "implicit_precomp_gemm (CUDNN_STATUS_BAD_PARAM)");
        // The plain convolution's choice: the refused candidates are usable again.
        REQUIRE(selection.chosen == std::optional<std::size_t>(1));
        CHECK(c[1].chosen);
        CHECK(c[1].status == "CUDNN_STATUS_SUCCESS");
        CHECK(c[3].status == "CUDNN_STATUS_SUCCESS");
        CHECK(c[1].status_code == CUDNN_STATUS_SUCCESS);
        CHECK(c[3].status_code == CUDNN_STATUS_SUCCESS);
        CHECK_FALSE(c[3].rejected);
        CHECK_THAT(c[2].reason, ContainsSubstring("over the budget"));

        // explain() says it in a line of its own.
        gpu::dnn::convolution_explanation e;
        e.problem = "fp16 nhwc input [2, 3, 9, 11] filter [4, 3, 3, 3], ..., epilogue bias_relu";
        e.epilogue = convolution_epilogue::bias_relu;
        e.execution = selection.execution;
        e.unfused_reason = selection.unfused_reason;
        e.candidates = c;
        CHECK_THAT(
            e.to_string(),
            ContainsSubstring(
                "\nepilogue: bias_relu, unfused (cudnnConvolutionForward, then cudnnAddTensor, "
                "then cudnnActivationForward) because cudnnConvolutionBiasActivationForward "
                "refused implicit_gemm (CUDNN_STATUS_NOT_SUPPORTED), implicit_precomp_gemm "
                "(CUDNN_STATUS_BAD_PARAM)\n"));
    }
    SECTION("a bias alone, whose only fused algorithm is refused (grouped and strided)")
    {
        std::vector<algorithm_candidate> c{
            candidate(convolution_algorithm::implicit_gemm, 0, {}, true, math_type::tensor_op),
            candidate(convolution_algorithm::implicit_precomp_gemm, 4096, {}, true,
                      math_type::tensor_op),
        };
        rules.epilogue = convolution_epilogue::bias;
        fake_fused_call fused{
            {{convolution_algorithm::implicit_precomp_gemm, CUDNN_STATUS_NOT_SUPPORTED}}, {}};
        const auto selection = gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial());
        CHECK(fused.tried ==
              std::vector<convolution_algorithm>{convolution_algorithm::implicit_precomp_gemm});
        CHECK(selection.execution == gpu::dnn::epilogue_execution::unfused);
        CHECK(selection.unfused_reason == "cudnnConvolutionBiasActivationForward refused "
                                          "implicit_precomp_gemm (CUDNN_STATUS_NOT_SUPPORTED)");
        CHECK(selection.chosen ==
              std::optional<std::size_t>(0)); // the identity rule no longer applies

        gpu::dnn::convolution_explanation e;
        e.epilogue = convolution_epilogue::bias;
        e.execution = selection.execution;
        e.unfused_reason = selection.unfused_reason;
        const std::string text = e.to_string();
        CHECK_THAT(
            text,
            ContainsSubstring(
                "epilogue: bias, unfused (cudnnConvolutionForward, then cudnnAddTensor) because"));
        CHECK_THAT(text, !ContainsSubstring("cudnnActivationForward"));
    }
    SECTION("a bias alone, when cuDNN does not offer implicit_precomp_gemm")
    {
        std::vector<algorithm_candidate> c{
            candidate(convolution_algorithm::implicit_gemm, 0, {}, true, math_type::tensor_op),
            candidate(convolution_algorithm::gemm, 1024, {}, true, math_type::tensor_op),
        };
        rules.epilogue = convolution_epilogue::bias;
        fake_fused_call fused;
        const auto selection = gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial());
        CHECK(fused.tried.empty());
        CHECK(selection.execution == gpu::dnn::epilogue_execution::unfused);
        CHECK(selection.unfused_reason == "a bias without activation runs fused only with "
                                          "implicit_precomp_gemm, which cuDNN did not offer");
        CHECK(selection.chosen == std::optional<std::size_t>(0));
    }
    SECTION("a bias alone, when the policy rejects implicit_precomp_gemm: the reason says why")
    {
        std::vector<algorithm_candidate> c{
            candidate(convolution_algorithm::implicit_precomp_gemm, std::size_t{8} << 30, {}, true,
                      math_type::tensor_op),
            candidate(convolution_algorithm::implicit_gemm, 0, {}, true, math_type::tensor_op),
        };
        rules.epilogue = convolution_epilogue::bias;
        fake_fused_call fused;
        const auto selection = gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial());
        CHECK(fused.tried.empty());
        CHECK(selection.unfused_reason ==
              "a bias without activation runs fused only with implicit_precomp_gemm, which was "
              "rejected: needs 8.00 GiB of workspace, over the budget of 4.00 GiB");
        CHECK(selection.chosen == std::optional<std::size_t>(1));
    }
    SECTION("exhaustive: the fastest plain candidate runs unfused")
    {
        std::vector<algorithm_candidate> c{
            candidate(convolution_algorithm::implicit_gemm, 0, 2.0, true, math_type::tensor_op),
            candidate(convolution_algorithm::implicit_precomp_gemm, 4096, 1.0, true,
                      math_type::tensor_op),
            candidate(convolution_algorithm::winograd_nonfused, 8192, 0.5, true,
                      math_type::tensor_op),
        };
        rules.search = algorithm_search::exhaustive;
        rules.epilogue = convolution_epilogue::bias_relu;
        fake_fused_call fused{
            {{convolution_algorithm::implicit_gemm, CUDNN_STATUS_NOT_SUPPORTED},
             {convolution_algorithm::implicit_precomp_gemm, CUDNN_STATUS_NOT_SUPPORTED},
             {convolution_algorithm::winograd_nonfused, CUDNN_STATUS_NOT_SUPPORTED}},
            {}};
        const auto selection = gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial());
        // Tried fastest first.
        CHECK(fused.tried ==
              std::vector<convolution_algorithm>{convolution_algorithm::winograd_nonfused,
                                                 convolution_algorithm::implicit_precomp_gemm,
                                                 convolution_algorithm::implicit_gemm});
        CHECK(selection.execution == gpu::dnn::epilogue_execution::unfused);
        CHECK(selection.chosen == std::optional<std::size_t>(2));
        CHECK_THAT(c[0].reason, ContainsSubstring("usable; slower (2.000 ms against 0.500 ms)"));
    }
    SECTION("nothing fits even the plain convolution: no choice, and no trial")
    {
        std::vector<algorithm_candidate> c{candidate(
            convolution_algorithm::fft, std::size_t{8} << 30, {}, true, math_type::tensor_op)};
        rules.epilogue = convolution_epilogue::bias_relu;
        fake_fused_call fused;
        const auto selection = gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial());
        CHECK_FALSE(selection.chosen.has_value());
        CHECK(fused.tried.empty());
        CHECK_THAT(c[0].reason, ContainsSubstring("over the budget"));
    }
}

namespace {

// A stand-in for a trial of the plain or the fused call: refuses the first `refuse_first`
// candidates it is tried on with `status`, and records every candidate it is tried on.
struct refusing_trial {
    std::size_t refuse_first = 0;
    cudnnStatus_t status = CUDNN_STATUS_NOT_SUPPORTED;
    std::vector<convolution_algorithm> tried{};

    gpu::dnn::detail::candidate_trial trial()
    {
        return [this](const algorithm_candidate& c)
                   -> std::optional<gpu::dnn::detail::trial_refusal_reason> {
            tried.push_back(c.algorithm);
            if (tried.size() <= refuse_first) {
                return gpu::test::refusal_of(status);
            }
            return std::nullopt;
        };
    }
};

} // namespace

TEST_CASE("a plain plan's choice is tried, and a candidate cuDNN refuses is rejected for the next",
          "[dnn]")
{
    std::vector<algorithm_candidate> c{
        candidate(convolution_algorithm::winograd, 0, {}, true, math_type::fma,
                  CUDNN_STATUS_NOT_SUPPORTED),
        candidate(convolution_algorithm::implicit_gemm, 0),
        candidate(convolution_algorithm::fft, std::size_t{8} << 30),
        candidate(convolution_algorithm::implicit_precomp_gemm, 4096),
        candidate(convolution_algorithm::direct, 0),
    };
    gpu::dnn::detail::selection_rules rules;
    rules.workspace_budget_bytes = std::size_t{1} << 30;
    refusing_trial plain{2};
    refusing_trial fused;
    SECTION("through select_tried")
    {
        CHECK(gpu::dnn::detail::select_tried(c, rules, plain.trial()) ==
              std::optional<std::size_t>(4));
    }
    SECTION("through select_with_epilogue, without an epilogue (the fused call is never tried)")
    {
        const auto selection =
            gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial(), plain.trial());
        CHECK(selection.chosen == std::optional<std::size_t>(4));
        CHECK(selection.execution == gpu::dnn::epilogue_execution::none);
        CHECK(fused.tried.empty());
    }
    // Only candidates the policy admits are tried, once each, in cuDNN's order.
    CHECK(plain.tried ==
          std::vector<convolution_algorithm>{convolution_algorithm::implicit_gemm,
                                             convolution_algorithm::implicit_precomp_gemm,
                                             convolution_algorithm::direct});
    CHECK(c[4].chosen);
    for (const std::size_t refused : {std::size_t{1}, std::size_t{3}}) {
        CHECK(c[refused].rejected);
        CHECK(c[refused].status ==
              "CUDNN_STATUS_NOT_SUPPORTED (3000) from cudnnConvolutionForward");
        CHECK(c[refused].reason ==
              "refused at trial: CUDNN_STATUS_NOT_SUPPORTED (3000) from cudnnConvolutionForward");
    }
    CHECK_THAT(c[0].reason, ContainsSubstring("cuDNN cannot run it for this problem"));
    CHECK_THAT(c[2].reason, ContainsSubstring("over the budget"));

    gpu::dnn::convolution_explanation e;
    e.problem = demo_problem().to_string();
    e.candidates = c;
    CHECK_THAT(e.to_string(),
               ContainsSubstring("rejected: refused at trial: CUDNN_STATUS_NOT_SUPPORTED (3000) "
                                 "from cudnnConvolutionForward\n"));
}

TEST_CASE("when cuDNN refuses every candidate at trial, nothing is chosen and the error says why",
          "[dnn]")
{
    gpu::dnn::convolution_explanation e;
    e.problem = demo_problem().to_string();
    e.candidates = {candidate(convolution_algorithm::implicit_gemm, 0),
                    candidate(convolution_algorithm::gemm, std::size_t{2} << 30),
                    candidate(convolution_algorithm::implicit_precomp_gemm, 4096)};
    gpu::dnn::detail::selection_rules rules;
    rules.workspace_budget_bytes = std::size_t{1} << 30;
    refusing_trial plain{100, CUDNN_STATUS_EXECUTION_FAILED};
    CHECK_FALSE(gpu::dnn::detail::select_tried(e.candidates, rules, plain.trial()).has_value());
    CHECK(plain.tried ==
          std::vector<convolution_algorithm>{convolution_algorithm::implicit_gemm,
                                             convolution_algorithm::implicit_precomp_gemm});
    const gpu::dnn::no_algorithm_error error(e);
    const std::string what = error.what();
    CHECK_THAT(what,
               ContainsSubstring("no algorithm fits the policy and the workspace budget, or cuDNN "
                                 "refused at trial every one that does"));
    CHECK_THAT(what, ContainsSubstring(
                         "implicit_gemm          fma        0 B         -            rejected: "
                         "refused at trial: CUDNN_STATUS_EXECUTION_FAILED (5000) from "
                         "cudnnConvolutionForward\n"));
    CHECK_THAT(what, ContainsSubstring("rejected: needs 2.00 GiB of workspace"));
    for (const algorithm_candidate& c : error.explanation().candidates) {
        CHECK(c.rejected);
        CHECK_FALSE(c.chosen);
    }
    // Without a refusal the message does not mention trials.
    gpu::dnn::convolution_explanation budget_only;
    budget_only.candidates = {candidate(convolution_algorithm::gemm, 1 << 20)};
    CHECK_FALSE(gpu::dnn::detail::select_algorithm(budget_only.candidates, {}).has_value());
    CHECK_THAT(std::string(gpu::dnn::no_algorithm_error(budget_only).what()),
               !ContainsSubstring("trial"));
}

TEST_CASE("an empty trial tries nothing: the exhaustive search has run every candidate", "[dnn]")
{
    std::vector<algorithm_candidate> c{
        candidate(convolution_algorithm::implicit_gemm, 0, 2.0),
        candidate(convolution_algorithm::implicit_precomp_gemm, 2048, 1.5)};
    gpu::dnn::detail::selection_rules rules;
    rules.search = algorithm_search::exhaustive;
    rules.workspace_budget_bytes = gpu::dnn::default_workspace_budget;
    CHECK(gpu::dnn::detail::select_tried(c, rules, {}) == std::optional<std::size_t>(1));
    CHECK_THAT(c[0].reason, ContainsSubstring("usable; slower"));
    refusing_trial fused;
    CHECK(gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial()).chosen ==
          std::optional<std::size_t>(1));
}

TEST_CASE("an epilogue that runs fused never tries the plain call, one that runs unfused does",
          "[dnn]")
{
    gpu::dnn::detail::selection_rules rules;
    rules.type = data_type::fp16;
    rules.epilogue = convolution_epilogue::bias_relu;
    rules.workspace_budget_bytes = std::size_t{1} << 30;
    std::vector<algorithm_candidate> c{
        candidate(convolution_algorithm::implicit_gemm, 0, {}, true, math_type::tensor_op),
        candidate(convolution_algorithm::implicit_precomp_gemm, 4096, {}, true,
                  math_type::tensor_op),
    };
    SECTION("fused")
    {
        refusing_trial fused{1};
        refusing_trial plain{100};
        const auto selection =
            gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial(), plain.trial());
        CHECK(selection.execution == gpu::dnn::epilogue_execution::fused);
        CHECK(selection.chosen == std::optional<std::size_t>(1));
        CHECK(plain.tried.empty());
        CHECK(c[0].reason == "refused at trial: CUDNN_STATUS_NOT_SUPPORTED (3000) from "
                             "cudnnConvolutionBiasActivationForward");
    }
    SECTION("unfused: the plain call's choice is tried too")
    {
        refusing_trial fused{100, CUDNN_STATUS_BAD_PARAM};
        refusing_trial plain{1};
        const auto selection =
            gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial(), plain.trial());
        CHECK(selection.execution == gpu::dnn::epilogue_execution::unfused);
        // The fused call's refusals make the reason; the plain call's show in the candidates.
        CHECK(selection.unfused_reason ==
              "cudnnConvolutionBiasActivationForward refused implicit_gemm (CUDNN_STATUS_BAD_PARAM "
              "(2000)), implicit_precomp_gemm (CUDNN_STATUS_BAD_PARAM (2000))");
        CHECK(fused.tried.size() == 2);
        CHECK(plain.tried ==
              std::vector<convolution_algorithm>{convolution_algorithm::implicit_gemm,
                                                 convolution_algorithm::implicit_precomp_gemm});
        CHECK(selection.chosen == std::optional<std::size_t>(1));
        CHECK(c[0].reason ==
              "refused at trial: CUDNN_STATUS_NOT_SUPPORTED (3000) from cudnnConvolutionForward");
        CHECK(c[0].status_code == CUDNN_STATUS_NOT_SUPPORTED);
        CHECK(c[1].status == "CUDNN_STATUS_SUCCESS");
        CHECK(c[1].status_code == CUDNN_STATUS_SUCCESS);
    }
    SECTION("unfused, and the plain call refuses every candidate too: no choice")
    {
        refusing_trial fused{100};
        refusing_trial plain{100};
        const auto selection =
            gpu::dnn::detail::select_with_epilogue(c, rules, fused.trial(), plain.trial());
        CHECK_FALSE(selection.chosen.has_value());
        for (const algorithm_candidate& candidate : c) {
            CHECK_THAT(candidate.reason, ContainsSubstring("refused at trial"));
        }
    }
}

namespace {

// The values of `seeded_scratch_values` as floats.
std::vector<float> decode(const std::vector<std::byte>& bytes, data_type type)
{
    const std::size_t size = gpu::dnn::element_size(type);
    std::vector<float> values(bytes.size() / size);
    for (std::size_t i = 0; i < values.size(); ++i) {
        const std::byte* in = bytes.data() + i * size;
        if (type == data_type::fp16) {
            __half h;
            std::memcpy(&h, in, size);
            values[i] = __half2float(h);
        } else if (type == data_type::bf16) {
            __nv_bfloat16 b;
            std::memcpy(&b, in, size);
            values[i] = __bfloat162float(b);
        } else {
            std::memcpy(&values[i], in, size);
        }
    }
    return values;
}

} // namespace

TEST_CASE("planning scratch values are seeded, never zero, denormal or non-finite", "[dnn]")
{
    for (const data_type type : {data_type::fp32, data_type::fp16, data_type::bf16}) {
        INFO(gpu::dnn::to_string(type));
        const std::vector<std::byte> bytes =
            gpu::dnn::detail::seeded_scratch_values(type, 10000, 1);
        REQUIRE(bytes.size() == 10000 * gpu::dnn::element_size(type));
        const std::vector<float> values = decode(bytes, type);
        std::size_t negative = 0;
        for (const float v : values) {
            REQUIRE(std::isfinite(v));
            REQUIRE(std::fabs(v) >= 0.25F);
            REQUIRE(std::fabs(v) <= 1.0F);
            negative += v < 0.0F ? 1 : 0;
        }
        CHECK(negative > 4000);
        CHECK(negative < 6000);
        CHECK(gpu::dnn::detail::seeded_scratch_values(type, 10000, 1) == bytes); // seeded
        CHECK(gpu::dnn::detail::seeded_scratch_values(type, 10000, 2) != bytes); // per seed
    }
    CHECK(gpu::dnn::detail::seeded_scratch_values(data_type::fp32, 0, 1).empty());
    CHECK_THROWS_AS(gpu::dnn::detail::seeded_scratch_values(
                        data_type::fp32, std::numeric_limits<std::size_t>::max() / 2, 1),
                    std::invalid_argument);
    // Nothing to fill asks nothing of CUDA (this runs without a GPU); a null address is refused.
    gpu::dnn::detail::fill_seeded_scratch(nullptr, 0, data_type::fp32, 1,
                                          gpu::legacy_default_stream);
    CHECK_THROWS_AS(gpu::dnn::detail::fill_seeded_scratch(nullptr, 4, data_type::fp32, 1,
                                                          gpu::legacy_default_stream),
                    std::invalid_argument);
}

TEST_CASE("a fused epilogue is named in the explanation", "[dnn]")
{
    gpu::dnn::convolution_explanation e;
    e.problem = demo_problem().to_string();
    CHECK_THAT(e.to_string(), !ContainsSubstring("epilogue:"));
    e.epilogue = convolution_epilogue::bias;
    e.execution = gpu::dnn::epilogue_execution::fused;
    CHECK_THAT(
        e.to_string(),
        ContainsSubstring(
            "\nepilogue: bias, fused in one call (cudnnConvolutionBiasActivationForward)\n"));
    CHECK(gpu::dnn::to_string(gpu::dnn::epilogue_execution::unfused) == "unfused");
    CHECK(gpu::dnn::to_string(gpu::dnn::epilogue_execution::fused) == "fused");
    CHECK(gpu::dnn::to_string(gpu::dnn::epilogue_execution::none) == "none");
}

TEST_CASE("when nothing fits, the error lists every candidate and its reason", "[dnn]")
{
    gpu::dnn::convolution_explanation e;
    e.problem = demo_problem().to_string();
    e.candidates = {candidate(convolution_algorithm::gemm, 1 << 20),
                    candidate(convolution_algorithm::fft, 1 << 24)};
    gpu::dnn::detail::selection_rules rules; // budget 0
    CHECK_FALSE(gpu::dnn::detail::select_algorithm(e.candidates, rules).has_value());
    const gpu::dnn::no_algorithm_error error(e);
    const std::string what = error.what();
    CHECK_THAT(what, ContainsSubstring("no algorithm fits the policy and the workspace budget"));
    CHECK_THAT(what, ContainsSubstring("gemm"));
    CHECK_THAT(what,
               ContainsSubstring("rejected: needs 1.00 MiB of workspace, over the budget of 0 B"));
    CHECK_THAT(what, ContainsSubstring("rejected: needs 16.00 MiB"));
    CHECK(error.explanation().candidates.size() == 2);
}

TEST_CASE("an explanation reads as a report", "[dnn]")
{
    gpu::dnn::convolution_explanation e;
    e.problem = demo_problem().to_string();
    e.search = algorithm_search::exhaustive;
    e.workspace_budget_bytes = std::size_t{1} << 30;
    e.algorithm = convolution_algorithm::implicit_precomp_gemm;
    e.math = math_type::fma;
    e.workspace_bytes = 4096;
    e.time_ms = 3.5;
    e.deterministic = true;
    e.from_cache = true;
    e.candidates = {candidate(convolution_algorithm::implicit_precomp_gemm, 4096, 3.5)};
    e.candidates[0].chosen = true;
    const std::string text = e.to_string();
    CHECK_THAT(text, ContainsSubstring("convolution fp32 nchw input [32, 3, 224, 224]"));
    CHECK_THAT(text, ContainsSubstring(
                         "policy: exhaustive (every algorithm timed), deterministic only: no, "
                         "TF32: off, workspace budget: 1.00 GiB"));
    CHECK_THAT(text, ContainsSubstring(
                         "chosen: implicit_precomp_gemm, math fma, workspace 4.00 KiB, "
                         "3.500 ms measured, deterministic (from the plan cache: no search ran)"));
    CHECK_THAT(text, ContainsSubstring("CHOSEN"));
}

TEST_CASE("algorithm names and values are cuDNN's and plans are move-only", "[dnn]")
{
    STATIC_REQUIRE(static_cast<int>(convolution_algorithm::implicit_gemm) ==
                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM);
    STATIC_REQUIRE(static_cast<int>(convolution_algorithm::implicit_precomp_gemm) ==
                   CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);
    STATIC_REQUIRE(static_cast<int>(convolution_algorithm::fft_tiling) ==
                   CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING);
    STATIC_REQUIRE(static_cast<int>(convolution_algorithm::winograd_nonfused) ==
                   CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED);
    CHECK(gpu::dnn::to_string(convolution_algorithm::winograd_nonfused) == "winograd_nonfused");
    CHECK(gpu::dnn::to_string(convolution_epilogue::bias_relu) == "bias_relu");
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<convolution>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<convolution>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<convolution>);
}

TEST_CASE("clearing the plan cache empties it and zeroes the counters", "[dnn]")
{
    gpu::dnn::clear_plan_cache();
    const gpu::dnn::plan_cache_stats stats = gpu::dnn::plan_cache_statistics();
    CHECK(stats.entries == 0);
    CHECK(stats.hits == 0);
    CHECK(stats.misses == 0);
}

TEST_CASE("the float64 reference convolves a hand-checked case and keeps layouts apart", "[dnn]")
{
    // 1x1x3x3 input 1..9, one 2x2 filter of ones, no padding: the sums of each 2x2 window.
    const std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
    const std::vector<double> w{1, 1, 1, 1};
    const gpu::dnn::convolution_geometry g{.padding = {0, 0}};
    CHECK(gpu::test::reference_convolution(x, {1, 1, 3, 3}, w, {1, 1, 2, 2}, g) ==
          std::vector<double>{12, 16, 24, 28});
    // Padding 1 and stride 2 over the same input: the corners.
    const gpu::dnn::convolution_geometry strided{.padding = {1, 1}, .stride = {2, 2}};
    CHECK(gpu::test::reference_convolution(x, {1, 1, 3, 3}, w, {1, 1, 2, 2}, strided) ==
          std::vector<double>{1, 5, 11, 28});
    // Flipped filter (true convolution) with an asymmetric filter [1, 2; 3, 4].
    const std::vector<double> asym{1, 2, 3, 4};
    gpu::dnn::convolution_geometry flip{.padding = {0, 0}};
    flip.mode = gpu::dnn::convolution_mode::convolution;
    CHECK(gpu::test::reference_convolution(x, {1, 1, 3, 3}, asym, {1, 1, 2, 2}, flip)[0] ==
          4 * 1 + 3 * 2 + 2 * 4 + 1 * 5);
    // Two groups: each output channel sees only its own input channel.
    const std::vector<double> two{1, 2, 3, 4, 10, 20, 30, 40};
    const gpu::dnn::convolution_geometry grouped{.padding = {0, 0}, .groups = 2};
    CHECK(gpu::test::reference_convolution(two, {1, 2, 2, 2}, {1, 1, 1, 1, 1, 1, 1, 1},
                                           {2, 1, 2, 2}, grouped) == std::vector<double>{10, 100});
    // Layout round trip and the NHWC order of a 1x2x2x2 tensor.
    const std::vector<int> dims{1, 2, 2, 2};
    CHECK(gpu::test::to_storage(two, dims, tensor_layout::nhwc) ==
          std::vector<double>{1, 10, 2, 20, 3, 30, 4, 40});
    CHECK(gpu::test::from_storage(gpu::test::to_storage(two, dims, tensor_layout::nhwc), dims,
                                  tensor_layout::nhwc) == two);
}

// ---- GPU: forward convolutions against the float64 reference ------------------------------

namespace {

using gpu::test::tolerance;
using gpu::test::type_of;

// Random inputs rounded to T (the reference sees exactly what the GPU sees), device buffers in
// the problem's layout, and an output poisoned with NaN.
template <class T>
struct conv_data {
    convolution_problem problem;
    std::vector<double> x_ref;
    std::vector<double> w_ref;
    std::vector<double> b_ref;
    gpu::device_buffer<T> x;
    gpu::device_buffer<T> w;
    gpu::device_buffer<T> b;
    gpu::device_buffer<T> y;

    conv_data(const convolution_problem& p, std::uint32_t seed, gpu::stream_ref s)
        : problem(p), x(p.input_elements(), s), w(p.filter_elements(), s),
          b(static_cast<std::size_t>(p.filter[0]), s), y(p.output_elements(), s)
    {
        x_ref = upload(x, gpu::test::random_floats(p.input_elements(), seed), p.input);
        w_ref = upload(w, gpu::test::random_floats(p.filter_elements(), seed + 1), p.filter);
        b_ref = upload(b, gpu::test::random_floats(b.size(), seed + 2), {1, p.filter[0], 1, 1});
        poison();
    }

    std::vector<double> upload(gpu::device_buffer<T>& buffer, const std::vector<float>& values,
                               const std::vector<int>& dims)
    {
        return gpu::test::upload_rounded(buffer, values, dims, problem.layout);
    }

    void poison() { gpu::test::poison(y); }

    // The output in logical order, as doubles; waits for @p s first.
    std::vector<double> result(gpu::stream_ref s) const
    {
        return gpu::test::download(y, problem.output(), problem.layout, s);
    }

    std::vector<double> reference() const
    {
        std::vector<double> r = gpu::test::reference_convolution(x_ref, problem.input, w_ref,
                                                                 problem.filter, problem.geometry);
        if (problem.epilogue == convolution_epilogue::none) {
            return r;
        }
        const std::size_t plane =
            r.size() / (static_cast<std::size_t>(problem.input[0]) * problem.filter[0]);
        for (std::size_t i = 0; i < r.size(); ++i) {
            r[i] += b_ref[(i / plane) % b_ref.size()];
            if (problem.epilogue == convolution_epilogue::bias_relu && r[i] < 0.0) {
                r[i] = 0.0;
            }
        }
        return r;
    }
};

using gpu::test::error_of;

const std::vector<convolution_problem>& small_problems()
{
    static const std::vector<convolution_problem> problems{
        {.input = {2, 3, 9, 11}, .filter = {4, 3, 3, 3}, .geometry = {.padding = {1, 1}}},
        {.input = {2, 8, 10, 10},
         .filter = {8, 4, 3, 3},
         .geometry = {.padding = {1, 1}, .stride = {2, 2}, .groups = 2}},
        {.input = {1, 4, 12, 12},
         .filter = {8, 4, 3, 5},
         .geometry = {.padding = {2, 1}, .dilation = {2, 1}}},
    };
    return problems;
}

template <class T>
void check_forward_under_every_policy(gpu::dnn::handle& h, gpu::stream_ref s)
{
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        for (convolution_problem p : small_problems()) {
            p.type = type_of<T>();
            p.layout = layout;
            conv_data<T> data(p, 7, s);
            const std::vector<double> ref = data.reference();
            for (const algorithm_search search :
                 {algorithm_search::heuristic, algorithm_search::exhaustive,
                  algorithm_search::deterministic}) {
                convolution_options options;
                options.search = search;
                convolution plan(h, p, options);
                INFO(p.to_string() << ", policy " << gpu::dnn::to_string(search) << "\n"
                                   << plan.explain().to_string());
                // What explain() reports is what the forward is given, and within the budget.
                CHECK(plan.workspace().size() == plan.workspace_bytes());
                CHECK(plan.workspace_bytes() <= options.workspace_budget_bytes);
                data.poison();
                plan.forward(h, data.x, data.w, data.y);
                CHECK(error_of(data.result(s), ref) < tolerance(p.type, false));
                if (search == algorithm_search::deterministic) {
                    CHECK(plan.explain().deterministic);
                }
            }
        }
    }
}

} // namespace

TEST_CASE("FP32 forward convolutions match the float64 reference under every policy and layout",
          "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    check_forward_under_every_policy<float>(h, s);
}

TEST_CASE("FP16 forward convolutions match the float64 reference under every policy and layout",
          "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    check_forward_under_every_policy<__half>(h, s);
}

TEST_CASE("BF16 forward convolutions match the float64 reference under every policy and layout",
          "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    check_forward_under_every_policy<__nv_bfloat16>(h, s);
}

TEST_CASE("FP32 with TF32 allowed stays within the TF32 tolerance", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const convolution_problem p{
        .input = {4, 16, 20, 20}, .filter = {32, 16, 3, 3}, .geometry = {.padding = {1, 1}}};
    conv_data<float> data(p, 11, s);
    convolution_options options;
    options.allow_tf32 = true;
    convolution plan(h, p, options);
    INFO(plan.explain().to_string());
    CHECK(plan.explain().allow_tf32);
    plan.forward(h, data.x, data.w, data.y);
    CHECK(error_of(data.result(s), data.reference()) < tolerance(data_type::fp32, true));
}

namespace {

// Plans @p p (an epilogue problem), runs it against the float64 reference, then plans it again
// (from the cache, which must carry the fused-or-unfused decision) and runs that plan too. Holds
// whichever way the epilogue runs: fused, or unfused when cuDNN's fused call refuses every
// algorithm for this problem.
template <class T>
convolution check_epilogue(gpu::dnn::handle& h, gpu::stream_ref s, const convolution_problem& p,
                           std::uint32_t seed, const convolution_options& options, double tolerance)
{
    conv_data<T> data(p, seed, s);
    const std::vector<double> ref = data.reference();
    convolution plan(h, p, options);
    INFO(plan.explain().to_string());
    CHECK(plan.explain().epilogue == p.epilogue);
    CHECK(plan.explain().execution != gpu::dnn::epilogue_execution::none);
    CHECK(plan.explain().unfused_reason.empty() ==
          (plan.explain().execution == gpu::dnn::epilogue_execution::fused));
    plan.forward(h, data.x, data.w, data.b, data.y);
    const std::vector<double> out = data.result(s);
    CHECK(error_of(out, ref) < tolerance);
    if (p.epilogue == convolution_epilogue::bias_relu) {
        for (const double v : out) {
            REQUIRE(v >= 0.0);
        }
    }

    convolution again(h, p, options);
    CHECK(again.explain().from_cache);
    CHECK(again.explain().execution == plan.explain().execution);
    CHECK(again.explain().unfused_reason == plan.explain().unfused_reason);
    CHECK(again.algorithm() == plan.algorithm());
    data.poison();
    again.forward(h, data.x, data.w, data.b, data.y);
    CHECK(error_of(data.result(s), ref) < tolerance);
    return plan;
}

} // namespace

TEST_CASE("bias and ReLU epilogues match the reference, fused or unfused", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    gpu::dnn::clear_plan_cache();
    SECTION("FP32 NCHW, bias and ReLU")
    {
        convolution_problem p = small_problems()[0];
        p.epilogue = convolution_epilogue::bias_relu;
        check_epilogue<float>(h, s, p, 21, {}, 1e-5);
    }
    SECTION("FP32 NCHW, bias only (identity activation), grouped and strided")
    {
        convolution_problem p = small_problems()[1];
        p.epilogue = convolution_epilogue::bias;
        const convolution plan = check_epilogue<float>(h, s, p, 23, {}, 1e-5);
        INFO(plan.explain().to_string());
        if (plan.explain().execution == gpu::dnn::epilogue_execution::fused) {
            // cuDNN runs a fused identity activation only with this algorithm.
            CHECK(plan.algorithm() == convolution_algorithm::implicit_precomp_gemm);
        } else {
            CHECK_THAT(plan.explain().unfused_reason, ContainsSubstring("implicit_precomp_gemm"));
        }
    }
    SECTION("FP16 NHWC, bias and ReLU, exhaustive (C = 3, K = 4)")
    {
        convolution_problem p = small_problems()[0];
        p.type = data_type::fp16;
        p.layout = tensor_layout::nhwc;
        p.epilogue = convolution_epilogue::bias_relu;
        convolution_options options;
        options.search = algorithm_search::exhaustive;
        check_epilogue<__half>(h, s, p, 25, options, 1e-2);
    }
}

TEST_CASE("the deterministic policy gives bitwise-identical outputs run after run", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const convolution_problem p{
        .input = {8, 32, 28, 28}, .filter = {64, 32, 3, 3}, .geometry = {.padding = {1, 1}}};
    conv_data<float> data(p, 31, s);
    convolution_options options;
    options.search = algorithm_search::deterministic;
    convolution plan(h, p, options);
    INFO(plan.explain().to_string());
    REQUIRE(plan.explain().deterministic);
    plan.forward(h, data.x, data.w, data.y);
    s.synchronize();
    const std::vector<float> first = data.y.to_host();
    for (int run = 0; run < 5; ++run) {
        data.poison();
        plan.forward(h, data.x, data.w, data.y);
        s.synchronize();
        const std::vector<float> again = data.y.to_host();
        REQUIRE(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)) == 0);
    }
    CHECK(error_of(data.result(s), data.reference()) < 1e-5);
}

TEST_CASE("a workspace budget of 0 finds an algorithm without workspace or says none fits",
          "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    for (const algorithm_search search :
         {algorithm_search::heuristic, algorithm_search::exhaustive}) {
        const convolution_problem p = small_problems()[0];
        conv_data<float> data(p, 41, s);
        convolution_options options;
        options.search = search;
        options.workspace_budget_bytes = 0;
        try {
            convolution plan(h, p, options);
            INFO(plan.explain().to_string());
            CHECK(plan.workspace_bytes() == 0);
            CHECK(plan.workspace().empty());
            for (const algorithm_candidate& c : plan.explain().candidates) {
                if (c.status_code == CUDNN_STATUS_SUCCESS && c.workspace_bytes > 0) {
                    CHECK(c.rejected);
                    CHECK_THAT(c.reason, ContainsSubstring("over the budget of 0 B"));
                }
            }
            plan.forward(h, data.x, data.w, data.y);
            CHECK(error_of(data.result(s), data.reference()) < 1e-5);
        } catch (const gpu::dnn::no_algorithm_error& e) {
            // Allowed, if it says clearly why.
            CHECK_THAT(std::string(e.what()), ContainsSubstring("no algorithm fits"));
            for (const algorithm_candidate& c : e.explanation().candidates) {
                CHECK(c.rejected);
                CHECK_FALSE(c.reason.empty());
            }
        }
    }
}

TEST_CASE("the plan cache returns the same plan without searching", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    gpu::dnn::clear_plan_cache();
    const convolution_problem p = small_problems()[1];
    convolution_options options;
    options.search = algorithm_search::exhaustive;
    const convolution first(h, p, options);
    CHECK_FALSE(first.explain().from_cache);
    auto stats = gpu::dnn::plan_cache_statistics();
    CHECK(stats.entries == 1);
    CHECK(stats.misses == 1);
    CHECK(stats.hits == 0);

    convolution second(h, p, options);
    CHECK(second.explain().from_cache);
    CHECK(second.algorithm() == first.algorithm());
    CHECK(second.explain().math == first.explain().math);
    CHECK(second.workspace_bytes() == first.workspace_bytes());
    CHECK(second.explain().time_ms == first.explain().time_ms);
    stats = gpu::dnn::plan_cache_statistics();
    CHECK(stats.entries == 1);
    CHECK(stats.hits == 1);
    CHECK(stats.misses == 1);

    conv_data<float> data(p, 51, s);
    second.forward(h, data.x, data.w, data.y);
    CHECK(error_of(data.result(s), data.reference()) < 1e-5);

    convolution_problem other = p;
    other.layout = tensor_layout::nhwc;
    const convolution third(h, other, options);
    CHECK_FALSE(third.explain().from_cache);
    CHECK(gpu::dnn::plan_cache_statistics().entries == 2);
}

TEST_CASE("an exhaustive plan on real buffers reports measured times", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    gpu::dnn::clear_plan_cache();
    const convolution_problem p{
        .input = {4, 16, 32, 32}, .filter = {32, 16, 3, 3}, .geometry = {.padding = {1, 1}}};
    conv_data<float> data(p, 61, s);
    convolution_options options;
    options.search = algorithm_search::exhaustive;
    convolution plan(h, p, options, data.x, data.w, data.y);
    INFO(plan.explain().to_string());
    REQUIRE(plan.explain().time_ms.has_value());
    for (const algorithm_candidate& c : plan.explain().candidates) {
        if (!c.rejected) {
            CHECK(*c.time_ms >= *plan.explain().time_ms);
        }
    }
    data.poison();
    plan.forward(h, data.x, data.w, data.y);
    CHECK(error_of(data.result(s), data.reference()) < 1e-5);
}

TEST_CASE("a forward on another stream moves the workspace there", "[dnn][gpu]")
{
    gpu::stream first(gpu::stream_flags::non_blocking);
    gpu::stream second(gpu::stream_flags::non_blocking);
    gpu::dnn::handle h(first);
    const convolution_problem p = small_problems()[2];
    conv_data<float> data(p, 71, first);
    convolution plan(h, p);
    h.set_stream(second);
    plan.forward(h, data.x, data.w, data.y);
    if (!plan.workspace().empty()) {
        CHECK(plan.workspace().stream() == second.ref());
    }
    CHECK(error_of(data.result(second), data.reference()) < 1e-5);
}

TEST_CASE("the development profile's checks catch NaN in an output", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const convolution_problem p = small_problems()[0];
    conv_data<float> data(p, 81, s);
    convolution plan(h, p, convolution_options::from_profile(gpu::profile::development()));
    plan.forward(h, data.x, data.w, data.y); // clean inputs: no complaint
    std::vector<float> x = gpu::test::random_floats(p.input_elements(), 5);
    x[17] = std::numeric_limits<float>::quiet_NaN();
    data.x.copy_from_host(x);
    CHECK_THROWS_AS(plan.forward(h, data.x, data.w, data.y), gpu::numerics_error);
}

TEST_CASE("a forward convolution replays from a graph, and the development profile's checks are "
          "refused during a capture",
          "[dnn][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::dnn::handle h(s);
    const convolution_problem p = small_problems()[0];
    conv_data<float> data(p, 83, s);
    convolution plan(h, p);
    plan.forward(h, data.x, data.w, data.y); // warm-up outside the capture
    data.poison();
    gpu::graph_exec exec(
        gpu::capture(s, [&](gpu::stream_ref) { plan.forward(h, data.x, data.w, data.y); }));
    exec.launch(s);
    CHECK(error_of(data.result(s), data.reference()) < 1e-5);

    convolution checked(h, p, convolution_options::from_profile(gpu::profile::development()));
    gpu::capture_scope scope(s);
    CHECK_THROWS_AS(checked.forward(h, data.x, data.w, data.y), std::logic_error);
    CHECK_THROWS_WITH(checked.forward(h, data.x, data.w, data.y),
                      ContainsSubstring("gpu::dnn::convolution::forward") &&
                          ContainsSubstring("use a profile without synchronous_checks"));
    CHECK(gpu::capture_status_of(s) == gpu::capture_status::active); // nothing broke the capture
    CHECK(scope.end().node_count() == 0);
}

TEST_CASE("forward refuses buffers that do not fit the plan", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const convolution_problem p = small_problems()[0];
    conv_data<float> data(p, 91, s);
    convolution plan(h, p);
    gpu::device_buffer<float> short_y(data.y.size() - 1, s);
    CHECK_THROWS_WITH(plan.forward(h, data.x, data.w, short_y),
                      ContainsSubstring("y (the output) has " + std::to_string(short_y.size())));
    gpu::device_buffer<std::uint16_t> halves(p.input_elements(), s);
    gpu::device_buffer<std::uint16_t> halves_w(p.filter_elements(), s);
    gpu::device_buffer<std::uint16_t> halves_y(p.output_elements(), s);
    CHECK_THROWS_WITH(plan.forward(h, halves, halves_w, halves_y),
                      ContainsSubstring("the problem is fp32"));
    CHECK_THROWS_WITH(plan.forward(h, data.x, data.w, data.b, data.y),
                      ContainsSubstring("the plan's epilogue is none"));
    CHECK_THROWS_AS(plan.forward_raw(h, data.x.data(), nullptr, nullptr, data.y.data()),
                    std::invalid_argument);
    convolution moved = std::move(plan);
    CHECK_THROWS_AS(plan.forward(h, data.x, data.w, data.y),
                    std::logic_error); // NOLINT(bugprone-use-after-move)
    moved.forward(h, data.x, data.w, data.y);
    CHECK(error_of(data.result(s), data.reference()) < 1e-5);
}

TEST_CASE("planning scratch is filled on the device with the seeded non-zero values", "[dnn][gpu]")
{
    gpu::stream s;
    for (const data_type type : {data_type::fp32, data_type::fp16, data_type::bf16}) {
        INFO(gpu::dnn::to_string(type));
        // Three periods and a bit: the host block, then device copies that double it, then a tail.
        const std::size_t period = std::size_t{1} << 16;
        const std::size_t elements = 3 * period + 5;
        const std::size_t size = gpu::dnn::element_size(type);
        gpu::device_buffer<std::byte> buffer(elements * size, s);
        buffer.fill_zero_async(s);
        gpu::dnn::detail::fill_seeded_scratch(buffer.data(), elements, type, 7, s);
        const std::vector<std::byte> device = buffer.to_host();
        const std::vector<std::byte> block =
            gpu::dnn::detail::seeded_scratch_values(type, period, 7);
        for (std::size_t i = 0; i < elements; ++i) {
            REQUIRE(std::memcmp(device.data() + i * size, block.data() + (i % period) * size,
                                size) == 0);
        }
        for (const float v : decode(device, type)) {
            REQUIRE(v != 0.0F);
        }
    }
}

namespace {

// Shapes whose heuristic choice cuDNN might refuse at run time: the small problems, a 1x1
// filter, a depthwise convolution and a strided 7x7 filter.
std::vector<convolution_problem> trial_problems()
{
    std::vector<convolution_problem> problems = small_problems();
    problems.push_back({.input = {1, 5, 7, 13}, .filter = {6, 5, 1, 1}, .geometry = {}});
    problems.push_back({.input = {2, 16, 17, 17},
                        .filter = {16, 1, 3, 3},
                        .geometry = {.padding = {1, 1}, .groups = 16}});
    problems.push_back({.input = {1, 3, 31, 31},
                        .filter = {8, 3, 7, 7},
                        .geometry = {.padding = {3, 3}, .stride = {2, 2}}});
    return problems;
}

// What a plan's explanation must say about its trials: a refused candidate is rejected with
// cuDNN's status, and the chosen one was not refused. Returns the number of refusals.
std::size_t check_trial_verdicts(const gpu::dnn::convolution_explanation& e)
{
    std::size_t refusals = 0;
    for (const algorithm_candidate& c : e.candidates) {
        if (c.reason.starts_with("refused at trial: ")) {
            ++refusals;
            CHECK(c.rejected);
            CHECK_FALSE(c.chosen);
            CHECK_THAT(c.reason, ContainsSubstring("CUDNN_STATUS_"));
            CHECK_THAT(c.reason, ContainsSubstring(" from cudnnConvolution"));
        }
    }
    return refusals;
}

// Plans every trial problem in T under the heuristic and deterministic policies (no cache: each
// plan searches and tries) and runs one forward: it must never throw, and it must match the
// reference. Planning may throw no_algorithm_error only when every candidate was rejected with a
// reason. Returns the number of candidates cuDNN refused at trial.
template <class T>
std::size_t check_tried_plans(gpu::dnn::handle& h, gpu::stream_ref s)
{
    std::size_t refusals = 0;
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        for (convolution_problem p : trial_problems()) {
            p.type = type_of<T>();
            p.layout = layout;
            conv_data<T> data(p, 13, s);
            const std::vector<double> ref = data.reference();
            for (const algorithm_search search :
                 {algorithm_search::heuristic, algorithm_search::deterministic}) {
                INFO(p.to_string() << ", policy " << gpu::dnn::to_string(search));
                gpu::dnn::clear_plan_cache();
                convolution_options options;
                options.search = search;
                std::optional<convolution> plan;
                try {
                    plan.emplace(h, p, options);
                } catch (const gpu::dnn::no_algorithm_error& e) {
                    INFO(e.what());
                    refusals += check_trial_verdicts(e.explanation());
                    for (const algorithm_candidate& c : e.explanation().candidates) {
                        CHECK(c.rejected);
                        CHECK_FALSE(c.reason.empty());
                    }
                    continue;
                }
                INFO(plan->explain().to_string());
                refusals += check_trial_verdicts(plan->explain());
                data.poison();
                CHECK_NOTHROW(plan->forward(h, data.x, data.w, data.y));
                CHECK(error_of(data.result(s), ref) < tolerance(p.type, false));
            }
        }
    }
    return refusals;
}

} // namespace

TEST_CASE("a plan tried at planning never meets a refusal at its first forward", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const std::size_t refusals = check_tried_plans<float>(h, s) + check_tried_plans<__half>(h, s) +
                                 check_tried_plans<__nv_bfloat16>(h, s);
    // Not an assertion (whether cuDNN refuses any of these depends on the GPU and cuDNN); the
    // count goes in the log so that a GPU run shows whether the trial path was exercised.
    WARN("cuDNN refused " << refusals << " candidate(s) at trial across the trial problems");
    gpu::dnn::clear_plan_cache();
}

TEST_CASE("planning on the caller's buffers zeroes the fused call's z: a NaN in y does not survive",
          "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    convolution_problem p = small_problems()[0];
    p.epilogue = convolution_epilogue::bias_relu;
    for (const algorithm_search search :
         {algorithm_search::heuristic, algorithm_search::exhaustive}) {
        INFO("policy " << gpu::dnn::to_string(search));
        gpu::dnn::clear_plan_cache();
        conv_data<float> data(p, 17, s); // y holds NaN
        convolution_options options;
        options.search = search;
        convolution plan(h, p, options, data.x, data.w, data.y);
        INFO(plan.explain().to_string());
        s.synchronize();
        for (const float v : data.y.to_host()) {
            REQUIRE(std::isfinite(v));
        }
        data.poison();
        plan.forward(h, data.x, data.w, data.b, data.y);
        CHECK(error_of(data.result(s), data.reference()) < 1e-5);
    }
    gpu::dnn::clear_plan_cache();
}
