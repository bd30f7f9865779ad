// gpu/dnn/pooling_descriptor.hpp: geometry checks and output shapes on the host, descriptors set
// and read back through the real cuDNN (which needs no GPU for them), refusals, moves.
#include <gpu/dnn/pooling_descriptor.hpp>

#include "catch.hpp"

#include <climits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::dnn::data_type;
using gpu::dnn::pooling_descriptor;
using gpu::dnn::pooling_geometry;
using gpu::dnn::pooling_mode;
using gpu::dnn::pooling_output_dims;
using gpu::dnn::tensor_descriptor;
using gpu::dnn::tensor_layout;

TEST_CASE("pooling output shapes follow PyTorch's floor formula", "[dnn]")
{
    // torch.nn.MaxPool2d(3, stride=2, padding=1) on a ResNet stem's output.
    CHECK(pooling_output_dims({32, 64, 112, 112},
                              {.window = {3, 3}, .padding = {1, 1}, .stride = {2, 2}}) ==
          std::vector<int>{32, 64, 56, 56});
    // The defaults are MaxPool2d(2); an odd size rounds down.
    CHECK(pooling_output_dims({1, 1, 5, 7}, {}) == std::vector<int>{1, 1, 2, 3});
    CHECK(pooling_output_dims({2, 3, 4, 6}, {.window = {4, 2}, .stride = {1, 2}}) ==
          std::vector<int>{2, 3, 1, 3});
    // Volumes: three spatial dimensions.
    CHECK(pooling_output_dims({2, 4, 8, 9, 10},
                              {.window = {2, 2, 2}, .padding = {0, 1, 1}, .stride = {2, 2, 2}}) ==
          std::vector<int>{2, 4, 4, 5, 6});
}

TEST_CASE("bad pooling geometries are refused with their values", "[dnn]")
{
    // One overload of gpu::dnn::validate, so that `{.padding = ...}` names no convolution.
    const auto validate = [](const pooling_geometry& g) { gpu::dnn::validate(g); };
    CHECK_NOTHROW(validate(pooling_geometry{}));
    CHECK_THROWS_WITH(validate({.window = {2, 2}, .padding = {0}, .stride = {2, 2}}),
                      ContainsSubstring("padding [0]") &&
                          ContainsSubstring("one entry per spatial dimension"));
    CHECK_THROWS_WITH(validate({.window = {2}, .padding = {0}, .stride = {2}}),
                      ContainsSubstring("window [2] has 1 spatial dimensions"));
    CHECK_THROWS_WITH(
        validate({.window = {2, 2, 2, 2}, .padding = {0, 0, 0, 0}, .stride = {1, 1, 1, 1}}),
        ContainsSubstring("has 4 spatial dimensions"));
    CHECK_THROWS_WITH(validate({.window = {2, 0}}),
                      ContainsSubstring("window [2, 0] has 0 in dimension 1"));
    CHECK_THROWS_WITH(validate({.stride = {-1, 2}}),
                      ContainsSubstring("stride [-1, 2] has -1 in dimension 0"));
    CHECK_THROWS_WITH(validate({.padding = {0, -1}}), ContainsSubstring("padding [0, -1] has -1"));
    // PyTorch's rule: at most half the window.
    CHECK_NOTHROW(validate({.window = {3, 4}, .padding = {1, 2}}));
    CHECK_THROWS_WITH(validate({.window = {3, 3}, .padding = {2, 1}}),
                      ContainsSubstring("padding 2 in dimension 0 is more than half the window 3"));
    CHECK_THROWS_WITH(validate({.mode = static_cast<pooling_mode>(9)}),
                      ContainsSubstring("pooling_mode value 9"));
}

TEST_CASE("pooling shapes that do not fit the geometry or cuDNN's int are refused", "[dnn]")
{
    CHECK_THROWS_WITH(
        pooling_output_dims({1, 1, 8}, {}),
        ContainsSubstring("the input [1, 1, 8] has 3 dimensions but the window [2, 2] needs 4"));
    CHECK_THROWS_WITH(pooling_output_dims({1, 0, 8, 8}, {}), ContainsSubstring("is 0"));
    CHECK_THROWS_WITH(
        pooling_output_dims({1, 1, 1, 8}, {.window = {3, 3}, .stride = {1, 1}}),
        ContainsSubstring("the window 3 is larger than the padded input 1 (1 + 2 * 0)"));
    CHECK_THROWS_WITH(pooling_output_dims({2, 2, 65536, 65536}, {}), ContainsSubstring("INT_MAX"));
    // A padded extent beyond int, although the input itself fits.
    CHECK_THROWS_WITH(pooling_output_dims({1, 1, INT_MAX - 1, 1},
                                          {.window = {4, 1}, .padding = {2, 0}, .stride = {1, 1}}),
                      ContainsSubstring("exceeds INT_MAX in dimension 2"));
}

