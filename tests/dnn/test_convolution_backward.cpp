// gpu/dnn/convolution_backward.hpp: the backward passes' problems, checks, descriptors, cache
// keys, selection and explanations on the host, the float64 references against the forward's
// adjoint and its finite differences; on a GPU, backward data, filter and bias against those
// references under every policy, layout and type, bit-identical deterministic runs, gradient
// accumulation and the errors of a run.
#include "candidates.hpp"
#include "convolution_pass.hpp"      // the dnn wrapper's private planning pieces (descriptors)
#include "convolution_selection.hpp" // the dnn wrapper's private selection machinery
#include "reference_convolution.hpp"
#include "typed_values.hpp"

#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/convolution_backward.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include <test_support.hpp>

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
using gpu::dnn::algorithm_search;
using gpu::dnn::backward_data_algorithm;
using gpu::dnn::backward_data_candidate;
using gpu::dnn::backward_data_explanation;
using gpu::dnn::backward_filter_algorithm;
using gpu::dnn::backward_filter_candidate;
using gpu::dnn::backward_filter_explanation;
using gpu::dnn::convolution_backward_data;
using gpu::dnn::convolution_backward_filter;
using gpu::dnn::convolution_epilogue;
using gpu::dnn::convolution_options;
using gpu::dnn::convolution_pass;
using gpu::dnn::convolution_problem;
using gpu::dnn::data_type;
using gpu::dnn::gradient_update;
using gpu::dnn::math_type;
using gpu::dnn::tensor_layout;
using gpu::test::candidate;

namespace {

convolution_problem small_problem()
{
    return {.input = {2, 3, 9, 11}, .filter = {4, 3, 3, 3}, .geometry = {.padding = {1, 1}}};
}

gpu::dnn::handle empty_handle()
{
    return gpu::dnn::handle::from_native_handle(nullptr);
}

} // namespace

// ---- host: names, problems, checks, descriptors ---------------------------------------------

