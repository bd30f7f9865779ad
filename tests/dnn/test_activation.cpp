// gpu/dnn/activation.hpp: plans and every argument check on the host; ReLU (and the other
// functions) forward and backward against a float64 CPU reference on a GPU.
#include "typed_tensor.hpp"

#include <gpu/dnn/activation.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include <test_support.hpp>

#include <cmath>
#include <cstddef>
#include <functional>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::dnn::activation;
using gpu::dnn::activation_descriptor;
using gpu::dnn::activation_mode;
using gpu::dnn::data_type;
using gpu::dnn::tensor_layout;

// ---- host: plans and argument checks -------------------------------------------------------

TEST_CASE("an activation plan is ReLU without an upper bound unless told otherwise", "[dnn]")
{
    const activation relu({32, 64, 56, 56});
    CHECK(relu.function().mode() == activation_mode::relu);
    CHECK(relu.function().coefficient() == std::numeric_limits<double>::max());
    CHECK(relu.dims() == std::vector<int>{32, 64, 56, 56});
    CHECK(relu.elements() == 32u * 64 * 56 * 56);
    CHECK(relu.type() == data_type::fp32);
    CHECK(relu.layout() == tensor_layout::nchw);
    CHECK(relu.data_descriptor().dims() == relu.dims());
    CHECK(relu.to_string() == "relu on fp32 nchw [32, 64, 56, 56]");

    const activation clipped({8, 16, 1}, data_type::fp16, tensor_layout::nhwc,
                             activation_descriptor(activation_mode::clipped_relu, 6.0));
    CHECK(clipped.function().coefficient() == 6.0);
    CHECK(clipped.data_descriptor().layout() == tensor_layout::nhwc);
    CHECK(clipped.data_descriptor().type() == data_type::fp16);
    CHECK(clipped.to_string() == "clipped_relu(6) on fp16 nhwc [8, 16, 1]");
}

TEST_CASE("bad activation plans are refused with their values", "[dnn]")
{
    CHECK_THROWS_WITH(activation({8, 16}), ContainsSubstring("2 dimensions [8, 16]"));
    CHECK_THROWS_WITH(activation({8, 16, 1}, data_type::fp32, tensor_layout::nchw,
                                 activation_descriptor(activation_mode::identity)),
                      ContainsSubstring("identity only fused into a convolution"));
    activation_descriptor taken;
    activation_descriptor holder(std::move(taken));
    CHECK_THROWS_AS(
        activation({8, 16, 1}, data_type::fp32, tensor_layout::nchw, std::move(taken)), // NOLINT
        std::logic_error);
    CHECK_THROWS_WITH(activation({8, 16, 1}, static_cast<data_type>(4)),
                      ContainsSubstring("data_type value 4"));
}

TEST_CASE("activations refuse buffers of another type or size, an empty handle and null pointers",
          "[dnn]")
{
    activation relu({2, 3, 4, 5}, data_type::bf16);
    gpu::dnn::handle none = gpu::dnn::handle::from_native_handle(nullptr);
    gpu::device_buffer<__nv_bfloat16> empty;
    CHECK_THROWS_WITH(relu.forward(none, empty, empty),
                      ContainsSubstring("activation::forward: x has 0 elements but the operation "
                                        "needs 120 (relu on bf16 nchw [2, 3, 4, 5])"));
    gpu::device_buffer<__half> half;
    CHECK_THROWS_WITH(
        relu.backward(none, half, half, half, half),
        ContainsSubstring("hold fp16 elements but the operation was planned for bf16"));
    __nv_bfloat16 storage{};
    CHECK_THROWS_WITH(relu.backward_raw(none, &storage, &storage, &storage, &storage),
                      ContainsSubstring("activation::backward: the gpu::dnn::handle is empty"));
    gpu::test::fake_handle fake;
    CHECK_THROWS_WITH(relu.backward_raw(fake.handle, &storage, &storage, nullptr, &storage),
                      ContainsSubstring("activation::backward: x is a null pointer"));
    CHECK_THROWS_WITH(relu.forward_raw(fake.handle, nullptr, &storage),
                      ContainsSubstring("activation::forward: x is a null pointer"));
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<activation>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<activation>);
    activation moved(std::move(relu));
    CHECK(moved.elements() == 120);
    CHECK(relu.data_descriptor().get() == nullptr); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_WITH(
        relu.forward_raw(fake.handle, &storage, &storage), // NOLINT(bugprone-use-after-move)
        ContainsSubstring("moved from"));
}

// ---- GPU: against the reference --------------------------------------------------------------

