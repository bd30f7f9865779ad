// gpu/dnn/activation_descriptor.hpp: set and read back through the real cuDNN, refusals, moves.
#include <gpu/dnn/activation_descriptor.hpp>

#include "catch.hpp"

#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

using Catch::Matchers::ContainsSubstring;
using gpu::dnn::activation_descriptor;
using gpu::dnn::activation_mode;

TEST_CASE("activation descriptors read back mode, coefficient and NaN propagation", "[dnn]")
{
    const activation_mode mode =
        GENERATE(activation_mode::relu, activation_mode::identity, activation_mode::clipped_relu,
                 activation_mode::sigmoid, activation_mode::tanh, activation_mode::elu);
    const bool propagate = GENERATE(true, false);
    const double coefficient = mode == activation_mode::clipped_relu ? 6.0
                               : mode == activation_mode::elu        ? 0.5
                                                                     : 0.0;
    INFO(gpu::dnn::to_string(mode) << " propagate " << propagate);
    const activation_descriptor a(mode, coefficient, propagate);
    CHECK(a.mode() == mode);
    CHECK(a.coefficient() == coefficient);
    CHECK(a.propagates_nan() == propagate);
}

TEST_CASE("activation descriptors describe themselves, and ReLU is the default", "[dnn]")
{
    const activation_descriptor relu;
    CHECK(relu.mode() == activation_mode::relu);
    CHECK(relu.to_string() == "relu");
    CHECK(activation_descriptor(activation_mode::clipped_relu, 6.0).to_string() ==
          "clipped_relu(6)");
    CHECK(activation_descriptor(activation_mode::elu, 0.25).to_string() == "elu(0.25)");
}

TEST_CASE("bad activation coefficients are refused with the value", "[dnn]")
{
    CHECK_THROWS_WITH(activation_descriptor(activation_mode::clipped_relu, 0.0),
                      ContainsSubstring("positive ceiling, got 0"));
    CHECK_THROWS_WITH(activation_descriptor(activation_mode::clipped_relu, -1.0),
                      ContainsSubstring("got -1"));
    CHECK_THROWS_AS(
        activation_descriptor(activation_mode::elu, std::numeric_limits<double>::quiet_NaN()),
        std::invalid_argument);
    CHECK_THROWS_WITH(activation_descriptor(static_cast<activation_mode>(42)),
                      ContainsSubstring("activation_mode value 42"));
}

TEST_CASE("activation descriptors move and leave an empty source", "[dnn]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<activation_descriptor>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<activation_descriptor>);
    activation_descriptor a(activation_mode::tanh);
    const cudnnActivationDescriptor_t raw = a.get();
    activation_descriptor b(std::move(a));
    CHECK(b.get() == raw);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_THROWS_AS(a.mode(), std::logic_error); // NOLINT(bugprone-use-after-move)
    activation_descriptor c;
    c = std::move(b);
    CHECK(c.mode() == activation_mode::tanh);
    CHECK_FALSE(b); // NOLINT(bugprone-use-after-move)
}