TEST_CASE("backward algorithm names and values are cuDNN's and plans are move-only", "[dnn]")
{
    STATIC_REQUIRE(static_cast<int>(backward_data_algorithm::algo_0) ==
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_0);
    STATIC_REQUIRE(static_cast<int>(backward_data_algorithm::algo_1) ==
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_1);
    STATIC_REQUIRE(static_cast<int>(backward_data_algorithm::fft) ==
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT);
    STATIC_REQUIRE(static_cast<int>(backward_data_algorithm::fft_tiling) ==
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING);
    STATIC_REQUIRE(static_cast<int>(backward_data_algorithm::winograd) ==
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD);
    STATIC_REQUIRE(static_cast<int>(backward_data_algorithm::winograd_nonfused) ==
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED);
    STATIC_REQUIRE(static_cast<int>(backward_data_algorithm::winograd_nonfused) + 1 ==
                   CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    STATIC_REQUIRE(static_cast<int>(backward_filter_algorithm::algo_0) ==
                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
    STATIC_REQUIRE(static_cast<int>(backward_filter_algorithm::algo_1) ==
                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
    STATIC_REQUIRE(static_cast<int>(backward_filter_algorithm::fft) ==
                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT);
    STATIC_REQUIRE(static_cast<int>(backward_filter_algorithm::algo_3) ==
                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3);
    STATIC_REQUIRE(static_cast<int>(backward_filter_algorithm::winograd) ==
                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD);
    STATIC_REQUIRE(static_cast<int>(backward_filter_algorithm::winograd_nonfused) ==
                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED);
    STATIC_REQUIRE(static_cast<int>(backward_filter_algorithm::fft_tiling) ==
                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING);
    STATIC_REQUIRE(static_cast<int>(backward_filter_algorithm::fft_tiling) + 1 ==
                   CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
    CHECK(gpu::dnn::to_string(backward_data_algorithm::algo_1) == "algo_1");
    CHECK(gpu::dnn::to_string(backward_data_algorithm::fft_tiling) == "fft_tiling");
    CHECK(gpu::dnn::to_string(backward_filter_algorithm::algo_3) == "algo_3");
    CHECK(gpu::dnn::to_string(backward_filter_algorithm::winograd_nonfused) == "winograd_nonfused");
    CHECK(gpu::dnn::to_string(static_cast<backward_filter_algorithm>(9)) == "unknown");
    CHECK(gpu::dnn::to_string(convolution_pass::backward_filter) == "backward_filter");
    CHECK(gpu::dnn::to_string(gradient_update::accumulate) == "accumulate");
    CHECK(gpu::dnn::to_string(static_cast<gradient_update>(2)) == "unknown");
    STATIC_REQUIRE(backward_data_explanation::pass == convolution_pass::backward_data);
    STATIC_REQUIRE(backward_filter_explanation::pass == convolution_pass::backward_filter);
    STATIC_REQUIRE(gpu::dnn::convolution_explanation::pass == convolution_pass::forward);
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<convolution_backward_data>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<convolution_backward_data>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<convolution_backward_filter>);
    STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<convolution_backward_filter>);
}

TEST_CASE("backward plans refuse bad problems with their values, before any handle is used",
          "[dnn]")
{
    gpu::dnn::handle empty = empty_handle();
    convolution_problem p = small_problem();
    p.filter = {4, 5, 3, 3};
    CHECK_THROWS_WITH(convolution_backward_data(empty, p),
                      ContainsSubstring("the input has 3 channels"));
    CHECK_THROWS_WITH(convolution_backward_filter(empty, p),
                      ContainsSubstring("the input has 3 channels"));
    CHECK_THROWS_AS(gpu::dnn::convolution_backward_bias_raw(empty, p, nullptr, nullptr),
                    std::invalid_argument);
    p = small_problem();
    p.geometry.stride = {0, 1};
    CHECK_THROWS_WITH(convolution_backward_filter(empty, p), ContainsSubstring("stride [0, 1]"));
    // An epilogue has a gradient of its own: the backward passes take the convolution alone.
    p = small_problem();
    p.epilogue = convolution_epilogue::bias_relu;
    CHECK_THROWS_WITH(
        convolution_backward_data(empty, p),
        ContainsSubstring(
            "gpu::dnn::convolution_backward_data: the problem's epilogue is bias_relu"));
    p.epilogue = convolution_epilogue::bias;
    CHECK_THROWS_WITH(
        convolution_backward_filter(empty, p),
        ContainsSubstring("convolution_backward_filter: the problem's epilogue is bias,"));
    CHECK_THROWS_WITH(
        gpu::dnn::convolution_backward_bias_raw(empty, p, nullptr, nullptr),
        ContainsSubstring("convolution_backward_bias: the problem's epilogue is bias"));
    // A good problem with an empty handle: the handle is named, and it comes before the pointers.
    CHECK_THROWS_WITH(
        convolution_backward_data(empty, small_problem()),
        ContainsSubstring("convolution_backward_data: the gpu::dnn::handle is empty"));
    CHECK_THROWS_AS(convolution_backward_filter(empty, small_problem()), std::logic_error);
    CHECK_THROWS_WITH(
        gpu::dnn::convolution_backward_bias_raw(empty, small_problem(), nullptr, nullptr),
        ContainsSubstring("convolution_backward_bias: the gpu::dnn::handle is empty"));
}

TEST_CASE("buffers given to a backward plan are checked against the problem by name", "[dnn]")
{
    using data_plan = gpu::dnn::detail::backward_plan<backward_data_algorithm>;
    using filter_plan = gpu::dnn::detail::backward_plan<backward_filter_algorithm>;
    const convolution_problem p = small_problem(); // x 594, w 108, y 792 elements
    const auto floats = gpu::dnn::detail::element_info_of<float>();
    CHECK_NOTHROW(data_plan::check_planning_buffers(p, floats, 108, 792, 594));
    CHECK_NOTHROW(filter_plan::check_planning_buffers(p, floats, 594, 792, 108));
    CHECK_THROWS_WITH(
        data_plan::check_planning_buffers(p, floats, 108, 792, 593),
        ContainsSubstring("gpu::dnn::convolution_backward_data: dx (the input gradient) has "
                          "593 elements but the problem needs 594 (fp32 nchw input [2, 3, 9, 11]"));
    CHECK_THROWS_WITH(
        data_plan::check_planning_buffers(p, floats, 107, 792, 594),
        ContainsSubstring("w (the filter) has 107 elements but the problem needs 108"));
    CHECK_THROWS_WITH(
        filter_plan::check_planning_buffers(p, floats, 594, 791, 108),
        ContainsSubstring("dy (the output gradient) has 791 elements but the problem needs 792"));
    CHECK_THROWS_WITH(
        filter_plan::check_planning_buffers(p, floats, 594, 792, 594),
        ContainsSubstring("dw (the filter gradient) has 594 elements but the problem needs 108"));
    CHECK_THROWS_WITH(
        filter_plan::check_planning_buffers(p, gpu::dnn::detail::element_info_of<std::uint16_t>(),
                                            594, 792, 108),
        ContainsSubstring("the buffers hold 2-byte non-float elements but the problem is fp32"));
    convolution_problem half = p;
    half.type = data_type::fp16;
    CHECK_NOTHROW(filter_plan::check_planning_buffers(
        half, gpu::dnn::detail::element_info_of<std::uint16_t>(), 594, 792, 108));
    CHECK_THROWS_WITH(filter_plan::check_planning_buffers(half, floats, 594, 792, 108),
                      ContainsSubstring("the problem is fp16 (a 2-byte type such as __half)"));
    // The problem is checked before the buffers.
    convolution_problem bad = p;
    bad.input = {2, 3, 1, 1};
    bad.geometry.padding = {0, 0};
    CHECK_THROWS_WITH(data_plan::check_planning_buffers(bad, floats, 0, 0, 0),
                      ContainsSubstring("padded input is only 1"));

    // An empty (moved-from) plan refuses to run before it looks at the buffers or the handle.
    const data_plan empty;
    CHECK_THROWS_WITH(empty.check_running_buffers(floats, 108, 792, 594),
                      ContainsSubstring("convolution_backward_data::backward_data: the "
                                        "gpu::dnn::convolution_backward_data is empty"));
    filter_plan empty_filter;
    gpu::dnn::handle no_handle = empty_handle();
    CHECK_THROWS_AS(
        empty_filter.run(no_handle, nullptr, nullptr, nullptr, gradient_update::overwrite),
        std::logic_error);
}

TEST_CASE("the descriptors every pass uses are built on the host from the problem", "[dnn]")
{
    convolution_problem p{.input = {2, 8, 10, 12},
                          .filter = {6, 4, 3, 3},
                          .geometry = {.padding = {1, 1}, .stride = {2, 2}, .groups = 2}};
    p.type = data_type::fp16;
    p.layout = tensor_layout::nhwc;
    const gpu::dnn::detail::pass_descriptors d = gpu::dnn::detail::make_pass_descriptors(p, {});
    CHECK(d.input.dims() == p.input);
    CHECK(d.input.type() == data_type::fp16);
    CHECK(d.input.layout() == tensor_layout::nhwc);
    CHECK(d.input.strides() == std::vector<int>{960, 1, 96, 8});
    CHECK(d.filter.dims() == p.filter);
    CHECK(d.filter.layout() == tensor_layout::nhwc);
    CHECK(d.output.dims() == std::vector<int>{2, 6, 5, 6});
    CHECK(d.output.dims() == p.output());
    CHECK(d.convolution.math() == math_type::tensor_op);
    CHECK(d.convolution.compute_type() == data_type::fp32);
    CHECK(d.convolution.geometry().groups == 2);
    // The bias gradient: one value per output channel, 1 x K x 1 x 1 in the problem's layout.
    CHECK(gpu::dnn::detail::bias_dims(p) == std::vector<int>{1, 6, 1, 1});
    const gpu::dnn::tensor_descriptor bias(gpu::dnn::detail::bias_dims(p), p.type, p.layout);
    CHECK(bias.strides() == std::vector<int>{6, 1, 6, 6});
    CHECK(bias.size_bytes() == 12);
    // FP32: FMA unless TF32 is allowed, for every pass.
    p.type = data_type::fp32;
    CHECK(gpu::dnn::detail::make_pass_descriptors(p, {}).convolution.math() == math_type::fma);
    CHECK(gpu::dnn::detail::make_pass_descriptors(p, {.allow_tf32 = true}).convolution.math() ==
          math_type::default_math);
    CHECK(gpu::dnn::detail::requested_math(data_type::bf16, true) == math_type::tensor_op);
    p.input[1] = 7;
    CHECK_THROWS_AS(gpu::dnn::detail::make_pass_descriptors(p, {}), std::invalid_argument);
}

// ---- host: cache keys, cache, selection, explanations ---------------------------------------

TEST_CASE("plan cache keys tell the three passes apart", "[dnn]")
{
    using gpu::dnn::detail::make_plan_key;
    const convolution_problem p = small_problem();
    const convolution_options o;
    const auto forward = make_plan_key(p, o, 0);
    CHECK(forward == make_plan_key(p, o, 0, convolution_pass::forward));
    const auto data = make_plan_key(p, o, 0, convolution_pass::backward_data);
    const auto filter = make_plan_key(p, o, 0, convolution_pass::backward_filter);
    CHECK(data != forward);
    CHECK(filter != forward);
    CHECK(data != filter);
    CHECK(data.pass == convolution_pass::backward_data);
    // Within a pass the same normalisation as the forward's: TF32 only for FP32, checks ignored.
    convolution_options checks = o;
    checks.check_numerics = true;
    CHECK(make_plan_key(p, checks, 0, convolution_pass::backward_filter) == filter);
    convolution_options deterministic = o;
    deterministic.deterministic = true;
    CHECK(make_plan_key(p, deterministic, 0, convolution_pass::backward_filter) != filter);
}

TEST_CASE("the plan cache holds each pass's plan apart and searches each once", "[dnn]")
{
    using gpu::dnn::detail::cached_or_searched;
    gpu::dnn::clear_plan_cache();
    const convolution_problem p = small_problem();
    const convolution_options o;
    int data_searches = 0;
    int filter_searches = 0;
    const auto search_data = [&] {
        ++data_searches;
        backward_data_explanation e;
        e.problem = p.to_string();
        e.algorithm = backward_data_algorithm::algo_1;
        e.candidates = {candidate(backward_data_algorithm::algo_1, 64)};
        return e;
    };
    const auto search_filter = [&] {
        ++filter_searches;
        backward_filter_explanation e;
        e.algorithm = backward_filter_algorithm::fft_tiling;
        return e;
    };
    const backward_data_explanation first =
        cached_or_searched<backward_data_algorithm>(p, o, 0, search_data);
    CHECK_FALSE(first.from_cache);
    const backward_data_explanation second =
        cached_or_searched<backward_data_algorithm>(p, o, 0, search_data);
    CHECK(data_searches == 1);
    CHECK(second.from_cache);
    CHECK(second.algorithm == backward_data_algorithm::algo_1);
    CHECK(second.candidates.size() == 1);
    // The same problem in another pass is another plan.
    CHECK(cached_or_searched<backward_filter_algorithm>(p, o, 0, search_filter).algorithm ==
          backward_filter_algorithm::fft_tiling);
    CHECK(filter_searches == 1);
    CHECK(cached_or_searched<backward_filter_algorithm>(p, o, 0, search_filter).from_cache);
    // Another device is another plan too.
    CHECK_FALSE(cached_or_searched<backward_data_algorithm>(p, o, 1, search_data).from_cache);
    // A search that throws leaves nothing behind.
    const auto failing = []() -> gpu::dnn::convolution_explanation {
        throw gpu::dnn::no_algorithm_error(gpu::dnn::convolution_explanation{});
    };
    CHECK_THROWS_AS(cached_or_searched<gpu::dnn::convolution_algorithm>(p, o, 0, failing),
                    gpu::dnn::no_algorithm_error);
    const gpu::dnn::plan_cache_stats stats = gpu::dnn::plan_cache_statistics();
    CHECK(stats.entries == 3);
    CHECK(stats.hits == 2);
    CHECK(stats.misses == 4);
    gpu::dnn::clear_plan_cache();
}

TEST_CASE("backward candidates are chosen under the forward's policy, budget and TF32 rules",
          "[dnn]")
{
    std::vector<backward_filter_candidate> c{
        candidate(backward_filter_algorithm::winograd, 0, {}, true, math_type::fma,
                  CUDNN_STATUS_NOT_SUPPORTED),
        candidate(backward_filter_algorithm::algo_0, 0, 0.5, false),
        candidate(backward_filter_algorithm::fft, std::size_t{3} << 30, 0.25),
        candidate(backward_filter_algorithm::algo_3, 1024, 0.4, false, math_type::tensor_op),
        candidate(backward_filter_algorithm::algo_1, 2048, 1.0),
        candidate(backward_filter_algorithm::fft_tiling, 4096, 2.0),
    };
    gpu::dnn::detail::selection_rules rules;
    rules.workspace_budget_bytes = std::size_t{1} << 30;
    SECTION("heuristic: the first usable one in cuDNN's order")
    {
        REQUIRE(gpu::dnn::detail::select_algorithm(c, rules) == std::optional<std::size_t>(1));
        CHECK_THAT(
            c[0].reason,
            ContainsSubstring("cuDNN cannot run it for this problem (CUDNN_STATUS_NOT_SUPPORTED)"));
        CHECK_THAT(c[2].reason,
                   ContainsSubstring("needs 3.00 GiB of workspace, over the budget of 1.00 GiB"));
        CHECK_THAT(c[3].reason, ContainsSubstring("TF32 is off"));
        CHECK(c[4].reason == "usable; cuDNN ranks it lower");
    }
    SECTION("deterministic: the atomics of algo_0 and algo_3 are ruled out")
    {
        rules.deterministic_only = true;
        REQUIRE(gpu::dnn::detail::select_algorithm(c, rules) == std::optional<std::size_t>(4));
        CHECK(c[4].chosen);
        CHECK_THAT(
            c[1].reason,
            ContainsSubstring("not deterministic, and only deterministic algorithms are allowed"));
    }
    SECTION("exhaustive: the fastest usable one; TF32 admits tensor-op math")
    {
        rules.search = algorithm_search::exhaustive;
        rules.allow_tf32 = true;
        REQUIRE(gpu::dnn::detail::select_algorithm(c, rules) == std::optional<std::size_t>(3));
        CHECK(c[1].reason == "usable; slower (0.500 ms against 0.400 ms)");
        rules.deterministic_only = true; // benchmark and deterministic together
        REQUIRE(gpu::dnn::detail::select_algorithm(c, rules) == std::optional<std::size_t>(4));
        CHECK(c[5].reason == "usable; slower (2.000 ms against 1.000 ms)");
    }
    SECTION("FP16 runs tensor ops without TF32")
    {
        rules.type = data_type::fp16;
        rules.deterministic_only = true;
        c[4].math = math_type::tensor_op;
        CHECK(gpu::dnn::detail::select_algorithm(c, rules) == std::optional<std::size_t>(4));
    }
}

TEST_CASE("a backward plan's choice is tried, and a refusal names the backward call", "[dnn]")
{
    gpu::dnn::detail::selection_rules rules;
    rules.workspace_budget_bytes = std::size_t{1} << 30;
    std::vector<backward_data_algorithm> tried;
    const gpu::dnn::detail::basic_candidate_trial<backward_data_algorithm> refuse_first =
        [&](const backward_data_candidate& c)
        -> std::optional<gpu::dnn::detail::trial_refusal_reason> {
        tried.push_back(c.algorithm);
        if (tried.size() == 1) {
            return gpu::test::refusal_of(CUDNN_STATUS_NOT_SUPPORTED);
        }
        return std::nullopt;
    };
    std::vector<backward_data_candidate> data{
        candidate(backward_data_algorithm::winograd, 0),
        candidate(backward_data_algorithm::algo_1, 0),
        candidate(backward_data_algorithm::algo_0, 0, {}, false)};
    CHECK(gpu::dnn::detail::select_tried(data, rules, refuse_first) ==
          std::optional<std::size_t>(1));
    CHECK(tried == std::vector<backward_data_algorithm>{backward_data_algorithm::winograd,
                                                        backward_data_algorithm::algo_1});
    CHECK(data[0].reason ==
          "refused at trial: CUDNN_STATUS_NOT_SUPPORTED (3000) from cudnnConvolutionBackwardData");
    CHECK(data[1].chosen);

    std::vector<backward_filter_candidate> filter{candidate(backward_filter_algorithm::algo_1, 0)};
    const gpu::dnn::detail::basic_candidate_trial<backward_filter_algorithm> refuse_all =
        [](const backward_filter_candidate&)
        -> std::optional<gpu::dnn::detail::trial_refusal_reason> {
        return gpu::test::refusal_of(CUDNN_STATUS_BAD_PARAM);
    };
    CHECK_FALSE(gpu::dnn::detail::select_tried(filter, rules, refuse_all).has_value());
    CHECK(filter[0].status == "CUDNN_STATUS_BAD_PARAM (2000) from cudnnConvolutionBackwardFilter");
    CHECK(filter[0].status_code == CUDNN_STATUS_BAD_PARAM); // what the plan compares
    // The exhaustive search has run every candidate: an empty trial tries nothing.
    std::vector<backward_filter_candidate> timed{
        candidate(backward_filter_algorithm::algo_1, 0, 1.5)};
    rules.search = algorithm_search::exhaustive;
    CHECK(gpu::dnn::detail::select_tried(timed, rules, {}) == std::optional<std::size_t>(0));
    CHECK(std::string(gpu::dnn::detail::plain_call(convolution_pass::backward_data)) ==
          "cudnnConvolutionBackwardData");
}

TEST_CASE("a backward explanation names its pass, and no_algorithm_error says which pass gave up",
          "[dnn]")
{
    backward_filter_explanation e;
    e.problem = small_problem().to_string();
    e.search = algorithm_search::deterministic;
    e.deterministic_only = true;
    e.workspace_budget_bytes = std::size_t{1} << 20;
    e.candidates = {candidate(backward_filter_algorithm::algo_0, 0, {}, false),
                    candidate(backward_filter_algorithm::fft, std::size_t{1} << 24)};
    gpu::dnn::detail::selection_rules rules;
    rules.deterministic_only = true;
    rules.workspace_budget_bytes = e.workspace_budget_bytes;
    REQUIRE_FALSE(gpu::dnn::detail::select_algorithm(e.candidates, rules).has_value());
    const std::string text = e.to_string();
    CHECK(text.starts_with("convolution backward filter fp32 nchw input [2, 3, 9, 11]"));
    CHECK_THAT(text, ContainsSubstring("policy: deterministic, deterministic only: yes"));
    CHECK_THAT(text, ContainsSubstring("\n  algo_0                 fma        0 B         -        "
                                       "    rejected: not deterministic"));
    CHECK_THAT(text, ContainsSubstring("\n  fft                    fma        16.00 MiB   -        "
                                       "    rejected: needs 16.00 MiB"));
    CHECK_THAT(text, !ContainsSubstring("epilogue:"));

    const gpu::dnn::no_algorithm_error error(e);
    CHECK(error.pass() == convolution_pass::backward_filter);
    CHECK(error.status_name() == "no_algorithm");
    CHECK(std::string(error.what())
              .starts_with("gpu::dnn::convolution_backward_filter: no_algorithm (3000): "
                           "no algorithm fits the policy and the workspace budget"));
    CHECK_THAT(std::string(error.what()),
               ContainsSubstring("convolution backward filter fp32 nchw"));
    CHECK(error.filter_explanation().candidates.size() == 2);
    CHECK_THROWS_WITH(error.explanation(),
                      ContainsSubstring("the error comes from the backward_filter pass"));
    CHECK_THROWS_AS(error.data_explanation(), std::logic_error);

    backward_data_explanation d;
    d.problem = "p";
    const gpu::dnn::no_algorithm_error data_error(d);
    CHECK(data_error.pass() == convolution_pass::backward_data);
    CHECK(std::string(data_error.what())
              .starts_with("gpu::dnn::convolution_backward_data: no_algorithm"));
    CHECK(data_error.data_explanation().problem == "p");
    CHECK(std::string(backward_data_explanation{}.to_string())
              .starts_with("convolution backward data "));
    const gpu::dnn::no_algorithm_error forward_error(gpu::dnn::convolution_explanation{});
    CHECK(forward_error.pass() == convolution_pass::forward);
    CHECK_NOTHROW(forward_error.explanation());
    CHECK_THROWS_WITH(forward_error.filter_explanation(),
                      ContainsSubstring("from the forward pass"));
}

// ---- host: the float64 references -----------------------------------------------------------

namespace {

// Problems whose every geometry feature the backward passes must undo: padding, stride that
// leaves input rows unread, groups, dilation, a 1x1 filter, and true convolution (flipped).
std::vector<convolution_problem> backward_problems()
{
    convolution_problem flipped{
        .input = {1, 2, 6, 7}, .filter = {3, 2, 2, 3}, .geometry = {.padding = {0, 1}}};
    flipped.geometry.mode = gpu::dnn::convolution_mode::convolution;
    return {
        {.input = {2, 3, 9, 11}, .filter = {4, 3, 3, 3}, .geometry = {.padding = {1, 1}}},
        {.input = {2, 8, 10, 11},
         .filter = {8, 4, 3, 3},
         .geometry = {.padding = {1, 1}, .stride = {2, 2}, .groups = 2}},
        {.input = {1, 4, 12, 12},
         .filter = {8, 4, 3, 5},
         .geometry = {.padding = {2, 1}, .dilation = {2, 1}}},
        {.input = {3, 5, 7, 6}, .filter = {6, 5, 1, 1}, .geometry = {.padding = {0, 0}}},
        flipped,
    };
}

} // namespace

TEST_CASE("the float64 backward references are the forward's adjoints and its finite differences",
          "[dnn]")
{
    // By hand: a 3x3 input, a 2x2 filter [1, 2; 3, 4], dy = [1, 0; 0, 0]: dx is the filter in the
    // top-left corner, dw the top-left 2x2 window of x.
    const std::vector<double> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
    const std::vector<double> w{1, 2, 3, 4};
    const std::vector<double> dy{1, 0, 0, 0};
    const gpu::dnn::convolution_geometry g{.padding = {0, 0}};
    CHECK(gpu::test::reference_backward_data(w, {1, 1, 2, 2}, dy, {1, 1, 3, 3}, g) ==
          std::vector<double>{1, 2, 0, 3, 4, 0, 0, 0, 0});
    CHECK(gpu::test::reference_backward_filter(x, {1, 1, 3, 3}, dy, {1, 1, 2, 2}, g) ==
          std::vector<double>{1, 2, 4, 5});
    CHECK(gpu::test::reference_backward_bias({1, 2, 3, 4, 10, 20, 30, 40}, {1, 2, 2, 2}) ==
          std::vector<double>{10, 100});
    CHECK(gpu::test::reference_backward_bias({1, 2, 10, 20, 3, 4, 30, 40}, {2, 2, 1, 2}) ==
          std::vector<double>{10, 100});

    std::uint32_t seed = 100;
    for (const convolution_problem& p : backward_problems()) {
        INFO(p.to_string());
        const std::vector<double> xr = gpu::test::random_doubles(p.input_elements(), ++seed);
        const std::vector<double> wr = gpu::test::random_doubles(p.filter_elements(), ++seed);
        const std::vector<double> dyr = gpu::test::random_doubles(p.output_elements(), ++seed);
        const std::vector<double> y =
            gpu::test::reference_convolution(xr, p.input, wr, p.filter, p.geometry);
        const std::vector<double> dx =
            gpu::test::reference_backward_data(wr, p.filter, dyr, p.input, p.geometry);
        const std::vector<double> dw =
            gpu::test::reference_backward_filter(xr, p.input, dyr, p.filter, p.geometry);
        // <conv(x, w), dy> = <x, dx> = <w, dw>.
        const double loss = gpu::test::dot(y, dyr);
        CHECK(gpu::test::dot(xr, dx) == Approx(loss).epsilon(1e-12));
        CHECK(gpu::test::dot(wr, dw) == Approx(loss).epsilon(1e-12));
        // The loss is linear in x and in w: central differences are exact up to rounding.
        for (const std::size_t i :
             {std::size_t{0}, p.input_elements() / 2, p.input_elements() - 1}) {
            CHECK(gpu::test::central_difference_input(xr, p.input, wr, p.filter, dyr, p.geometry, i,
                                                      0.5) == Approx(dx[i]).margin(1e-9));
        }
        for (const std::size_t i :
             {std::size_t{0}, p.filter_elements() / 3, p.filter_elements() - 1}) {
            CHECK(gpu::test::central_difference_filter(xr, p.input, wr, p.filter, dyr, p.geometry,
                                                       i, 0.5) == Approx(dw[i]).margin(1e-9));
        }
        // With a bias b, <y + b, dy> grows by <b, db>: db sums dy per output channel.
        const std::vector<double> db = gpu::test::reference_backward_bias(dyr, p.output());
        double sum = 0.0;
        for (const double v : dyr) {
            sum += v;
        }
        double db_sum = 0.0;
        for (const double v : db) {
            db_sum += v;
        }
        CHECK(db_sum == Approx(sum).epsilon(1e-12));
    }
}

// ---- GPU: the backward passes against the float64 references --------------------------------

namespace {

using gpu::test::error_of;
using gpu::test::tolerance;
using gpu::test::type_of;

// Random x, w and dy rounded to T (the references see exactly what the GPU sees), in the
// problem's layout, and the three gradients poisoned with NaN.
template <class T>
struct gradients {
    convolution_problem problem;
    std::vector<double> x_ref, w_ref, dy_ref;
    gpu::device_buffer<T> x, w, dy, dx, dw, db;

    gradients(const convolution_problem& p, std::uint32_t seed, gpu::stream_ref s)
        : problem(p), x(p.input_elements(), s), w(p.filter_elements(), s),
          dy(p.output_elements(), s), dx(p.input_elements(), s), dw(p.filter_elements(), s),
          db(static_cast<std::size_t>(p.filter[0]), s)
    {
        x_ref = gpu::test::upload_rounded(x, gpu::test::random_floats(x.size(), seed), p.input,
                                          p.layout);
        w_ref = gpu::test::upload_rounded(w, gpu::test::random_floats(w.size(), seed + 1), p.filter,
                                          p.layout);
        dy_ref = gpu::test::upload_rounded(dy, gpu::test::random_floats(dy.size(), seed + 2),
                                           p.output(), p.layout);
        poison();
    }

    void poison()
    {
        gpu::test::poison(dx);
        gpu::test::poison(dw);
        gpu::test::poison(db);
    }

    std::vector<double> dx_ref() const
    {
        return gpu::test::reference_backward_data(w_ref, problem.filter, dy_ref, problem.input,
                                                  problem.geometry);
    }
    std::vector<double> dw_ref() const
    {
        return gpu::test::reference_backward_filter(x_ref, problem.input, dy_ref, problem.filter,
                                                    problem.geometry);
    }
    std::vector<double> db_ref() const
    {
        return gpu::test::reference_backward_bias(dy_ref, problem.output());
    }

    std::vector<double> dx_out(gpu::stream_ref s) const
    {
        return gpu::test::download(dx, problem.input, problem.layout, s);
    }
    std::vector<double> dw_out(gpu::stream_ref s) const
    {
        return gpu::test::download(dw, problem.filter, problem.layout, s);
    }
    std::vector<double> db_out(gpu::stream_ref s) const
    {
        return gpu::test::download(db, gpu::dnn::detail::bias_dims(problem), problem.layout, s);
    }
};

// |<x, dx> - <conv(x, w), dy>| relative to ‖x‖‖dx‖: the adjoint identity on the GPU's dx (and
// likewise for w and dw), the check that ties the backward passes to the forward.
double adjoint_gap(const std::vector<double>& a, const std::vector<double>& gradient, double loss)
{
    return std::fabs(gpu::test::dot(a, gradient) - loss) /
           std::sqrt(gpu::test::dot(a, a) * gpu::test::dot(gradient, gradient));
}

template <class T>
void check_backward_under_every_policy(gpu::dnn::handle& h, gpu::stream_ref s)
{
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        for (convolution_problem p : backward_problems()) {
            p.type = type_of<T>();
            p.layout = layout;
            gradients<T> g(p, 7, s);
            const double tol = tolerance(p.type, false);
            const double loss = gpu::test::dot(
                gpu::test::reference_convolution(g.x_ref, p.input, g.w_ref, p.filter, p.geometry),
                g.dy_ref);
            for (const algorithm_search search :
                 {algorithm_search::heuristic, algorithm_search::exhaustive,
                  algorithm_search::deterministic}) {
                convolution_options options;
                options.search = search;
                convolution_backward_data data(h, p, options);
                convolution_backward_filter filter(h, p, options);
                INFO(p.to_string() << ", policy " << gpu::dnn::to_string(search) << "\n"
                                   << data.explain().to_string() << filter.explain().to_string());
                CHECK(data.workspace().size() == data.workspace_bytes());
                CHECK(filter.workspace_bytes() <= options.workspace_budget_bytes);
                g.poison();
                data.backward_data(h, g.w, g.dy, g.dx);
                filter.backward_filter(h, g.x, g.dy, g.dw);
                const std::vector<double> dx = g.dx_out(s);
                const std::vector<double> dw = g.dw_out(s);
                CHECK(error_of(dx, g.dx_ref()) < tol);
                CHECK(error_of(dw, g.dw_ref()) < tol);
                CHECK(adjoint_gap(g.x_ref, dx, loss) < tol);
                CHECK(adjoint_gap(g.w_ref, dw, loss) < tol);
                if (search == algorithm_search::deterministic) {
                    CHECK(data.explain().deterministic);
                    CHECK(filter.explain().deterministic);
                }
            }
        }
    }
}

} // namespace

TEST_CASE(
    "backward data and filter match the float64 references under every type, policy and layout",
    "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    SECTION("FP32")
    {
        check_backward_under_every_policy<float>(h, s);
    }
    SECTION("FP16")
    {
        check_backward_under_every_policy<__half>(h, s);
    }
    SECTION("BF16")
    {
        check_backward_under_every_policy<__nv_bfloat16>(h, s);
    }
}

namespace {

template <class T>
void check_backward_bias(gpu::dnn::handle& h, gpu::stream_ref s)
{
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        for (convolution_problem p : backward_problems()) {
            p.type = type_of<T>();
            p.layout = layout;
            INFO(p.to_string());
            gradients<T> g(p, 11, s);
            gpu::dnn::convolution_backward_bias(h, p, g.dy, g.db);
            CHECK(error_of(g.db_out(s), g.db_ref()) < tolerance(p.type, false));
        }
    }
}

} // namespace

