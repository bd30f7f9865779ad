// gpu/dnn/convolution_descriptor.hpp: geometry, compute and math read back from the real cuDNN;
// output shapes against the textbook formula; bad shapes refused with their values.
#include <gpu/dnn/convolution_descriptor.hpp>

#include "catch.hpp"

#include <climits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::dnn::convolution_descriptor;
using gpu::dnn::convolution_geometry;
using gpu::dnn::convolution_mode;
using gpu::dnn::data_type;
using gpu::dnn::filter_descriptor;
using gpu::dnn::math_type;
using gpu::dnn::tensor_descriptor;
using gpu::dnn::tensor_layout;

namespace {

struct shape_case {
    const char* name;
    std::vector<int> input;
    std::vector<int> filter;
    convolution_geometry geometry;
};

// The textbook formula, written out here independently of the library:
// out = floor((in + 2 * pad - dilation * (k - 1) - 1) / stride) + 1.
std::vector<int> textbook(const shape_case& c)
{
    std::vector<int> out{c.input[0], c.filter[0]};
    for (std::size_t i = 2; i < c.input.size(); ++i) {
        const std::size_t s = i - 2;
        const int numerator =
            c.input[i] + 2 * c.geometry.padding[s] - c.geometry.dilation[s] * (c.filter[i] - 1) - 1;
        out.push_back(numerator / c.geometry.stride[s] + 1);
    }
    return out;
}

convolution_geometry geometry2(std::vector<int> padding, std::vector<int> stride = {1, 1},
                               std::vector<int> dilation = {1, 1}, int groups = 1,
                               convolution_mode mode = convolution_mode::cross_correlation)
{
    return {std::move(padding), std::move(stride), std::move(dilation), groups, mode};
}

const std::vector<shape_case> shape_cases = {
    {"the demo's conv: 3x3, pad 1", {32, 3, 224, 224}, {64, 3, 3, 3}, geometry2({1, 1})},
    {"1x1", {8, 64, 56, 56}, {256, 64, 1, 1}, geometry2({0, 0})},
    {"1x1 stride 2", {8, 256, 56, 56}, {512, 256, 1, 1}, geometry2({0, 0}, {2, 2})},
    {"7x7 stride 2 pad 3 (ResNet stem)",
     {4, 3, 224, 224},
     {64, 3, 7, 7},
     geometry2({3, 3}, {2, 2})},
    {"7x7 no padding", {1, 3, 32, 32}, {16, 3, 7, 7}, geometry2({0, 0})},
    {"3x3 stride 2 pad 1", {2, 64, 56, 56}, {128, 64, 3, 3}, geometry2({1, 1}, {2, 2})},
    {"odd input, stride 2", {1, 8, 15, 15}, {8, 8, 3, 3}, geometry2({1, 1}, {2, 2})},
    {"asymmetric 1x7", {2, 16, 17, 17}, {16, 16, 1, 7}, geometry2({0, 3})},
    {"asymmetric 7x1", {2, 16, 17, 17}, {16, 16, 7, 1}, geometry2({3, 0})},
    {"asymmetric stride", {1, 4, 10, 10}, {4, 4, 3, 3}, geometry2({1, 1}, {1, 2})},
    {"asymmetric input and 5x3", {1, 2, 300, 500}, {4, 2, 5, 3}, geometry2({2, 1}, {3, 2})},
    {"dilation 2, pad 2", {1, 4, 32, 32}, {4, 4, 3, 3}, geometry2({2, 2}, {1, 1}, {2, 2})},
    {"dilation 4, no pad", {1, 4, 32, 32}, {4, 4, 3, 3}, geometry2({0, 0}, {1, 1}, {4, 4})},
    {"asymmetric dilation", {1, 4, 20, 30}, {4, 4, 3, 3}, geometry2({1, 0}, {1, 1}, {1, 3})},
    {"dilation with stride", {1, 3, 64, 64}, {8, 3, 3, 3}, geometry2({2, 2}, {2, 2}, {2, 2})},
    {"groups 2", {2, 8, 16, 16}, {16, 4, 3, 3}, geometry2({1, 1}, {1, 1}, {1, 1}, 2)},
    {"depthwise 3x3", {2, 32, 28, 28}, {32, 1, 3, 3}, geometry2({1, 1}, {1, 1}, {1, 1}, 32)},
    {"depthwise, multiplier 2",
     {1, 16, 14, 14},
     {32, 1, 3, 3},
     geometry2({0, 0}, {1, 1}, {1, 1}, 16)},
    {"groups 4, stride 2", {1, 16, 33, 33}, {8, 4, 3, 3}, geometry2({1, 1}, {2, 2}, {1, 1}, 4)},
    {"filter as large as the input", {1, 3, 5, 5}, {10, 3, 5, 5}, geometry2({0, 0})},
    {"filter as large as the padded input", {1, 3, 3, 3}, {2, 3, 5, 5}, geometry2({1, 1})},
    {"padding larger than the filter", {1, 1, 4, 4}, {1, 1, 3, 3}, geometry2({3, 3})},
    {"stride larger than the filter", {1, 2, 20, 20}, {2, 2, 2, 2}, geometry2({0, 0}, {5, 5})},
    {"1x1 image", {16, 3, 1, 1}, {8, 3, 1, 1}, geometry2({0, 0})},
    {"1-pixel-high input", {1, 1, 1, 100}, {1, 1, 1, 5}, geometry2({0, 2})},
    {"5x5 pad 2 stride 3", {3, 6, 31, 29}, {12, 6, 5, 5}, geometry2({2, 2}, {3, 3})},
    {"11x11 stride 4 (AlexNet)", {1, 3, 227, 227}, {96, 3, 11, 11}, geometry2({0, 0}, {4, 4})},
    {"large batch", {256, 3, 32, 32}, {64, 3, 3, 3}, geometry2({1, 1})},
    {"many channels, 1x1", {1, 1024, 7, 7}, {1024, 1024, 1, 1}, geometry2({0, 0})},
    {"true convolution mode",
     {1, 3, 10, 10},
     {4, 3, 3, 3},
     geometry2({0, 0}, {1, 1}, {1, 1}, 1, convolution_mode::convolution)},
    {"3-d, pad 1", {2, 4, 8, 16, 16}, {8, 4, 3, 3, 3}, {{1, 1, 1}, {1, 1, 1}, {1, 1, 1}, 1}},
    {"3-d, stride 2", {1, 2, 9, 9, 9}, {4, 2, 3, 3, 3}, {{0, 0, 0}, {2, 2, 2}, {1, 1, 1}, 1}},
    {"3-d asymmetric, groups 2",
     {1, 2, 5, 12, 7},
     {2, 1, 1, 3, 2},
     {{0, 1, 0}, {1, 2, 1}, {1, 1, 2}, 2}},
};

} // namespace

