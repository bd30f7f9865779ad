// The error rule of docs/architecture.md ("Errors"), checked across the layers in one place:
// a bad argument is std::invalid_argument naming the values; an empty or moved-from owner used
// is std::logic_error; a library or device failure is a gpu::error subclass.
//
// Without a GPU the owners are made in their documented moved-from state (adopting a null
// handle) or, where they need no GPU (cuDNN's descriptors), really moved from; the [gpu] test
// moves every owner for real.
#include <gpu/blas/gemm.hpp>
#include <gpu/blas/handle.hpp>
#include <gpu/blas/lt.hpp>
#include <gpu/blas/random.hpp>
#include <gpu/detail/unique_handle.hpp>
#include <gpu/device.hpp>
#include <gpu/dnn/activation.hpp>
#include <gpu/dnn/activation_descriptor.hpp>
#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/convolution_backward.hpp>
#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/dropout.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/pooling.hpp>
#include <gpu/dnn/pooling_descriptor.hpp>
#include <gpu/dnn/softmax.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/event.hpp>
#include <gpu/graph.hpp>
#include <gpu/memory.hpp>
#include <gpu/nn/adamw.hpp>
#include <gpu/nn/cross_entropy.hpp>
#include <gpu/nn/format_error.hpp>
#include <gpu/nn/grad_scaler.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

namespace blas = gpu::blas;
namespace dnn = gpu::dnn;
namespace nn = gpu::nn;

float* const fake_a = reinterpret_cast<float*>(std::uintptr_t{0x100000});
float* const fake_b = reinterpret_cast<float*>(std::uintptr_t{0x200000});
float* const fake_c = reinterpret_cast<float*>(std::uintptr_t{0x300000});

dnn::convolution_problem small_problem()
{
    return {.input = {1, 3, 8, 8}, .filter = {4, 3, 3, 3}, .geometry = {.padding = {1, 1}}};
}