TEST_CASE("the bias gradient matches the float64 reference for every type and layout", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    SECTION("FP32")
    {
        check_backward_bias<float>(h, s);
    }
    SECTION("FP16")
    {
        check_backward_bias<__half>(h, s);
    }
    SECTION("BF16")
    {
        check_backward_bias<__nv_bfloat16>(h, s);
    }
}

TEST_CASE("FP32 backward passes match central finite differences of the float64 forward",
          "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        convolution_problem p = backward_problems()[1]; // grouped and strided
        p.layout = layout;
        gradients<float> g(p, 19, s);
        convolution_backward_data data(h, p);
        convolution_backward_filter filter(h, p);
        data.backward_data(h, g.w, g.dy, g.dx);
        filter.backward_filter(h, g.x, g.dy, g.dw);
        const std::vector<double> dx = g.dx_out(s);
        const std::vector<double> dw = g.dw_out(s);
        INFO(p.to_string());
        for (std::size_t i = 0; i < dx.size(); i += 97) {
            const double fd = gpu::test::central_difference_input(
                g.x_ref, p.input, g.w_ref, p.filter, g.dy_ref, p.geometry, i, 0.25);
            CHECK(dx[i] == Approx(fd).margin(1e-5));
        }
        for (std::size_t i = 0; i < dw.size(); i += 13) {
            const double fd = gpu::test::central_difference_filter(
                g.x_ref, p.input, g.w_ref, p.filter, g.dy_ref, p.geometry, i, 0.25);
            CHECK(dw[i] == Approx(fd).margin(1e-4));
        }
    }
}

