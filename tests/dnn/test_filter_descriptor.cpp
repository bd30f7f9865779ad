// gpu/dnn/filter_descriptor.hpp: create, set and read back through the real cuDNN, refusals,
// moves.
#include <gpu/dnn/filter_descriptor.hpp>

#include "catch.hpp"

#include <climits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::dnn::data_type;
using gpu::dnn::filter_descriptor;
using gpu::dnn::tensor_layout;

TEST_CASE("filter descriptors read back what they were set to", "[dnn]")
{
    const std::vector<int> dims = GENERATE(
        std::vector<int>{64, 3, 3, 3}, std::vector<int>{64, 3, 7, 7},
        std::vector<int>{256, 64, 1, 1}, std::vector<int>{32, 1, 3, 3},
        std::vector<int>{8, 4, 3, 5}, std::vector<int>{16, 8, 3, 3, 3}, std::vector<int>{4, 2, 5});
    const data_type type = GENERATE(data_type::fp32, data_type::fp16, data_type::bf16);
    const tensor_layout layout = GENERATE(tensor_layout::nchw, tensor_layout::nhwc);
    INFO(gpu::dnn::to_string(dims)
         << " " << gpu::dnn::to_string(type) << " " << gpu::dnn::to_string(layout));

    const filter_descriptor w(dims, type, layout);
    REQUIRE(w);
    CHECK(w.rank() == static_cast<int>(dims.size()));
    CHECK(w.dims() == dims);
    CHECK(w.type() == type);
    CHECK(w.layout() == layout);
    std::size_t count = 1;
    for (const int d : dims) {
        count *= static_cast<std::size_t>(d);
    }
    CHECK(w.element_count() == count);
    CHECK(w.size_bytes() == count * gpu::dnn::element_size(type));
}

TEST_CASE("a filter descriptor describes itself", "[dnn]")
{
    CHECK(filter_descriptor({64, 3, 3, 3}, data_type::fp32).to_string() ==
          "fp32 nchw [64, 3, 3, 3]");
    CHECK(filter_descriptor({64, 3, 3, 3}, data_type::bf16, tensor_layout::nhwc).to_string() ==
          "bf16 nhwc [64, 3, 3, 3]");
}

TEST_CASE("bad filter shapes are refused before cuDNN, with the values", "[dnn]")
{
    CHECK_THROWS_WITH(filter_descriptor({64, 3, 0, 3}, data_type::fp32),
                      ContainsSubstring("dimension 2 of [64, 3, 0, 3] is 0"));
    CHECK_THROWS_WITH(filter_descriptor({64, 3}, data_type::fp32),
                      ContainsSubstring("2 dimensions [64, 3]"));
    CHECK_THROWS_AS(filter_descriptor({64, -3, 3, 3}, data_type::fp16), std::invalid_argument);
    CHECK_THROWS_WITH(filter_descriptor({65536, 65536, 1}, data_type::fp16),
                      ContainsSubstring("INT_MAX"));
    CHECK_THROWS_WITH(filter_descriptor({1, 1, 1, 1, 1, 1, 1, 1, 1}, data_type::fp32),
                      ContainsSubstring("9 dimensions"));
    CHECK_THROWS_WITH(filter_descriptor({8, 3, 3, 3}, static_cast<data_type>(5)),
                      ContainsSubstring("data_type value 5"));
    CHECK_THROWS_WITH(
        filter_descriptor({8, 3, 3, 3}, data_type::fp32, static_cast<tensor_layout>(2)),
        ContainsSubstring("tensor_layout value 2"));
}

TEST_CASE("an adopted filter's element count does not wrap around size_t", "[dnn]")
{
    // cuDNN accepts a filter of 8 x INT_MAX, whose element count (about 2^248) no integer holds.
    cudnnFilterDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateFilterDescriptor(&raw));
    const filter_descriptor w = filter_descriptor::from_native_handle(raw);
    const std::vector<int> dims(8, INT_MAX);
    if (cudnnSetFilterNdDescriptor(raw, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 8, dims.data()) !=
        CUDNN_STATUS_SUCCESS) {
        WARN("this cuDNN refuses a filter of 8 x INT_MAX (cuDNN 9.19 accepts it): nothing to read");
        return;
    }
    CHECK(w.dims() == dims);
    CHECK_THROWS_WITH(w.element_count(), ContainsSubstring("does not fit in size_t"));
    CHECK_THROWS_AS(w.element_count(), std::domain_error);
}

TEST_CASE("filter descriptors move and leave an empty source", "[dnn]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<filter_descriptor>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<filter_descriptor>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<filter_descriptor>);

    filter_descriptor a({8, 4, 3, 3}, data_type::fp16);
    const cudnnFilterDescriptor_t raw = a.get();
    filter_descriptor b(std::move(a));
    CHECK(b.get() == raw);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_THROWS_WITH(
        a.layout(),
        ContainsSubstring("holds no cuDNN descriptor")); // NOLINT(bugprone-use-after-move)
    filter_descriptor c({1, 1, 1}, data_type::fp32);
    c = std::move(b);
    CHECK(c.dims() == std::vector<int>{8, 4, 3, 3});
    CHECK_FALSE(b); // NOLINT(bugprone-use-after-move)
    filter_descriptor adopted = filter_descriptor::from_native_handle(c.release());
    CHECK(adopted.get() == raw);
    CHECK(adopted.type() == data_type::fp16);
}