TEST_CASE("output shapes of 33 convolutions match the textbook formula", "[dnn]")
{
    REQUIRE(shape_cases.size() >= 30);
    for (const shape_case& c : shape_cases) {
        INFO(c.name << ": input " << gpu::dnn::to_string(c.input) << ", filter "
                    << gpu::dnn::to_string(c.filter) << ", " << c.geometry.to_string());
        const std::vector<int> expected = textbook(c);
        CHECK(gpu::dnn::convolution_output_dims(c.input, c.filter, c.geometry) == expected);
        for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
            const tensor_descriptor x(c.input, data_type::fp32, layout);
            const filter_descriptor w(c.filter, data_type::fp32, layout);
            const convolution_descriptor conv(c.geometry);
            CHECK(conv.output_dims(x, w) == expected); // cuDNN's own answer
        }
    }
}

TEST_CASE("convolution descriptors read back geometry, compute type and math type", "[dnn]")
{
    const shape_case& c = GENERATE(from_range(shape_cases));
    const data_type compute = GENERATE(data_type::fp32, data_type::fp16);
    const math_type math = GENERATE(math_type::default_math, math_type::tensor_op,
                                    math_type::tensor_op_allow_conversion, math_type::fma);
    INFO(c.name);
    const convolution_descriptor conv(c.geometry, compute, math);
    CHECK(conv.geometry() == c.geometry);
    CHECK(conv.compute_type() == compute);
    CHECK(conv.math() == math);
}