namespace {

// Runs each backward pass of a deterministic plan twice on the same inputs (the gradients
// poisoned in between) and requires bit-identical results.
template <class T>
void check_bitwise_repeatable(gpu::dnn::handle& h, gpu::stream_ref s, const convolution_problem& p)
{
    gradients<T> g(p, 31, s);
    convolution_options options;
    options.search = algorithm_search::deterministic;
    convolution_backward_data data(h, p, options);
    convolution_backward_filter filter(h, p, options);
    INFO(p.to_string() << "\n" << data.explain().to_string() << filter.explain().to_string());
    REQUIRE(data.explain().deterministic);
    REQUIRE(filter.explain().deterministic);
    std::vector<std::vector<T>> first;
    for (int run = 0; run < 2; ++run) {
        g.poison();
        data.backward_data(h, g.w, g.dy, g.dx);
        filter.backward_filter(h, g.x, g.dy, g.dw);
        gpu::dnn::convolution_backward_bias(h, p, g.dy, g.db);
        s.synchronize();
        const std::vector<std::vector<T>> results{g.dx.to_host(), g.dw.to_host(), g.db.to_host()};
        if (run == 0) {
            first = results;
            continue;
        }
        for (std::size_t i = 0; i < results.size(); ++i) {
            REQUIRE(std::memcmp(first[i].data(), results[i].data(), first[i].size() * sizeof(T)) ==
                    0);
        }
    }
    CHECK(error_of(g.dw_out(s), g.dw_ref()) < tolerance(p.type, false));
}

} // namespace

