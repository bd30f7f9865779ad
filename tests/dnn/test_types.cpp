// gpu/dnn/types.hpp: the names and sizes of the cuDNN wrapper's vocabulary.
#include <gpu/dnn/types.hpp>

#include "catch.hpp"

#include <set>
#include <string>
#include <type_traits>

using gpu::dnn::activation_mode;
using gpu::dnn::convolution_mode;
using gpu::dnn::data_type;
using gpu::dnn::math_type;
using gpu::dnn::tensor_layout;

TEST_CASE("every enumerator of the dnn vocabulary has a distinct name", "[dnn]")
{
    CHECK(gpu::dnn::to_string(data_type::fp32) == "fp32");
    CHECK(gpu::dnn::to_string(data_type::fp16) == "fp16");
    CHECK(gpu::dnn::to_string(data_type::bf16) == "bf16");
    CHECK(gpu::dnn::to_string(tensor_layout::nchw) == "nchw");
    CHECK(gpu::dnn::to_string(tensor_layout::nhwc) == "nhwc");
    CHECK(gpu::dnn::to_string(convolution_mode::cross_correlation) == "cross_correlation");
    CHECK(gpu::dnn::to_string(convolution_mode::convolution) == "convolution");
    CHECK(gpu::dnn::to_string(gpu::dnn::algorithm_search::heuristic) == "heuristic");
    CHECK(gpu::dnn::to_string(gpu::dnn::algorithm_search::exhaustive) == "exhaustive");
    CHECK(gpu::dnn::to_string(gpu::dnn::algorithm_search::deterministic) == "deterministic");
    CHECK(gpu::dnn::to_string(static_cast<gpu::dnn::algorithm_search>(7)) == "unknown");

    std::set<std::string> math_names;
    for (const math_type m : {math_type::default_math, math_type::tensor_op,
                              math_type::tensor_op_allow_conversion, math_type::fma}) {
        math_names.emplace(gpu::dnn::to_string(m));
    }
    CHECK(math_names ==
          std::set<std::string>{"default", "tensor_op", "tensor_op_allow_conversion", "fma"});

    std::set<std::string> activation_names;
    for (const activation_mode a :
         {activation_mode::identity, activation_mode::relu, activation_mode::clipped_relu,
          activation_mode::sigmoid, activation_mode::tanh, activation_mode::elu}) {
        activation_names.emplace(gpu::dnn::to_string(a));
    }
    CHECK(activation_names.size() == 6);
    CHECK(activation_names.count("relu") == 1);
}

TEST_CASE("element sizes are those of float, __half and __nv_bfloat16", "[dnn]")
{
    STATIC_REQUIRE(gpu::dnn::element_size(data_type::fp32) == sizeof(float));
    STATIC_REQUIRE(gpu::dnn::element_size(data_type::fp16) == 2);
    STATIC_REQUIRE(gpu::dnn::element_size(data_type::bf16) == 2);
    CHECK(gpu::dnn::element_size(static_cast<data_type>(3)) == 0);
    CHECK(gpu::dnn::to_string(static_cast<data_type>(3)) == "unknown");
}

TEST_CASE("every data_type round-trips through the core's element type", "[dnn]")
{
    for (const data_type type : {data_type::fp32, data_type::fp16, data_type::bf16}) {
        const gpu::element_type element = gpu::dnn::to_element_type(type);
        CHECK(gpu::dnn::to_data_type(element) == type);
        CHECK(gpu::dnn::to_string(type) == gpu::enumerator_name(element));
        CHECK(gpu::dnn::element_size(type) == gpu::element_size(element));
    }
}

TEST_CASE("every element type is a data_type or refused by name", "[dnn]")
{
    for (const gpu::element_type element : {gpu::element_type::fp32, gpu::element_type::fp64,
                                            gpu::element_type::fp16, gpu::element_type::bf16}) {
        if (element == gpu::element_type::fp64) {
            CHECK_THROWS_WITH(gpu::dnn::to_data_type(element),
                              "gpu::dnn::to_data_type: FP64 is not a data_type; FP32, FP16 or "
                              "BF16 are");
        } else {
            CHECK(gpu::dnn::to_element_type(gpu::dnn::to_data_type(element)) == element);
        }
    }
    CHECK_THROWS_WITH(gpu::dnn::to_data_type(static_cast<gpu::element_type>(9)),
                      "gpu::dnn::to_data_type: element_type value 9 is none of FP32, FP64, FP16 "
                      "or BF16");
}

// cudagap 0.1 spelled the search policy gpu::algorithm_search; the alias keeps that compiling
// (with a deprecation warning) for one release.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
static_assert(std::is_same_v<gpu::algorithm_search, gpu::dnn::algorithm_search>);
#pragma GCC diagnostic pop
