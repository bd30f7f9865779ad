// gpu/dnn/tensor_descriptor.hpp: create, set and read back through the real cuDNN (no GPU
// needed), packed strides, refusals, moves.
#include <gpu/dnn/tensor_descriptor.hpp>

#include "catch.hpp"

#include <array>
#include <climits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
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

TEST_CASE("packed strides are computed in 64 bits and refused beyond int", "[dnn]")
{
    // The product past the outermost stride is never used: it may exceed int (2^32 here, which
    // was signed overflow when strides were computed in int).
    CHECK(gpu::dnn::packed_strides({65536, 65536, 1}, tensor_layout::nchw) ==
          std::vector<int>{65536, 1, 1});
    CHECK(gpu::dnn::packed_strides({65536, 1, 65536}, tensor_layout::nhwc) ==
          std::vector<int>{65536, 1, 1});
    CHECK(gpu::dnn::packed_strides({2, 1, 32768, 65535}, tensor_layout::nchw) ==
          std::vector<int>{2147450880, 2147450880, 65535, 1});
    // A stride that int cannot hold is named.
    CHECK_THROWS_WITH(
        gpu::dnn::packed_strides({2, 65536, 65536, 1}, tensor_layout::nchw),
        ContainsSubstring("dimension 0 of [2, 65536, 65536, 1] would have the nchw stride "
                          "4294967296") &&
            ContainsSubstring("INT_MAX"));
    CHECK_THROWS_WITH(gpu::dnn::packed_strides({2, 65536, 1, 65536}, tensor_layout::nhwc),
                      ContainsSubstring("nhwc stride 4294967296"));
    CHECK_THROWS_AS(
        gpu::dnn::packed_strides({2, 3, 1 << 30, 1 << 30, 1 << 30, 1 << 30}, tensor_layout::nchw),
        std::invalid_argument);
    // Dimensions that are not positive have no strides.
    CHECK_THROWS_WITH(gpu::dnn::packed_strides({2, 3, -4, 5}, tensor_layout::nchw),
                      ContainsSubstring("dimension 2 of [2, 3, -4, 5] is -4"));
    CHECK_THROWS_WITH(gpu::dnn::packed_strides({2, 0}, tensor_layout::nhwc),
                      ContainsSubstring("dimension 1 of [2, 0] is 0"));
    CHECK_THROWS_WITH(gpu::dnn::packed_strides({2, 3, 4, 5}, static_cast<tensor_layout>(7)),
                      ContainsSubstring("tensor_layout value 7"));
}

TEST_CASE("tensor descriptors read back what they were set to", "[dnn]")
{
    const std::vector<int> dims =
        GENERATE(std::vector<int>{32, 3, 224, 224}, std::vector<int>{1, 1, 1, 1},
                 std::vector<int>{8, 64, 56, 56}, std::vector<int>{2, 16, 7, 9},
                 std::vector<int>{4, 3, 8, 16, 16}, std::vector<int>{1, 2, 3, 4, 5, 6},
                 std::vector<int>{3, 5, 7});
    const data_type type = GENERATE(data_type::fp32, data_type::fp16, data_type::bf16);
    const tensor_layout layout = GENERATE(tensor_layout::nchw, tensor_layout::nhwc);
    INFO(gpu::dnn::to_string(dims)
         << " " << gpu::dnn::to_string(type) << " " << gpu::dnn::to_string(layout));

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
                      ContainsSubstring("dimension 1 of [32, 0, 224, 224] is 0"));
    CHECK_THROWS_WITH(tensor_descriptor({-2, 3, 4, 4}, data_type::fp32),
                      ContainsSubstring("dimension 0 of [-2, 3, 4, 4] is -2"));
    CHECK_THROWS_WITH(tensor_descriptor({7}, data_type::fp32),
                      ContainsSubstring("1 dimensions [7]"));
    CHECK_THROWS_WITH(tensor_descriptor({1, 1, 1, 1, 1, 1, 1, 1, 1}, data_type::fp32),
                      ContainsSubstring("9 dimensions"));
    CHECK_THROWS_WITH(tensor_descriptor({64, 64, 1024, 1024}, data_type::fp32),
                      ContainsSubstring("more than INT_MAX"));
    CHECK_THROWS_AS(tensor_descriptor({64, 64, 1024, 1024}, data_type::fp32),
                    std::invalid_argument);
    // Values cast from integers are not silently mapped to fp32 or NCHW.
    CHECK_THROWS_WITH(tensor_descriptor({1, 2, 3, 4}, static_cast<data_type>(3)),
                      ContainsSubstring("data_type value 3"));
    CHECK_THROWS_WITH(
        tensor_descriptor({1, 2, 3, 4}, data_type::fp32, static_cast<tensor_layout>(-1)),
        ContainsSubstring("tensor_layout value -1"));
}