TEST_CASE("deterministic backward passes give bitwise-identical gradients run after run",
          "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    // Large enough in N x P x Q that atomics would reorder the filter gradient's sums.
    convolution_problem p{
        .input = {8, 32, 28, 28}, .filter = {64, 32, 3, 3}, .geometry = {.padding = {1, 1}}};
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        p.layout = layout;
        p.type = data_type::fp32;
        check_bitwise_repeatable<float>(h, s, p);
        p.type = data_type::fp16;
        check_bitwise_repeatable<__half>(h, s, p);
    }
}

TEST_CASE("gradient_update::accumulate adds each gradient to what the buffer holds", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const convolution_problem p = backward_problems()[0];
    gradients<float> g(p, 43, s);
    const std::vector<double> dx0 = gpu::test::upload_rounded(
        g.dx, gpu::test::random_floats(g.dx.size(), 3), p.input, p.layout);
    const std::vector<double> dw0 = gpu::test::upload_rounded(
        g.dw, gpu::test::random_floats(g.dw.size(), 4), p.filter, p.layout);
    const std::vector<double> db0 = gpu::test::upload_rounded(
        g.db, gpu::test::random_floats(g.db.size(), 5), gpu::dnn::detail::bias_dims(p), p.layout);
    convolution_backward_data data(h, p);
    convolution_backward_filter filter(h, p);
    data.backward_data(h, g.w, g.dy, g.dx, gradient_update::accumulate);
    filter.backward_filter(h, g.x, g.dy, g.dw, gradient_update::accumulate);
    gpu::dnn::convolution_backward_bias(h, p, g.dy, g.db, gradient_update::accumulate);
    const auto plus = [](std::vector<double> a, const std::vector<double>& b) {
        for (std::size_t i = 0; i < a.size(); ++i) {
            a[i] += b[i];
        }
        return a;
    };
    CHECK(error_of(g.dx_out(s), plus(dx0, g.dx_ref())) < 1e-5);
    CHECK(error_of(g.dw_out(s), plus(dw0, g.dw_ref())) < 1e-5);
    CHECK(error_of(g.db_out(s), plus(db0, g.db_ref())) < 1e-5);
    // Overwrite forgets what was there.
    filter.backward_filter(h, g.x, g.dy, g.dw, gradient_update::overwrite);
    CHECK(error_of(g.dw_out(s), g.dw_ref()) < 1e-5);
}