TEST_CASE("a convolution descriptor changes its math type and describes itself", "[dnn]")
{
    convolution_descriptor conv(geometry2({1, 1}));
    CHECK(conv.math() == math_type::default_math);
    conv.set_math(math_type::fma);
    CHECK(conv.math() == math_type::fma);
    CHECK(conv.to_string() == "padding [1, 1], stride [1, 1], dilation [1, 1], groups 1, "
                              "cross_correlation, compute fp32, math fma");
}

TEST_CASE("bad convolution parameters are refused before cuDNN, with the values", "[dnn]")
{
    CHECK_THROWS_WITH(convolution_descriptor(geometry2({1, 1}, {0, 1})),
                      ContainsSubstring("stride [0, 1] has 0") && ContainsSubstring("at least 1"));
    CHECK_THROWS_WITH(convolution_descriptor(geometry2({1, 1}, {1, -2})),
                      ContainsSubstring("stride [1, -2] has -2"));
    CHECK_THROWS_WITH(convolution_descriptor(geometry2({1, 1}, {1, 1}, {0, 1})),
                      ContainsSubstring("dilation [0, 1] has 0"));
    CHECK_THROWS_WITH(convolution_descriptor(geometry2({-1, 1})),
                      ContainsSubstring("padding [-1, 1] is negative"));
    CHECK_THROWS_WITH(convolution_descriptor(geometry2({1, 1}, {1, 1}, {1, 1}, 0)),
                      ContainsSubstring("groups is 0"));
    CHECK_THROWS_WITH(convolution_descriptor(convolution_geometry{{1, 1}, {1}, {1, 1}, 1}),
                      ContainsSubstring("one entry per spatial dimension"));
    CHECK_THROWS_WITH(convolution_descriptor(convolution_geometry{{}, {}, {}, 1}),
                      ContainsSubstring("one entry per spatial dimension"));
    CHECK_THROWS_WITH(convolution_descriptor(geometry2({1, 1}), data_type::bf16),
                      ContainsSubstring("compute type bf16"));
}