TEST_CASE("2-d tensors are refused: cuDNN's n-d tensors have 3 to 8 dimensions", "[dnn]")
{
    // Given 2 dimensions in NHWC, cudnnSetTensorNdDescriptorEx returns success and leaves N's
    // stride uninitialised (a different garbage value from run to run, valgrind-visible).
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        CHECK_THROWS_WITH(tensor_descriptor({5, 3}, data_type::fp32, layout),
                          ContainsSubstring("2 dimensions [5, 3], but cuDNN takes 3 to 8"));
    }
    // The same data as a 3-d tensor is described exactly, channels last included.
    const tensor_descriptor t({5, 3, 1}, data_type::fp32, tensor_layout::nhwc);
    CHECK(t.strides() == std::vector<int>{3, 1, 3});
    CHECK(t.size_bytes() == 5 * 3 * 4);
}

TEST_CASE("every rank and layout holds exactly the packed strides, at the int limit too", "[dnn]")
{
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        for (std::size_t rank = 3; rank <= 8; ++rank) {
            std::vector<int> dims(rank, 2);
            dims[1] = 3;
            const tensor_descriptor t(dims, data_type::fp16, layout);
            INFO(t.to_string());
            CHECK(t.strides() == gpu::dnn::packed_strides(dims, layout));
            CHECK(t.layout() == layout);
        }
    }
    // INT_MAX elements exactly: the largest tensor cuDNN's 32-bit indexing takes.
    const tensor_descriptor largest({1, 1, INT_MAX}, data_type::fp16, tensor_layout::nhwc);
    CHECK(largest.element_count() == static_cast<std::size_t>(INT_MAX));
    CHECK(largest.strides() == std::vector<int>{INT_MAX, 1, 1});
    CHECK_THROWS_WITH(tensor_descriptor({2, 1, INT_MAX}, data_type::fp16),
                      ContainsSubstring("INT_MAX"));
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
    CHECK_THROWS_WITH(
        a.dims(),
        ContainsSubstring("holds no cuDNN descriptor")); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_AS(a.size_bytes(), std::logic_error);   // NOLINT(bugprone-use-after-move)

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
    CHECK_THAT(t.to_string(), ContainsSubstring("strides [96, 32, 8, 1]"));
    GPU_CUDNN_CHECK(
        cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW, CUDNN_DATA_INT8, 1, 4, 2, 2));
    CHECK_THROWS_AS(t.type(), std::domain_error);
    // Overlapping strides over dimensions whose packed strides do not fit int: not a packed
    // layout (and no signed overflow on the way to that answer).
    const std::array<int, 4> dims{4, 65536, 65536, 1};
    const std::array<int, 4> ones{1, 1, 1, 1};
    if (cudnnSetTensorNdDescriptor(raw, CUDNN_DATA_FLOAT, 4, dims.data(), ones.data()) !=
        CUDNN_STATUS_SUCCESS) {
        WARN("this cuDNN refuses overlapping strides over 2^34 elements (cuDNN 9.19 accepts them)");
        return;
    }
    CHECK_FALSE(t.layout().has_value());
    CHECK(t.element_count() == std::size_t{1} << 34);
    CHECK_THAT(t.to_string(), ContainsSubstring("strides [1, 1, 1, 1]"));
}