TEST_CASE("backward plans come from the plan cache per pass", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    gpu::dnn::clear_plan_cache();
    const convolution_problem p = backward_problems()[2];
    convolution_options options;
    options.search = algorithm_search::exhaustive;
    const convolution_backward_filter first(h, p, options);
    CHECK_FALSE(first.explain().from_cache);
    const convolution_backward_filter second(h, p, options);
    CHECK(second.explain().from_cache);
    CHECK(second.algorithm() == first.algorithm());
    CHECK(second.explain().math == first.explain().math);
    CHECK(second.workspace_bytes() == first.workspace_bytes());
    const convolution_backward_data data(h, p, options);
    CHECK_FALSE(data.explain().from_cache);
    const gpu::dnn::convolution forward(h, p, options);
    CHECK_FALSE(forward.explain().from_cache);
    const gpu::dnn::plan_cache_stats stats = gpu::dnn::plan_cache_statistics();
    CHECK(stats.entries == 3);
    CHECK(stats.hits == 1);
    CHECK(stats.misses == 3);
    gpu::dnn::clear_plan_cache();
}

TEST_CASE("exhaustive backward plans on real buffers report measured times", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    gpu::dnn::clear_plan_cache();
    const convolution_problem p{
        .input = {4, 16, 32, 32}, .filter = {32, 16, 3, 3}, .geometry = {.padding = {1, 1}}};
    gradients<float> g(p, 61, s);
    convolution_options options;
    options.search = algorithm_search::exhaustive;
    convolution_backward_data data(h, p, options, g.w, g.dy, g.dx);
    convolution_backward_filter filter(h, p, options, g.x, g.dy, g.dw);
    INFO(data.explain().to_string() << filter.explain().to_string());
    REQUIRE(data.explain().time_ms.has_value());
    REQUIRE(filter.explain().time_ms.has_value());
    for (const backward_filter_candidate& c : filter.explain().candidates) {
        if (!c.rejected) {
            CHECK(*c.time_ms >= *filter.explain().time_ms);
        }
    }
    g.poison();
    data.backward_data(h, g.w, g.dy, g.dx);
    filter.backward_filter(h, g.x, g.dy, g.dw);
    CHECK(error_of(g.dx_out(s), g.dx_ref()) < 1e-5);
    CHECK(error_of(g.dw_out(s), g.dw_ref()) < 1e-5);
    gpu::dnn::clear_plan_cache();
}