// Every use of a blas::handle that holds nothing is a logic_error, gemm included.
void check_empty_blas_handle(blas::handle& h)
{
    CHECK_THROWS_AS(h.set_math(blas::math_mode::tf32), std::logic_error);
    CHECK_THROWS_AS(h.math(), std::logic_error);
    CHECK_THROWS_AS(h.set_stream(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(blas::gemm(h, gpu::matrix::matrix_view<const float>(fake_a, 3, 4),
                               gpu::matrix::matrix_view<const float>(fake_b, 4, 2),
                               gpu::matrix::matrix_view<float>(fake_c, 3, 2)),
                    std::logic_error);
}

// Every use of an lt_handle that holds nothing is a logic_error, the matmuls included.
void check_empty_lt_handle(blas::lt_handle& h)
{
    const auto a = gpu::matrix::row_major(static_cast<const float*>(fake_a), 3, 4);
    const auto b = gpu::matrix::row_major(static_cast<const float*>(fake_b), 4, 2);
    const auto c = gpu::matrix::row_major(fake_c, 3, 2);
    CHECK_THROWS_AS(blas::lt_matmul(h, a, b, c), std::logic_error);
    CHECK_THROWS_AS(blas::lt_matmul_bias(h, a, b, c, static_cast<const float*>(fake_a)),
                    std::logic_error);
    CHECK_THROWS_AS(static_cast<void>(blas::lt_supports_bias_gradient(h, a, b, c, fake_a)),
                    std::logic_error);
    CHECK_THROWS_AS(h.set_stream(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(h.set_workspace_size(1024), std::logic_error);
}

// Every use of a dnn::handle that holds nothing is a logic_error, planning included.
void check_empty_dnn_handle(dnn::handle& h)
{
    CHECK_THROWS_AS(h.stream(), std::logic_error);
    CHECK_THROWS_AS(h.set_stream(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(dnn::convolution(h, small_problem()), std::logic_error);
}

// The message gpu::detail::throw_empty_owner gives for these words: the one every owner uses.
std::string empty_owner_message(std::string_view function, std::string_view owner,
                                std::string_view holds)
{
    try {
        gpu::detail::throw_empty_owner(function, owner, holds);
    } catch (const std::logic_error& e) {
        return e.what();
    }
    return {};
}

// Checks that `use` of an empty `owner` throws throw_empty_owner's message for it, naming a
// gpu:: function (the owner's member, or the function it was given to) and what it lacks.
template <class Use>
void check_empty_owner(Use&& use, std::string_view owner, std::string_view holds)
{
    INFO("the empty " << owner);
    try {
        use();
        FAIL("no exception");
    } catch (const std::logic_error& e) {
        const std::string what = e.what();
        const std::size_t named = what.find(": the " + std::string(owner) + " is empty");
        const std::string function =
            named == std::string::npos ? std::string(owner) : what.substr(0, named);
        CHECK(function.rfind("gpu::", 0) == 0);
        CHECK(what == empty_owner_message(function, owner, holds));
    }
}

} // namespace

TEST_CASE("every empty owner refuses with throw_empty_owner's one message, naming the function",
          "[rule]")
{
    CHECK(empty_owner_message("gpu::blas::gemm", "gpu::blas::handle", "cuBLAS handle") ==
          "gpu::blas::gemm: the gpu::blas::handle is empty (moved from or released; it holds no "
          "cuBLAS handle)");
    CHECK(empty_owner_message("gpu::stream", "gpu::stream", "CUDA stream") ==
          "gpu::stream is empty (moved from or released; it holds no CUDA stream)");

    const auto s = gpu::stream::from_native_handle(nullptr);
    check_empty_owner([&] { static_cast<void>(s.ref()); }, "gpu::stream", "CUDA stream");
    const auto e = gpu::event::from_native_handle(nullptr);
    check_empty_owner([&] { static_cast<void>(e.ref()); }, "gpu::event", "CUDA event");
    const gpu::graph g;
    check_empty_owner([&] { static_cast<void>(g.node_count()); }, "gpu::graph", "CUDA graph");
    gpu::graph_exec x;
    check_empty_owner([&] { x.launch(gpu::legacy_default_stream); }, "gpu::graph_exec",
                      "executable CUDA graph");

    blas::handle b = blas::handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    check_empty_owner([&] { static_cast<void>(b.math()); }, "gpu::blas::handle", "cuBLAS handle");
    check_empty_owner(
        [&] {
            blas::gemm(b, gpu::matrix::matrix_view<const float>(fake_a, 3, 4),
                       gpu::matrix::matrix_view<const float>(fake_b, 4, 2),
                       gpu::matrix::matrix_view<float>(fake_c, 3, 2));
        },
        "gpu::blas::handle", "cuBLAS handle");
    blas::lt_handle lt = blas::lt_handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    check_empty_owner([&] { lt.set_workspace_size(1024); }, "gpu::blas::lt_handle",
                      "cuBLASLt handle");

    dnn::handle d = dnn::handle::from_native_handle(nullptr);
    check_empty_owner([&] { static_cast<void>(d.stream()); }, "gpu::dnn::handle", "cuDNN handle");
    check_empty_owner([&] { static_cast<void>(dnn::convolution(d, small_problem())); },
                      "gpu::dnn::handle", "cuDNN handle");
    check_empty_owner(
        [&] { static_cast<void>(dnn::convolution_backward_data(d, small_problem())); },
        "gpu::dnn::handle", "cuDNN handle");
    check_empty_owner([&] { static_cast<void>(dnn::dropout(d, 0.5F, 1)); }, "gpu::dnn::handle",
                      "cuDNN handle");

    dnn::tensor_descriptor tensor({1, 3, 8, 8}, dnn::data_type::fp32);
    dnn::convolution_descriptor conv(dnn::convolution_geometry{.padding = {1, 1}});
    dnn::pooling pool({1, 3, 8, 8}, {});
    dnn::softmax soft({1, 3, 8, 8});
    const dnn::tensor_descriptor tensor2(std::move(tensor));
    const dnn::convolution_descriptor conv2(std::move(conv));
    const dnn::pooling pool2(std::move(pool));
    const dnn::softmax soft2(std::move(soft));
    float storage = 0.0F;
    // NOLINTBEGIN(bugprone-use-after-move): the documented moved-from state is what is tested
    check_empty_owner([&] { static_cast<void>(tensor.size_bytes()); },
                      "gpu::dnn::tensor_descriptor", "cuDNN descriptor");
    check_empty_owner([&] { static_cast<void>(conv.geometry()); },
                      "gpu::dnn::convolution_descriptor", "cuDNN descriptor");
    check_empty_owner([&] { pool.forward_raw(d, &storage, &storage); }, "gpu::dnn::pooling",
                      "cuDNN descriptor");
    check_empty_owner([&] { soft.forward_raw(d, &storage, &storage); }, "gpu::dnn::softmax",
                      "cuDNN descriptor");
    // NOLINTEND(bugprone-use-after-move)
    check_empty_owner([&] { pool2.forward_raw(d, &storage, &storage); }, "gpu::dnn::handle",
                      "cuDNN handle");
}

TEST_CASE("an empty core owner refuses to be used with logic_error", "[rule]")
{
    const auto s = gpu::stream::from_native_handle(nullptr); // the moved-from state
    CHECK_THROWS_AS(s.ref(), std::logic_error);
    CHECK_THROWS_AS(s.synchronize(), std::logic_error);
    CHECK_THROWS_AS(s.priority(), std::logic_error);
    const auto e = gpu::event::from_native_handle(nullptr);
    CHECK_THROWS_AS(e.ref(), std::logic_error);
    CHECK_THROWS_AS(e.record(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(e.synchronize(), std::logic_error);
    CHECK_THROWS_AS(static_cast<void>(e.is_ready()), std::logic_error);
    const gpu::graph g; // empty, as after a move
    CHECK_THROWS_AS(static_cast<void>(g.node_count()), std::logic_error);
    CHECK_THROWS_AS(gpu::graph_exec(g), std::logic_error);
    gpu::graph_exec x;
    CHECK_THROWS_AS(x.launch(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(static_cast<void>(x.update(g)), std::logic_error);
}

TEST_CASE("an empty blas or dnn handle refuses to be used with logic_error", "[rule]")
{
    blas::handle b = blas::handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    check_empty_blas_handle(b);
    dnn::handle d = dnn::handle::from_native_handle(nullptr);
    check_empty_dnn_handle(d);
    blas::lt_handle lt = blas::lt_handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    check_empty_lt_handle(lt);
}

TEST_CASE("an nn parameter store used before allocate refuses with logic_error", "[rule]")
{
    // The store is neither copyable nor movable: its empty state is the one before allocate.
    nn::parameters store;
    store.add("fc.weight", {4, 3}, nn::initialization::zeros());
    CHECK_THROWS_AS(store.view(0), std::logic_error);
    CHECK_THROWS_AS(store.zero_grad(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(store.refresh_working_copy(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(store.initialize(1, gpu::legacy_default_stream), std::logic_error);
    // A bad argument stays a bad argument on it.
    CHECK_THROWS_AS(store.view(1), std::invalid_argument);
}

TEST_CASE("moved-from cuDNN descriptors refuse to be used with logic_error", "[rule]")
{
    dnn::tensor_descriptor tensor({1, 3, 8, 8}, dnn::data_type::fp32);
    dnn::filter_descriptor filter({4, 3, 3, 3}, dnn::data_type::fp32);
    dnn::convolution_descriptor conv(dnn::convolution_geometry{.padding = {1, 1}});
    dnn::activation_descriptor activation(dnn::activation_mode::relu);
    const dnn::tensor_descriptor tensor2(std::move(tensor));
    const dnn::filter_descriptor filter2(std::move(filter));
    const dnn::convolution_descriptor conv2(std::move(conv));
    const dnn::activation_descriptor activation2(std::move(activation));
    // NOLINTBEGIN(bugprone-use-after-move): the documented moved-from state is what is tested
    CHECK_THROWS_AS(tensor.size_bytes(), std::logic_error);
    CHECK_THROWS_AS(filter.size_bytes(), std::logic_error);
    CHECK_THROWS_AS(conv.geometry(), std::logic_error);
    CHECK_THROWS_AS(conv.set_math(dnn::math_type::fma), std::logic_error);
    CHECK_THROWS_AS(activation.mode(), std::logic_error);
    // NOLINTEND(bugprone-use-after-move)
}

TEST_CASE("moved-from pooling, activation and softmax plans refuse to be used with logic_error",
          "[rule]")
{
    dnn::pooling_descriptor pool_descriptor;
    dnn::pooling pool({1, 3, 8, 8}, {});
    dnn::activation relu({1, 3, 8, 8});
    dnn::softmax soft({1, 3, 8, 8});
    const dnn::pooling_descriptor pool_descriptor2(std::move(pool_descriptor));
    const dnn::pooling pool2(std::move(pool));
    const dnn::activation relu2(std::move(relu));
    const dnn::softmax soft2(std::move(soft));
    dnn::handle none = dnn::handle::from_native_handle(nullptr);
    float storage = 0.0F;
    // NOLINTBEGIN(bugprone-use-after-move): the documented moved-from state is what is tested
    CHECK_THROWS_AS(pool_descriptor.geometry(), std::logic_error);
    CHECK_THROWS_AS(pool.forward_raw(none, &storage, &storage), std::logic_error);
    CHECK_THROWS_AS(relu.backward_raw(none, &storage, &storage, &storage, &storage),
                    std::logic_error);
    CHECK_THROWS_AS(soft.forward_raw(none, &storage, &storage), std::logic_error);
    // NOLINTEND(bugprone-use-after-move)
    // An empty handle: the plans made without one refuse it when they run, dropout at once.
    CHECK_THROWS_AS(pool2.forward_raw(none, &storage, &storage), std::logic_error);
    CHECK_THROWS_AS(dnn::dropout(none, 0.5F, 1), std::logic_error);
}

TEST_CASE("a moved-from buffer is an empty buffer, like a moved-from std::vector", "[rule]")
{
    // Buffers are the one kind of owner whose moved-from state is a valid value: empty. Using it
    // as one is fine; giving it data of another size is a bad argument, with both sizes.
    gpu::device_buffer<float> a;
    gpu::device_buffer<float> b(std::move(a));
    CHECK(a.empty()); // NOLINT(bugprone-use-after-move)
    CHECK(a.data() == nullptr);
    CHECK_NOTHROW(a.copy_from_host({}));
    const std::vector<float> three(3, 1.0F);
    CHECK_THROWS_AS(a.copy_from_host(three), std::invalid_argument);
    CHECK_THROWS_WITH(a.copy_from_host(three), ContainsSubstring("0") && ContainsSubstring("3"));
}

TEST_CASE("bad arguments are invalid_argument naming the values, in every layer", "[rule]")
{
    CHECK_THROWS_AS(gpu::compute_capability::from_int(-75), std::invalid_argument);
    CHECK_THROWS_WITH(gpu::compute_capability::from_int(-75), ContainsSubstring("-75"));
    blas::handle empty = blas::handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    // Shapes are checked before the handle: a bad argument stays a bad argument.
    CHECK_THROWS_AS(blas::gemm(empty, gpu::matrix::matrix_view<const float>(fake_a, 3, 4),
                               gpu::matrix::matrix_view<const float>(fake_b, 5, 2),
                               gpu::matrix::matrix_view<float>(fake_c, 3, 2)),
                    std::invalid_argument);
    CHECK_THROWS_AS(dnn::tensor_descriptor({1, -3, 8, 8}, dnn::data_type::fp32),
                    std::invalid_argument);
    CHECK_THROWS_WITH(dnn::tensor_descriptor({1, -3, 8, 8}, dnn::data_type::fp32),
                      ContainsSubstring("-3"));
    dnn::handle no_handle = dnn::handle::from_native_handle(nullptr);
    dnn::convolution_problem p = small_problem();
    p.filter = {4, 5, 3, 3};
    CHECK_THROWS_AS(dnn::convolution(no_handle, p), std::invalid_argument);
    CHECK_THROWS_AS(dnn::convolution_backward_data(no_handle, p), std::invalid_argument);
    blas::lt_handle no_lt =
        blas::lt_handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    CHECK_THROWS_WITH(
        blas::lt_matmul(no_lt, gpu::matrix::row_major(static_cast<const float*>(fake_a), 3, 4),
                        gpu::matrix::row_major(static_cast<const float*>(fake_b), 5, 2),
                        gpu::matrix::row_major(fake_c, 3, 2)),
        ContainsSubstring("a has 4 columns, b has 5 rows"));
    // nn checks its options before it allocates anything, so no GPU is needed here.
    CHECK_THROWS_WITH(nn::adamw(8, gpu::legacy_default_stream, {.beta1 = 1.5}),
                      ContainsSubstring("beta1 1.5"));
    CHECK_THROWS_WITH(nn::grad_scaler(gpu::legacy_default_stream, {.growth_interval = 0}),
                      ContainsSubstring("growth_interval 0"));
    CHECK_THROWS_WITH(nn::cross_entropy(0, gpu::element_type::fp32, gpu::legacy_default_stream),
                      ContainsSubstring("classes 0"));
}

TEST_CASE("library failures are gpu::error subclasses of the layer of each library", "[rule]")
{
    STATIC_REQUIRE(std::is_base_of_v<gpu::error, gpu::cuda_error>);
    STATIC_REQUIRE(std::is_base_of_v<gpu::error, blas::blas_error>);
    STATIC_REQUIRE(std::is_base_of_v<gpu::error, blas::random_error>);
    STATIC_REQUIRE(std::is_base_of_v<gpu::error, dnn::dnn_error>);
    STATIC_REQUIRE(std::is_base_of_v<dnn::dnn_error, dnn::no_algorithm_error>);
    // A file that breaks its format is no library failure and no bad argument: nn's
    // format_error is a std::runtime_error, like the filesystem_error of a file that cannot be read.
    STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, nn::format_error>);
    STATIC_REQUIRE(!std::is_base_of_v<gpu::error, nn::format_error>);
    CHECK_THROWS_AS(GPU_CHECK(cudaErrorInvalidValue), gpu::cuda_error);
    CHECK_THROWS_AS(GPU_CHECK(CUBLAS_STATUS_INVALID_VALUE), blas::blas_error);
    CHECK_THROWS_AS(GPU_CHECK(CURAND_STATUS_TYPE_ERROR), blas::random_error);
    CHECK_THROWS_AS(GPU_CHECK(CUDNN_STATUS_BAD_PARAM), dnn::dnn_error);
    const dnn::no_algorithm_error none(dnn::convolution_explanation{});
    CHECK(none.status_name() == "no_algorithm");
    CHECK(none.status() == CUDNN_STATUS_NOT_SUPPORTED);
    CHECK_THAT(std::string(none.what()),
               ContainsSubstring("no algorithm fits") && ContainsSubstring("\nhint: raise"));
}

TEST_CASE("every wrapper's error reads the same: '<api>: <name> (<code>): <message>'", "[rule]")
{
    const blas::blas_error b("cublasCreate(&handle)", "CUBLAS_STATUS_NOT_INITIALIZED", 1,
                             "the library was not initialized", "check the driver", -1,
                             std::source_location::current());
    CHECK(std::string(b.what()) ==
          "cublasCreate(&handle): CUBLAS_STATUS_NOT_INITIALIZED (1): the library was not "
          "initialized\nhint: check the driver");
    const dnn::dnn_error d("cudnnCreate(&handle)", "CUDNN_STATUS_NOT_INITIALIZED", 1001, "m", "",
                           -1, std::source_location::current());
    CHECK(std::string(d.what()) == "cudnnCreate(&handle): CUDNN_STATUS_NOT_INITIALIZED (1001): m");
}

TEST_CASE("every owner, really moved from, refuses to be used with logic_error", "[rule][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    const gpu::stream s2(std::move(s));
    CHECK_THROWS_AS(s.synchronize(), std::logic_error); // NOLINT(bugprone-use-after-move)
    gpu::event e;
    const gpu::event e2(std::move(e));
    CHECK_THROWS_AS(e.record(s2), std::logic_error); // NOLINT(bugprone-use-after-move)
    blas::handle b(s2);
    blas::handle b2(std::move(b));
    check_empty_blas_handle(b); // NOLINT(bugprone-use-after-move)
    blas::random_generator rng(7, s2);
    const blas::random_generator rng2(std::move(rng));
    gpu::device_buffer<float> values(16, s2);
    CHECK_THROWS_AS(rng.uniform(values), std::logic_error); // NOLINT(bugprone-use-after-move)
    check_empty_owner([&] { rng.uniform(values); },         // NOLINT(bugprone-use-after-move)
                      "gpu::blas::random_generator", "cuRAND generator");
    dnn::handle d(s2);
    dnn::handle d2(std::move(d));
    check_empty_dnn_handle(d); // NOLINT(bugprone-use-after-move)
    dnn::convolution plan(d2, small_problem());
    const dnn::convolution plan2(std::move(plan));
    gpu::device_buffer<float> x(small_problem().input_elements(), s2);
    gpu::device_buffer<float> w(small_problem().filter_elements(), s2);
    gpu::device_buffer<float> y(small_problem().output_elements(), s2);
    CHECK_THROWS_AS(plan.forward(d2, x, w, y), std::logic_error); // NOLINT(bugprone-use-after-move)
    check_empty_owner([&] { plan.forward(d2, x, w, y); },         // NOLINT(bugprone-use-after-move)
                      "gpu::dnn::convolution", "cuDNN descriptor");
    s2.synchronize();
}

TEST_CASE("the owners of issue 11, really moved from, refuse to be used with logic_error",
          "[rule][gpu]")
{
    const gpu::stream s(gpu::stream_flags::non_blocking);
    blas::lt_handle lt(s);
    const blas::lt_handle lt2(std::move(lt));
    check_empty_lt_handle(lt); // NOLINT(bugprone-use-after-move)

    dnn::handle d(s);
    const dnn::convolution_problem p = small_problem();
    gpu::device_buffer<float> x(p.input_elements(), s);
    gpu::device_buffer<float> w(p.filter_elements(), s);
    gpu::device_buffer<float> y(p.output_elements(), s);
    dnn::convolution_backward_data data(d, p);
    const dnn::convolution_backward_data data2(std::move(data));
    dnn::convolution_backward_filter filter(d, p);
    const dnn::convolution_backward_filter filter2(std::move(filter));
    dnn::dropout drop(d, 0.5F, 1);
    const dnn::dropout drop2(std::move(drop));
    gpu::device_buffer<std::byte> reserve(
        dnn::dropout::reserve_bytes(x.size(), dnn::data_type::fp32), s);

    // Each is given the buffers of the object it was moved into: right-sized, so only its
    // emptiness is wrong.
    const std::size_t n = 64;
    nn::adamw optimizer(n, s);
    nn::adamw optimizer2(std::move(optimizer));
    nn::grad_scaler scaler(s);
    nn::grad_scaler scaler2(std::move(scaler));
    nn::cross_entropy loss(10, gpu::element_type::fp32, s);
    const nn::cross_entropy loss2(std::move(loss));
    gpu::device_buffer<float> params(n, s);
    gpu::device_buffer<float> grads(n, s);
    gpu::device_buffer<std::int32_t> labels(4, s);

    // NOLINTBEGIN(bugprone-use-after-move): the documented moved-from state is what is tested
    CHECK_THROWS_AS(data.backward_data(d, w, y, x), std::logic_error);
    CHECK_THROWS_AS(filter.backward_filter(d, x, y, w), std::logic_error);
    CHECK_THROWS_AS(drop.forward(d, x, x, reserve), std::logic_error);
    CHECK_THROWS_AS(optimizer.step(params, grads, s), std::logic_error);
    CHECK_THROWS_AS(optimizer.step(params, grads, scaler2, s), std::logic_error);
    CHECK_THROWS_AS(optimizer2.step(params, grads, scaler, s), std::logic_error);
    CHECK_THROWS_AS(optimizer.load_state(nn::adamw_state{.step = 0,
                                                         .exp_avg = std::vector<float>(n),
                                                         .exp_avg_sq = std::vector<float>(n)},
                                         s),
                    std::logic_error);
    CHECK_THROWS_AS(static_cast<void>(optimizer.step_count(s)), std::logic_error);
    CHECK_THROWS_AS(scaler.scale(), std::logic_error);
    CHECK_THROWS_AS(scaler.unscale(grads, s), std::logic_error);
    CHECK_THROWS_AS(scaler.update(s), std::logic_error);
    CHECK_THROWS_AS(static_cast<void>(scaler.current_scale(s)), std::logic_error);
    CHECK_THROWS_AS(loss.forward(params.data(), labels.data(), 4, params.data(), s),
                    std::logic_error);
    CHECK_THROWS_AS(loss.backward(params.data(), labels.data(), 4, params.data(), nullptr, s),
                    std::logic_error);
    CHECK_THROWS_AS(loss.check_labels(s), std::logic_error);
    // Each refuses with the one message of an empty owner.
    check_empty_owner([&] { data.backward_data(d, w, y, x); },
                      "gpu::dnn::convolution_backward_data", "cuDNN descriptor");
    check_empty_owner([&] { optimizer.step(params, grads, s); }, "gpu::nn::adamw", "state");
    check_empty_owner([&] { static_cast<void>(scaler.scale()); }, "gpu::nn::grad_scaler", "state");
    check_empty_owner([&] { loss.check_labels(s); }, "gpu::nn::cross_entropy", "state");
    // NOLINTEND(bugprone-use-after-move)
    s.synchronize();
}