TEST_CASE("shapes that do not make a convolution are refused with their values", "[dnn]")
{
    using gpu::dnn::validate_convolution;
    // Channel counts that do not match.
    CHECK_THROWS_WITH(
        validate_convolution({1, 3, 8, 8}, {64, 4, 3, 3}, geometry2({1, 1})),
        ContainsSubstring("the input has 3 channels but the filter [64, 4, 3, 3] takes 4 per "
                          "group x 1 group = 4"));
    // A filter larger than the padded input, plain and dilated.
    CHECK_THROWS_WITH(
        validate_convolution({1, 3, 4, 4}, {8, 3, 7, 7}, geometry2({0, 0})),
        ContainsSubstring("the filter spans 7 (size 7, dilation 1) but the padded input is "
                          "only 4 (size 4 + 2 x padding 0)"));
    CHECK_THROWS_WITH(
        validate_convolution({1, 3, 8, 8}, {8, 3, 3, 3}, geometry2({0, 0}, {1, 1}, {4, 4})),
        ContainsSubstring("spans 9 (size 3, dilation 4)"));
    CHECK_THROWS_WITH(validate_convolution({1, 3, 16, 2}, {8, 3, 3, 5}, geometry2({0, 1})),
                      ContainsSubstring("in spatial dimension 1"));
    // Zero or negative stride.
    CHECK_THROWS_WITH(validate_convolution({1, 3, 8, 8}, {8, 3, 3, 3}, geometry2({1, 1}, {0, 0})),
                      ContainsSubstring("stride [0, 0]"));
    // Groups that do not divide the channels.
    CHECK_THROWS_WITH(
        validate_convolution({1, 6, 8, 8}, {8, 2, 3, 3}, geometry2({1, 1}, {1, 1}, {1, 1}, 4)),
        ContainsSubstring("groups 4 does not divide the input's 6 channels"));
    CHECK_THROWS_WITH(
        validate_convolution({1, 8, 8, 8}, {6, 2, 3, 3}, geometry2({1, 1}, {1, 1}, {1, 1}, 4)),
        ContainsSubstring("groups 4 does not divide the filter's 6 output channels"));
    CHECK_THROWS_WITH(
        validate_convolution({1, 8, 8, 8}, {8, 4, 3, 3}, geometry2({1, 1}, {1, 1}, {1, 1}, 4)),
        ContainsSubstring("takes 4 per group x 4 groups = 16"));
    // Ranks that differ, and non-positive dimensions.
    CHECK_THROWS_WITH(validate_convolution({1, 3, 8, 8}, {8, 3, 3, 3, 3}, geometry2({1, 1})),
                      ContainsSubstring("needs 4 each"));
    CHECK_THROWS_WITH(validate_convolution({0, 3, 8, 8}, {8, 3, 3, 3}, geometry2({1, 1})),
                      ContainsSubstring("dimension 0 of [0, 3, 8, 8] is 0"));
    // The same checks guard the textbook formula and cuDNN's answer.
    CHECK_THROWS_AS(
        gpu::dnn::convolution_output_dims({1, 3, 4, 4}, {8, 3, 7, 7}, geometry2({0, 0})),
        std::invalid_argument);
    const convolution_descriptor conv(geometry2({0, 0}));
    CHECK_THROWS_AS(conv.output_dims(tensor_descriptor({1, 3, 4, 4}, data_type::fp32),
                                     filter_descriptor({8, 3, 7, 7}, data_type::fp32)),
                    std::invalid_argument);
    CHECK_THROWS_WITH(conv.output_dims(tensor_descriptor({1, 3, 8, 8}, data_type::fp32),
                                       filter_descriptor({8, 3, 3, 3}, data_type::fp16)),
                      ContainsSubstring("the input is fp32 but the filter is fp16"));
}