TEST_CASE("a backward workspace budget of 0 finds an algorithm without workspace or says none fits",
          "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const convolution_problem p = backward_problems()[0];
    gradients<float> g(p, 67, s);
    convolution_options options;
    options.workspace_budget_bytes = 0;
    try {
        convolution_backward_filter filter(h, p, options);
        INFO(filter.explain().to_string());
        CHECK(filter.workspace().empty());
        filter.backward_filter(h, g.x, g.dy, g.dw);
        CHECK(error_of(g.dw_out(s), g.dw_ref()) < 1e-5);
    } catch (const gpu::dnn::no_algorithm_error& e) {
        // Allowed, if it says clearly why.
        CHECK(e.pass() == convolution_pass::backward_filter);
        for (const backward_filter_candidate& c : e.filter_explanation().candidates) {
            CHECK(c.rejected);
            CHECK_FALSE(c.reason.empty());
        }
    }
}

TEST_CASE("backward runs refuse buffers that do not fit and report NaN when asked", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const convolution_problem p = backward_problems()[0];
    gradients<float> g(p, 71, s);
    convolution_backward_data data(h, p,
                                   convolution_options::from_profile(gpu::profile::development()));
    gpu::device_buffer<float> short_dx(g.dx.size() - 1, s);
    CHECK_THROWS_WITH(
        data.backward_data(h, g.w, g.dy, short_dx),
        ContainsSubstring("dx (the input gradient) has " + std::to_string(short_dx.size())));
    gpu::device_buffer<std::uint16_t> halves(g.w.size(), s);
    gpu::device_buffer<std::uint16_t> halves_dy(g.dy.size(), s);
    gpu::device_buffer<std::uint16_t> halves_dx(g.dx.size(), s);
    CHECK_THROWS_WITH(data.backward_data(h, halves, halves_dy, halves_dx),
                      ContainsSubstring("the problem is fp32"));
    CHECK_THROWS_WITH(data.backward_data_raw(h, g.w.data(), nullptr, g.dx.data()),
                      ContainsSubstring("null dy pointer"));
    CHECK_THROWS_AS(data.backward_data(h, g.w, g.dy, g.dx, static_cast<gradient_update>(5)),
                    std::invalid_argument);
    gpu::device_buffer<float> long_db(g.db.size() + 1, s);
    CHECK_THROWS_WITH(
        gpu::dnn::convolution_backward_bias(h, p, g.dy, long_db),
        ContainsSubstring("db (the bias gradient, one per output channel) has 5 elements"));
    CHECK_THROWS_WITH(gpu::dnn::convolution_backward_bias_raw(h, p, g.dy.data(), nullptr),
                      ContainsSubstring("null db pointer"));

    data.backward_data(h, g.w, g.dy, g.dx); // clean inputs: no complaint
    std::vector<float> dy = gpu::test::random_floats(g.dy.size(), 5);
    dy[17] = std::numeric_limits<float>::quiet_NaN();
    g.dy.copy_from_host(dy);
    CHECK_THROWS_AS(data.backward_data(h, g.w, g.dy, g.dx), gpu::numerics_error);

    convolution_backward_data moved = std::move(data);
    CHECK_THROWS_AS(data.backward_data(h, g.w, g.dy, g.dx),
                    std::logic_error); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_AS(data.backward_data_raw(h, g.w.data(), g.dy.data(), g.dx.data()),
                    std::logic_error); // NOLINT
    CHECK(moved.input_gradient_descriptor().get() != nullptr);
    CHECK(data.input_gradient_descriptor().get() == nullptr); // NOLINT(bugprone-use-after-move)
}

TEST_CASE("a backward pass on another stream moves the workspace there", "[dnn][gpu]")
{
    gpu::stream first(gpu::stream_flags::non_blocking);
    gpu::stream second(gpu::stream_flags::non_blocking);
    gpu::dnn::handle h(first);
    const convolution_problem p = backward_problems()[2];
    gradients<float> g(p, 73, first);
    convolution_backward_filter filter(h, p);
    first.synchronize();
    h.set_stream(second);
    filter.backward_filter(h, g.x, g.dy, g.dw);
    if (!filter.workspace().empty()) {
        CHECK(filter.workspace().stream() == second.ref());
    }
    CHECK(error_of(g.dw_out(second), g.dw_ref()) < 1e-5);
}