TEST_CASE("pooling descriptors read back every mode, window, padding, stride and NaN option",
          "[dnn]")
{
    const pooling_mode mode =
        GENERATE(pooling_mode::max, pooling_mode::max_deterministic,
                 pooling_mode::average_include_padding, pooling_mode::average_exclude_padding);
    const bool nan = GENERATE(true, false);
    const pooling_geometry flat{
        .window = {3, 2}, .padding = {1, 0}, .stride = {2, 1}, .mode = mode, .propagate_nan = nan};
    const pooling_geometry volume{.window = {2, 3, 4},
                                  .padding = {1, 1, 2},
                                  .stride = {1, 2, 3},
                                  .mode = mode,
                                  .propagate_nan = nan};
    for (const pooling_geometry& g : {flat, volume}) {
        INFO(g.to_string());
        const pooling_descriptor d(g);
        CHECK(d.geometry() == g);
        CHECK(d.to_string() == g.to_string());
    }
}

TEST_CASE("pooling geometries describe themselves", "[dnn]")
{
    CHECK(pooling_geometry{}.to_string() == "max, window [2, 2], padding [0, 0], stride [2, 2]");
    CHECK(pooling_geometry{.mode = pooling_mode::average_exclude_padding, .propagate_nan = false}
              .to_string() == "average_exclude_padding, window [2, 2], padding [0, 0], stride [2, "
                              "2], NaN not propagated");
    CHECK(gpu::dnn::to_string(pooling_mode::max_deterministic) == "max_deterministic");
    CHECK(gpu::dnn::to_string(pooling_mode::average_include_padding) == "average_include_padding");
    CHECK(gpu::dnn::to_string(static_cast<pooling_mode>(7)) == "unknown");
}

TEST_CASE("cuDNN's pooling output shape equals the host's, in both layouts", "[dnn]")
{
    const tensor_layout layout = GENERATE(tensor_layout::nchw, tensor_layout::nhwc);
    struct shape {
        std::vector<int> input;
        pooling_geometry geometry;
    };
    const std::vector<shape> shapes{
        {{32, 64, 112, 112}, {.window = {3, 3}, .padding = {1, 1}, .stride = {2, 2}}},
        {{1, 3, 5, 7}, {}},
        {{2, 3, 9, 4},
         {.window = {5, 2},
          .padding = {2, 1},
          .stride = {3, 1},
          .mode = pooling_mode::average_exclude_padding}},
        {{2, 4, 8, 9, 10}, {.window = {2, 2, 2}, .padding = {0, 1, 1}, .stride = {2, 2, 2}}},
    };
    for (const shape& s : shapes) {
        INFO(gpu::dnn::to_string(s.input) << " " << s.geometry.to_string());
        const tensor_descriptor x(s.input, data_type::fp16, layout);
        const pooling_descriptor d(s.geometry);
        CHECK(d.output_dims(x) == pooling_output_dims(s.input, s.geometry));
    }
    // The host's checks come first, with the values cuDNN would not give.
    const tensor_descriptor small({1, 1, 2, 2}, data_type::fp32);
    CHECK_THROWS_WITH(pooling_descriptor({.window = {3, 3}, .padding = {1, 1}, .stride = {1, 1}})
                          .output_dims(tensor_descriptor({1, 1, 1, 2, 2}, data_type::fp32)),
                      ContainsSubstring("has 5 dimensions but the window [3, 3] needs 4"));
    CHECK_THROWS_AS(pooling_descriptor({.window = {3, 3}, .stride = {1, 1}}).output_dims(small),
                    std::invalid_argument);
}

TEST_CASE("pooling descriptors move and leave an empty source", "[dnn]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<pooling_descriptor>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<pooling_descriptor>);
    pooling_descriptor a({.window = {3, 3}, .padding = {1, 1}});
    const cudnnPoolingDescriptor_t raw = a.get();
    pooling_descriptor b(std::move(a));
    CHECK(b.get() == raw);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_THROWS_AS(a.geometry(), std::logic_error); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_AS(a.output_dims(tensor_descriptor({1, 1, 4, 4}, data_type::fp32)), // NOLINT
                    std::logic_error);
    pooling_descriptor c;
    c = std::move(b);
    CHECK(c.geometry().window == std::vector<int>{3, 3});
    CHECK_FALSE(b); // NOLINT(bugprone-use-after-move)
    // Adopted and released descriptors.
    pooling_descriptor adopted = pooling_descriptor::from_native_handle(c.release());
    CHECK_FALSE(c);
    CHECK(adopted.geometry().padding == std::vector<int>{1, 1});
}
