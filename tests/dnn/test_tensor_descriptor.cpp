// gpu/dnn/tensor_descriptor.hpp: create, set and read back through the real cuDNN (no GPU
// needed), packed strides, refusals, moves.
#include <gpu/dnn/tensor_descriptor.hpp>

#include <catch2/catch.hpp>

#include <climits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::Contains;
using gpu::dnn::data_type;
using gpu::dnn::tensor_descriptor;
using gpu::dnn::tensor_layout;

TEST_CASE("packed strides of NCHW and NHWC tensors", "[dnn]")
{
    CHECK(gpu::dnn::packed_strides({32, 3, 224, 224}, tensor_layout::nchw) ==
          std::vector<int>{150528, 50176, 224, 1});
    CHECK(gpu::dnn::packed_strides({32, 3, 224, 224}, tensor_layout::nhwc) ==
          std::vector<int>{150528, 1, 672, 3});
    // 5-d: NCDHW and NDHWC.
    CHECK(gpu::dnn::packed_strides({2, 4, 5, 6, 7}, tensor_layout::nchw) ==
          std::vector<int>{840, 210, 42, 7, 1});
    CHECK(gpu::dnn::packed_strides({2, 4, 5, 6, 7}, tensor_layout::nhwc) ==
          std::vector<int>{840, 1, 168, 28, 4});
    CHECK(gpu::dnn::packed_strides({5, 3}, tensor_layout::nchw) == std::vector<int>{3, 1});
    CHECK_THROWS_AS(gpu::dnn::packed_strides({5}, tensor_layout::nchw), std::invalid_argument);
}

TEST_CASE("tensor descriptors read back what they were set to", "[dnn]")
{
    const std::vector<int> dims = GENERATE(std::vector<int>{32, 3, 224, 224},
                                           std::vector<int>{1, 1, 1, 1},
                                           std::vector<int>{8, 64, 56, 56},
                                           std::vector<int>{2, 16, 7, 9},
                                           std::vector<int>{4, 3, 8, 16, 16},
                                           std::vector<int>{1, 2, 3, 4, 5, 6},
                                           std::vector<int>{3, 5, 7});
    const data_type type = GENERATE(data_type::fp32, data_type::fp16, data_type::bf16);
    const tensor_layout layout = GENERATE(tensor_layout::nchw, tensor_layout::nhwc);
    INFO(gpu::dnn::to_string(dims) << " " << gpu::dnn::to_string(type) << " "
                                   << gpu::dnn::to_string(layout));

    const tensor_descriptor t(dims, type, layout);
    REQUIRE(t);
    CHECK(t.rank() == static_cast<int>(dims.size()));
    CHECK(t.dims() == dims);
    CHECK(t.type() == type);
    CHECK(t.strides() == gpu::dnn::packed_strides(dims, layout));
    std::size_t count = 1;
    for (const int d : dims) {
        count *= static_cast<std::size_t>(d);
    }
    CHECK(t.element_count() == count);
    CHECK(t.size_bytes() == count * gpu::dnn::element_size(type));
    // The layout is recovered from the strides; where both layouts give the same strides
    // (C == 1 and no spatial extent), either answer describes the memory correctly.
    REQUIRE(t.layout().has_value());
    CHECK(gpu::dnn::packed_strides(dims, *t.layout()) == t.strides());
    if (gpu::dnn::packed_strides(dims, tensor_layout::nchw) !=
        gpu::dnn::packed_strides(dims, tensor_layout::nhwc)) {
        CHECK(*t.layout() == layout);
    }
}

TEST_CASE("a tensor descriptor describes itself", "[dnn]")
{
    CHECK(tensor_descriptor({32, 3, 224, 224}, data_type::fp16, tensor_layout::nhwc).to_string() ==
          "fp16 nhwc [32, 3, 224, 224]");
    CHECK(tensor_descriptor({32, 64, 224, 224}, data_type::fp32).to_string() ==
          "fp32 nchw [32, 64, 224, 224]");
}

TEST_CASE("bad tensor shapes are refused before cuDNN, with the values", "[dnn]")
{
    CHECK_THROWS_WITH(tensor_descriptor({32, 0, 224, 224}, data_type::fp32),
                      Contains("dimension 1 of [32, 0, 224, 224] is 0"));
    CHECK_THROWS_WITH(tensor_descriptor({-2, 3, 4, 4}, data_type::fp32),
                      Contains("dimension 0 of [-2, 3, 4, 4] is -2"));
    CHECK_THROWS_WITH(tensor_descriptor({7}, data_type::fp32), Contains("1 dimensions [7]"));
    CHECK_THROWS_WITH(tensor_descriptor({1, 1, 1, 1, 1, 1, 1, 1, 1}, data_type::fp32),
                      Contains("9 dimensions"));
    CHECK_THROWS_WITH(tensor_descriptor({64, 64, 1024, 1024}, data_type::fp32),
                      Contains("more than INT_MAX"));
    CHECK_THROWS_AS(tensor_descriptor({64, 64, 1024, 1024}, data_type::fp32), std::invalid_argument);
}

TEST_CASE("tensor descriptors move and leave an empty source", "[dnn]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<tensor_descriptor>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<tensor_descriptor>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<tensor_descriptor>);

    tensor_descriptor a({1, 2, 3, 4}, data_type::fp32);
    const cudnnTensorDescriptor_t raw = a.get();
    tensor_descriptor b(std::move(a));
    CHECK(b.get() == raw);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_FALSE(a);            // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_WITH(a.dims(), Contains("holds no cuDNN descriptor")); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_AS(a.size_bytes(), std::logic_error);                   // NOLINT(bugprone-use-after-move)

    tensor_descriptor c({5, 6, 7, 8}, data_type::fp16);
    c = std::move(b);
    CHECK(c.get() == raw);
    CHECK(c.dims() == std::vector<int>{1, 2, 3, 4});
    CHECK(b.get() == nullptr); // NOLINT(bugprone-use-after-move)

    tensor_descriptor adopted = tensor_descriptor::from_native_handle(c.release());
    CHECK(adopted.get() == raw);
    CHECK_FALSE(c);
    CHECK(adopted.type() == data_type::fp32);
}

TEST_CASE("an adopted descriptor with other strides or types is read honestly", "[dnn]")
{
    cudnnTensorDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateTensorDescriptor(&raw));
    tensor_descriptor t = tensor_descriptor::from_native_handle(raw);
    // A row padded to 8 elements: neither packed layout.
    GPU_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(raw, CUDNN_DATA_FLOAT, 2, 3, 4, 5, 96, 32, 8, 1));
    CHECK_FALSE(t.layout().has_value());
    CHECK(t.strides() == std::vector<int>{96, 32, 8, 1});
    CHECK_THAT(t.to_string(), Contains("strides [96, 32, 8, 1]"));
    GPU_CUDNN_CHECK(cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW, CUDNN_DATA_INT8, 1, 4, 2, 2));
    CHECK_THROWS_AS(t.type(), std::domain_error);
}