TEST_CASE("shape arithmetic near 2^31 is done in 64 bits and refused beyond int", "[dnn]")
{
    using gpu::dnn::convolution_output_dims;
    const auto refused_by_both = [](const std::vector<int>& x, const std::vector<int>& w,
                                    const convolution_geometry& g, const std::string& text) {
        INFO("input " << gpu::dnn::to_string(x) << ", filter " << gpu::dnn::to_string(w) << ", "
                      << g.to_string());
        CHECK_THROWS_WITH(convolution_output_dims(x, w, g), ContainsSubstring(text));
        // cuDNN's own call is never reached: it would answer BAD_PARAM without the value, or
        // (padding 2^31 - 1) a wrong size.
        const convolution_descriptor conv(g);
        CHECK_THROWS_WITH(conv.output_dims(tensor_descriptor(x, data_type::fp32),
                                           filter_descriptor(w, data_type::fp32)),
                          ContainsSubstring(text));
    };
    // The padded input exceeds int: 8 + 2 x 2^30, and 8 + 2 x (2^31 - 1).
    refused_by_both({1, 1, 8, 8}, {1, 1, 3, 3}, geometry2({1 << 30, 1}),
                    "the padded input is 2147483656 (size 8 + 2 x padding 1073741824), more "
                    "than INT_MAX");
    refused_by_both({1, 1, 8, 8}, {1, 1, 3, 3}, geometry2({1, INT_MAX}, {INT_MAX, INT_MAX}),
                    "the padded input is 4294967302");
    refused_by_both({1, 1, INT_MAX, 1}, {1, 1, 1, 1}, geometry2({1, 0}, {INT_MAX, 1}),
                    "the padded input is 2147483649");
    // A dilated filter far beyond int: (2^31 - 1) x 2 + 1 (cuDNN's int arithmetic wraps it
    // around and answers an output of 12 rows).
    refused_by_both({1, 1, 8, 8}, {1, 1, 3, 3}, geometry2({1, 1}, {1, 1}, {INT_MAX, 1}),
                    "the filter spans 4294967295 (size 3, dilation 2147483647)");
    // An output of more than INT_MAX elements made by padding alone.
    refused_by_both({1, 1, 1, 1}, {1, 1, 1, 1}, geometry2({40000, 40000}),
                    "[1, 1, 80001, 80001] has more than INT_MAX");

    // At the limit: a padded input of exactly INT_MAX gives an output of INT_MAX - 2 rows, and
    // cuDNN agrees.
    const std::vector<int> x{1, 1, 9, 1};
    const std::vector<int> w{1, 1, 3, 1};
    const convolution_geometry edge = geometry2({(INT_MAX - 9) / 2, 0});
    const std::vector<int> expected{1, 1, INT_MAX - 2, 1};
    CHECK(convolution_output_dims(x, w, edge) == expected);
    CHECK(convolution_descriptor(edge).output_dims(tensor_descriptor(x, data_type::fp32),
                                                   filter_descriptor(w, data_type::fp32)) ==
          expected);
    refused_by_both(x, w, geometry2({(INT_MAX - 9) / 2 + 1, 0}), "more than INT_MAX");
    // The largest stride and dilation that fit.
    const convolution_geometry far = geometry2({1, 1}, {INT_MAX, 1}, {1, 3});
    CHECK(convolution_output_dims({2, 3, 8, 8}, {4, 3, 3, 3}, far) == std::vector<int>{2, 4, 1, 4});
    CHECK(convolution_descriptor(far).output_dims(
              tensor_descriptor({2, 3, 8, 8}, data_type::fp32),
              filter_descriptor({4, 3, 3, 3}, data_type::fp32)) == std::vector<int>{2, 4, 1, 4});
}

TEST_CASE("enumerators that cudagap does not name are refused", "[dnn]")
{
    convolution_geometry g = geometry2({1, 1});
    g.mode = static_cast<convolution_mode>(2);
    CHECK_THROWS_WITH(gpu::dnn::validate(g), ContainsSubstring("convolution_mode value 2"));
    CHECK_THROWS_WITH(convolution_descriptor(geometry2({1, 1}), static_cast<data_type>(9)),
                      ContainsSubstring("data_type value 9"));
    CHECK_THROWS_WITH(
        convolution_descriptor(geometry2({1, 1}), data_type::fp32, static_cast<math_type>(-3)),
        ContainsSubstring("math_type value -3"));
    convolution_descriptor conv(geometry2({1, 1}));
    CHECK_THROWS_AS(conv.set_math(static_cast<math_type>(4)), std::invalid_argument);
    CHECK(conv.math() == math_type::default_math);
}

TEST_CASE("convolution descriptors move and leave an empty source", "[dnn]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<convolution_descriptor>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<convolution_descriptor>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<convolution_descriptor>);
    convolution_descriptor a(geometry2({2, 2}, {1, 1}, {2, 2}));
    const cudnnConvolutionDescriptor_t raw = a.get();
    convolution_descriptor b(std::move(a));
    CHECK(b.get() == raw);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_THROWS_WITH(
        a.geometry(),
        ContainsSubstring("holds no cuDNN descriptor")); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_AS(a.set_math(math_type::fma),
                    std::logic_error); // NOLINT(bugprone-use-after-move)
    convolution_descriptor c(geometry2({0, 0}));
    c = std::move(b);
    CHECK(c.geometry().dilation == std::vector<int>{2, 2});
    CHECK_FALSE(b); // NOLINT(bugprone-use-after-move)
    convolution_descriptor adopted = convolution_descriptor::from_native_handle(c.release());
    CHECK(adopted.get() == raw);
}