namespace {

struct function_reference {
    activation_mode mode;
    double coefficient;
    std::function<double(double)> f;
    std::function<double(double)> derivative; // of f at x
};

const std::vector<function_reference>& functions()
{
    static const std::vector<function_reference> all{
        {activation_mode::relu, std::numeric_limits<double>::max(),
         [](double x) { return x > 0 ? x : 0.0; }, [](double x) { return x > 0 ? 1.0 : 0.0; }},
        {activation_mode::clipped_relu, 0.5,
         [](double x) { return x > 0 ? (x < 0.5 ? x : 0.5) : 0.0; },
         [](double x) { return x > 0 && x < 0.5 ? 1.0 : 0.0; }},
        {activation_mode::sigmoid, 0.0, [](double x) { return 1.0 / (1.0 + std::exp(-x)); },
         [](double x) {
             const double s = 1.0 / (1.0 + std::exp(-x));
             return s * (1.0 - s);
         }},
        {activation_mode::tanh, 0.0, [](double x) { return std::tanh(x); },
         [](double x) { return 1.0 - std::tanh(x) * std::tanh(x); }},
        {activation_mode::elu, 0.5, [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); },
         [](double x) { return x > 0 ? 1.0 : 0.5 * std::exp(x); }},
    };
    return all;
}

using gpu::test::error_of;

template <class T>
void check_function(gpu::dnn::handle& h, gpu::stream_ref s, const function_reference& ref,
                    tensor_layout layout)
{
    const std::vector<int> dims{2, 3, 5, 7};
    const activation a(dims, gpu::dnn::data_type_of<T>, layout,
                       activation_descriptor(ref.mode, ref.coefficient));
    INFO(a.to_string());
    gpu::test::device_tensor<T> x(dims, layout, s);
    gpu::test::device_tensor<T> y(dims, layout, s);
    gpu::test::device_tensor<T> dy(dims, layout, s);
    gpu::test::device_tensor<T> dx(dims, layout, s);
    x.upload(gpu::test::nonzero_values(a.elements(), 21));
    dy.upload(gpu::test::nonzero_values(a.elements(), 22));
    std::vector<double> forward_ref(a.elements());
    std::vector<double> backward_ref(a.elements());
    for (std::size_t i = 0; i < a.elements(); ++i) {
        forward_ref[i] = ref.f(x.values[i]);
        backward_ref[i] = ref.derivative(x.values[i]) * dy.values[i];
    }
    a.forward(h, x.buffer, y.buffer);
    CHECK(error_of(y.download(s), forward_ref) < gpu::test::tolerance_of<T>());
    a.backward(h, y.buffer, dy.buffer, x.buffer, dx.buffer);
    CHECK(error_of(dx.download(s), backward_ref) < gpu::test::tolerance_of<T>());
}

template <class T>
void check_relu_in_both_layouts()
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    for (const tensor_layout layout : {tensor_layout::nchw, tensor_layout::nhwc}) {
        check_function<T>(h, s, functions().front(), layout);
    }
}

} // namespace

TEST_CASE("FP32 ReLU forward and backward match the float64 reference in both layouts",
          "[dnn][gpu]")
{
    check_relu_in_both_layouts<float>();
}

TEST_CASE("FP16 ReLU forward and backward match the float64 reference in both layouts",
          "[dnn][gpu]")
{
    check_relu_in_both_layouts<__half>();
}

TEST_CASE("BF16 ReLU forward and backward match the float64 reference in both layouts",
          "[dnn][gpu]")
{
    check_relu_in_both_layouts<__nv_bfloat16>();
}

TEST_CASE("clipped ReLU, sigmoid, tanh and ELU backward match the float64 reference", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    for (const function_reference& ref : functions()) {
        check_function<float>(h, s, ref, tensor_layout::nchw);
    }
}

TEST_CASE("ReLU's backward runs in place on the gradient", "[dnn][gpu]")
{
    gpu::stream s;
    gpu::dnn::handle h(s);
    const std::vector<int> dims{4, 8, 3, 3};
    const activation relu(dims);
    gpu::test::device_tensor<float> x(dims, tensor_layout::nchw, s);
    gpu::test::device_tensor<float> y(dims, tensor_layout::nchw, s);
    gpu::test::device_tensor<float> grad(dims, tensor_layout::nchw, s);
    x.upload(gpu::test::nonzero_values(relu.elements(), 5));
    grad.upload(gpu::test::nonzero_values(relu.elements(), 6));
    std::vector<double> expected(relu.elements());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        expected[i] = x.values[i] > 0 ? grad.values[i] : 0.0;
    }
    relu.forward(h, x.buffer, y.buffer);
    relu.backward(h, y.buffer, grad.buffer, x.buffer, grad.buffer);
    CHECK(grad.download(s) == expected);
}
