// gpu/blas/lt.hpp: without a GPU, the handle's creation failure, the empty handle, the checks and
// the mapping of a matmul onto cuBLASLt's descriptors (read back from cuBLASLt); on a GPU, every
// type and epilogue against a float64 reference, accumulation into FP32, and the algorithm cache.
#include <gpu/blas/lt.hpp>

#include <gpu/blas/handle.hpp>

#include "catch.hpp"
#include <element_cast.hpp>
#include <test_support.hpp>

#include <gpu/device.hpp>
#include <gpu/memory.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include <cublasLt.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
namespace blas = gpu::blas;
using gpu::test::narrow;
using gpu::test::rounded_random;
using gpu::test::widened;

static_assert(blas::lt_types<const float, const float, float>);
static_assert(blas::lt_types<const __half, __half, __half>);
static_assert(blas::lt_types<const __half, const __half, float>);
static_assert(blas::lt_types<const __nv_bfloat16, const __nv_bfloat16, float>);
static_assert(!blas::lt_types<double, double, double>);
static_assert(!blas::lt_types<float, float, __half>);
static_assert(!blas::lt_types<__half, __nv_bfloat16, float>);
static_assert(!blas::lt_types<__half, __half, const float>);
static_assert(!std::is_copy_constructible_v<blas::lt_handle>);
static_assert(std::is_nothrow_move_constructible_v<blas::lt_handle>);
static_assert(std::is_nothrow_move_assignable_v<blas::lt_handle>);
static_assert(!std::is_default_constructible_v<blas::lt_handle>);

namespace {

// Addresses that are never dereferenced: the checks and the descriptors only read them.
template <class T>
T* fake(std::uintptr_t address)
{
    return reinterpret_cast<T*>(address);
}

blas::lt_handle empty_handle()
{
    return blas::lt_handle::from_native_handle(nullptr, gpu::legacy_default_stream);
}

} // namespace

TEST_CASE("creating an lt_handle without a usable GPU throws blas_error from cublasLtCreate",
          "[blas]")
{
    if (gpu::is_available()) {
        const gpu::stream stream;
        const blas::lt_handle h(stream);
        CHECK(h.get() != nullptr);
        CHECK(h.workspace_size() == blas::recommended_workspace_bytes(h.device().capability()));
        return;
    }
    try {
        const blas::lt_handle h(gpu::legacy_default_stream);
        FAIL("cublasLtCreate succeeded although no GPU is usable");
    } catch (const blas::blas_error& e) {
        CHECK_THAT(std::string(e.what()),
                   StartsWith("cublasLtCreate(&raw): CUBLAS_STATUS_NOT_INITIALIZED (1): "));
        CHECK(e.status() == CUBLAS_STATUS_NOT_INITIALIZED);
        CHECK_THAT(e.hint(), StartsWith("cuBLAS could not initialise because no GPU is usable: "));
        CHECK_THAT(e.hint(), ContainsSubstring(gpu::unavailable_reason()));
    }
}

TEST_CASE("an empty lt_handle refuses work with logic_error, after the argument checks", "[blas]")
{
    blas::lt_handle h = empty_handle();
    CHECK_FALSE(h);
    CHECK(h.get() == nullptr);
    CHECK_THROWS_AS(h.device(), std::logic_error);
    CHECK(h.workspace_size() == 0);
    CHECK(h.cached_problems() == 0);
    const auto a = gpu::matrix::row_major(fake<const float>(0x100000), 4, 3);
    const auto b = gpu::matrix::row_major(fake<const float>(0x200000), 3, 5);
    const auto c = gpu::matrix::row_major(fake<float>(0x300000), 4, 5);
    CHECK_THROWS_WITH(blas::lt_matmul(h, a, b, c),
                      ContainsSubstring("gpu::blas::lt_matmul: the gpu::blas::lt_handle is empty"));
    // A bad argument stays a bad argument on an empty handle.
    CHECK_THROWS_AS(blas::lt_matmul(h, a, a, c), std::invalid_argument);
    CHECK_THROWS_WITH(blas::lt_matmul_bias(h, a, b, c, static_cast<const float*>(nullptr)),
                      ContainsSubstring("bias epilogue needs a vector of 5 elements"));
    CHECK_THROWS_AS(h.set_stream(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(h.set_workspace_size(1024), std::logic_error);
    CHECK(h.release() == nullptr);

    blas::lt_handle moved = std::move(h);
    CHECK_FALSE(h); // NOLINT(bugprone-use-after-move): the moved-from state is specified
    CHECK(h.cached_problems() == 0);
    CHECK_THROWS_AS(blas::lt_matmul(h, a, b, c), std::logic_error);
}

TEST_CASE("plan_lt_matmul maps a row-major matmul onto the swapped column-major problem", "[blas]")
{
    // The forward of a linear layer: y (64 x 10) = x (64 x 32) · Wᵀ, W 10 x 32 row-major.
    const auto x = gpu::matrix::row_major(fake<const __half>(0x100000), 64, 32);
    const auto w = gpu::matrix::row_major(fake<const __half>(0x200000), 10, 32);
    const auto y = gpu::matrix::row_major(fake<__half>(0x300000), 64, 10);
    const blas::lt_problem p = blas::plan_lt_matmul(x, w.transposed(), y, blas::lt_epilogue::bias,
                                                    fake<const __half>(0x400040));
    CHECK(p.plan.swapped);
    CHECK(p.plan.m == 10);
    CHECK(p.plan.n == 64);
    CHECK(p.plan.k == 32);
    CHECK(p.plan.op_first == gpu::matrix::operation::transpose);
    CHECK(p.plan.op_second == gpu::matrix::operation::none);
    CHECK(p.input == gpu::element_type::fp16);
    CHECK(p.output == gpu::element_type::fp16);
    CHECK(p.epilogue == blas::lt_epilogue::bias);
    CHECK(p.alignment_first == 256);
    CHECK(p.alignment_vector == 64);
    CHECK(p.to_string() ==
          "FP16 inputs, FP16 output, epilogue bias, column-major m=10 n=64 k=32 op TN ld 32/32/10, "
          "alignment 256/256/256/64");

    // Alignment is read from each address, up to 256 bytes.
    const auto offset = gpu::matrix::row_major(fake<const __half>(0x100006), 64, 32);
    CHECK(blas::plan_lt_matmul(offset, w.transposed(), y).alignment_second == 2);
    // TF32 applies to FP32 inputs only.
    CHECK_FALSE(blas::plan_lt_matmul(x, w.transposed(), y, blas::lt_epilogue::none, nullptr, true)
                    .allow_tf32);
    const auto xf = gpu::matrix::row_major(fake<const float>(0x100000), 64, 32);
    const auto wf = gpu::matrix::row_major(fake<const float>(0x200000), 10, 32);
    const auto yf = gpu::matrix::row_major(fake<float>(0x300000), 64, 10);
    CHECK(blas::plan_lt_matmul(xf, wf.transposed(), yf, blas::lt_epilogue::none, nullptr, true)
              .allow_tf32);
}

TEST_CASE("plan_lt_matmul checks epilogues, vectors and k before cuBLASLt is called", "[blas]")
{
    const auto a = gpu::matrix::row_major(fake<const float>(0x100000), 4, 3);
    const auto b = gpu::matrix::row_major(fake<const float>(0x200000), 3, 5);
    const auto c = gpu::matrix::row_major(fake<float>(0x300000), 4, 5);
    const float* bias = fake<const float>(0x400000);
    CHECK_THROWS_WITH(blas::plan_lt_matmul(a, b,
                                           gpu::matrix::column_major(fake<float>(0x300000), 4, 5),
                                           blas::lt_epilogue::bias, bias),
                      ContainsSubstring("the bias epilogue needs a row-major c"));
    CHECK_THROWS_WITH(blas::plan_lt_matmul(a, b, c, blas::lt_epilogue::relu_bias),
                      ContainsSubstring("the relu_bias epilogue needs a vector of 5 elements"));
    CHECK_THROWS_WITH(blas::plan_lt_matmul(a, b, c, blas::lt_epilogue::bias_gradient),
                      ContainsSubstring("the bias_gradient epilogue needs a vector of 4 elements"));
    CHECK_THROWS_WITH(blas::plan_lt_matmul(a, b, c, blas::lt_epilogue::none, bias),
                      ContainsSubstring("no epilogue reads or writes one"));
    CHECK_THROWS_WITH(blas::plan_lt_matmul(a, b, c, static_cast<blas::lt_epilogue>(7), bias),
                      ContainsSubstring("epilogue 7 is not a gpu::blas::lt_epilogue"));
    CHECK_THROWS_WITH(
        blas::plan_lt_matmul(gpu::matrix::row_major(fake<const float>(0x100000), 4, 0),
                             gpu::matrix::row_major(fake<const float>(0x200000), 0, 5), c),
        ContainsSubstring("the inner dimension k is 0"));
    CHECK_THROWS_WITH(
        blas::plan_lt_matmul(a, gpu::matrix::row_major(fake<const float>(0x200000), 3, 0),
                             gpu::matrix::row_major(fake<float>(0x300000), 4, 0),
                             blas::lt_epilogue::bias_gradient, bias),
        ContainsSubstring("c has no columns, so the 4-element bias gradient would not be written"));
    // An empty c with bias needs no vector: nothing runs.
    CHECK_NOTHROW(blas::plan_lt_matmul(gpu::matrix::row_major(fake<const float>(0x100000), 0, 3), b,
                                       gpu::matrix::row_major(fake<float>(0x300000), 0, 5),
                                       blas::lt_epilogue::bias));
    CHECK(blas::to_string(blas::lt_epilogue::bias_gradient) == "bias_gradient");
    CHECK(blas::to_string(static_cast<blas::lt_epilogue>(9)) == "unknown");
}

TEST_CASE("cuBLASLt's descriptors hold the mapped problem (read back without a GPU)", "[blas]")
{
    // The weight gradient of a linear layer: dW (10 x 32, FP32) += dYᵀ (10 x 64) · X (64 x 32),
    // FP16 inputs, with the bias gradient (Σ over the batch of dY) from the epilogue.
    const auto dy = gpu::matrix::row_major(fake<const __half>(0x100000), 64, 10);
    const auto x = gpu::matrix::row_major(fake<const __half>(0x200000), 64, 32);
    const auto dw = gpu::matrix::row_major(fake<float>(0x300000), 10, 32);
    const blas::lt_problem p = blas::plan_lt_matmul(
        dy.transposed(), x, dw, blas::lt_epilogue::bias_gradient, fake<const float>(0x400000));
    const blas::detail::lt_descriptor_values v = blas::detail::read_back_descriptors(p);
    CHECK(v.compute_type == CUBLAS_COMPUTE_32F);
    CHECK(v.scale_type == CUDA_R_32F);
    CHECK(v.epilogue == CUBLASLT_EPILOGUE_BGRADB);
    // cuBLASLt's A is X as stored (column-major 32 x 64), its B is dY as stored (10 x 64), used
    // transposed: D (32 x 10, column-major) is dW row-major.
    CHECK(v.transa == CUBLAS_OP_N);
    CHECK(v.transb == CUBLAS_OP_T);
    CHECK(v.a_type == CUDA_R_16F);
    CHECK((v.a_rows == 32 && v.a_cols == 64 && v.a_ld == 32));
    CHECK(v.b_type == CUDA_R_16F);
    CHECK((v.b_rows == 10 && v.b_cols == 64 && v.b_ld == 10));
    CHECK(v.c_type == CUDA_R_32F);
    CHECK((v.c_rows == 32 && v.c_cols == 10 && v.c_ld == 32));

    const auto a = gpu::matrix::row_major(fake<const float>(0x100000), 4, 3);
    const auto b = gpu::matrix::row_major(fake<const float>(0x200000), 3, 5);
    const auto c = gpu::matrix::row_major(fake<float>(0x300000), 4, 5);
    const float* bias = fake<const float>(0x400000);
    const auto tf32 = blas::detail::read_back_descriptors(
        blas::plan_lt_matmul(a, b, c, blas::lt_epilogue::relu_bias, bias, true));
    CHECK(tf32.compute_type == CUBLAS_COMPUTE_32F_FAST_TF32);
    CHECK(tf32.epilogue == CUBLASLT_EPILOGUE_RELU_BIAS);
    CHECK(tf32.c_type == CUDA_R_32F);
    CHECK(blas::detail::read_back_descriptors(
              blas::plan_lt_matmul(a, b, c, blas::lt_epilogue::bias, bias))
              .epilogue == CUBLASLT_EPILOGUE_BIAS);
    CHECK(blas::detail::read_back_descriptors(blas::plan_lt_matmul(a, b, c)).epilogue ==
          CUBLASLT_EPILOGUE_DEFAULT);
}

TEST_CASE("lt_handle options follow a profile's TF32 switch", "[blas]")
{
    CHECK(blas::lt_handle_options::from_profile(gpu::profile::production()).allow_tf32);
    CHECK_FALSE(blas::lt_handle_options::from_profile(gpu::profile::testing()).allow_tf32);
    CHECK_FALSE(blas::lt_handle_options::from_profile(gpu::profile::production())
                    .workspace_bytes.has_value());
    CHECK(blas::detail::alignment_of(nullptr) == 256);
    CHECK(blas::detail::alignment_of(fake<const void>(0x1008)) == 8);
    CHECK(blas::detail::alignment_of(fake<const void>(0x10000)) == 256);
}

namespace {

// y = x·Wᵀ (+ b) (then ReLU) in double, x rows x in, W out x in, row-major.
std::vector<double> reference_linear(const std::vector<double>& x, const std::vector<double>& w,
                                     const std::vector<double>* b, std::int64_t rows,
                                     std::int64_t in, std::int64_t out, bool relu)
{
    std::vector<double> y(static_cast<std::size_t>(rows * out));
    for (std::int64_t i = 0; i < rows; ++i) {
        for (std::int64_t j = 0; j < out; ++j) {
            double sum = b != nullptr ? (*b)[static_cast<std::size_t>(j)] : 0.0;
            for (std::int64_t p = 0; p < in; ++p) {
                sum += x[static_cast<std::size_t>(i * in + p)] *
                       w[static_cast<std::size_t>(j * in + p)];
            }
            y[static_cast<std::size_t>(i * out + j)] = relu ? std::max(sum, 0.0) : sum;
        }
    }
    return y;
}

// The forward of a linear layer through lt_matmul(_bias) against the reference.
template <class T>
double linear_error(blas::lt_handle& h, gpu::stream_ref stream, bool bias, bool relu)
{
    constexpr std::int64_t rows = 37;
    constexpr std::int64_t in = 45;
    constexpr std::int64_t out = 19;
    const auto x = rounded_random<T>(rows * in, 1);
    const auto w = rounded_random<T>(out * in, 2);
    const auto b = rounded_random<T>(out, 3);
    auto dx = gpu::device_buffer<T>::from_host(x.stored, stream);
    auto dw = gpu::device_buffer<T>::from_host(w.stored, stream);
    auto db = gpu::device_buffer<T>::from_host(b.stored, stream);
    auto dy = gpu::device_buffer<T>::from_host(std::vector<T>(rows * out, narrow<T>(std::nan(""))),
                                               stream);
    const auto xv = gpu::matrix::row_major(static_cast<const T*>(dx.data()), rows, in);
    const auto wv = gpu::matrix::row_major(static_cast<const T*>(dw.data()), out, in).transposed();
    const auto yv = gpu::matrix::row_major(dy.data(), rows, out);
    if (bias) {
        blas::lt_matmul_bias(h, xv, wv, yv, static_cast<const T*>(db.data()), relu);
    } else {
        blas::lt_matmul(h, xv, wv, yv);
    }
    const auto ref =
        reference_linear(x.values, w.values, bias ? &b.values : nullptr, rows, in, out, relu);
    return gpu::test::relative_error<double>(widened(dy.to_host()), ref);
}

} // namespace

TEST_CASE("lt_matmul computes a linear layer's forward in FP32, FP16 and BF16, bias and ReLU fused",
          "[blas][gpu]")
{
    const gpu::stream stream;
    blas::lt_handle h(stream);
    for (const bool bias : {false, true}) {
        for (const bool relu : {false, true}) {
            if (relu && !bias) {
                continue;
            }
            INFO("bias " << bias << ", relu " << relu);
            CHECK(linear_error<float>(h, stream, bias, relu) < 1e-5);
            CHECK(linear_error<__half>(h, stream, bias, relu) < 1e-2);
            CHECK(linear_error<__nv_bfloat16>(h, stream, bias, relu) < 1e-2);
        }
    }
}

TEST_CASE("lt_matmul accumulates FP16 products into an FP32 c with beta = 1", "[blas][gpu]")
{
    const gpu::stream stream;
    blas::lt_handle h(stream);
    constexpr std::int64_t m = 23;
    constexpr std::int64_t n = 17;
    constexpr std::int64_t k = 41;
    const auto a = rounded_random<__half>(m * k, 4);
    const auto b = rounded_random<__half>(k * n, 5);
    const auto c = rounded_random<float>(m * n, 6);
    auto da = gpu::device_buffer<__half>::from_host(a.stored, stream);
    auto db = gpu::device_buffer<__half>::from_host(b.stored, stream);
    auto dc = gpu::device_buffer<float>::from_host(c.stored, stream);
    blas::lt_matmul(h, gpu::matrix::row_major(static_cast<const __half*>(da.data()), m, k),
                    gpu::matrix::row_major(static_cast<const __half*>(db.data()), k, n),
                    gpu::matrix::row_major(dc.data(), m, n), 1.0F, 1.0F);
    std::vector<double> ref = c.values;
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            for (std::int64_t p = 0; p < k; ++p) {
                ref[static_cast<std::size_t>(i * n + j)] +=
                    a.values[static_cast<std::size_t>(i * k + p)] *
                    b.values[static_cast<std::size_t>(p * n + j)];
            }
        }
    }
    // FP32 accumulation and output: only the FP32 sums round.
    CHECK(gpu::test::relative_error<double>(widened(dc.to_host()), ref) < 1e-5);
}

TEST_CASE("the bias-gradient epilogue gives dW += dYᵀ·X and Σ dY, or says it is not supported",
          "[blas][gpu]")
{
    const gpu::stream stream;
    blas::lt_handle h(stream);
    constexpr std::int64_t rows = 64;
    constexpr std::int64_t in = 32;
    constexpr std::int64_t out = 16;
    const auto dy = rounded_random<__half>(rows * out, 7);
    const auto x = rounded_random<__half>(rows * in, 8);
    auto ddy = gpu::device_buffer<__half>::from_host(dy.stored, stream);
    auto dx = gpu::device_buffer<__half>::from_host(x.stored, stream);
    auto dw = gpu::device_buffer<float>::from_host(std::vector<float>(out * in, 0.0F), stream);
    auto db = gpu::device_buffer<float>::from_host(std::vector<float>(out, std::nanf("")), stream);
    const auto a =
        gpu::matrix::row_major(static_cast<const __half*>(ddy.data()), rows, out).transposed();
    const auto b = gpu::matrix::row_major(static_cast<const __half*>(dx.data()), rows, in);
    const auto c = gpu::matrix::row_major(dw.data(), out, in);
    if (!blas::lt_supports_bias_gradient(h, a, b, c, db.data())) {
        CHECK_THROWS_AS(blas::lt_matmul_bias_gradient(h, a, b, c, db.data()), blas::blas_error);
        WARN("cuBLASLt has no BGRADB kernel for FP16 inputs and FP32 output on this GPU");
        return;
    }
    blas::lt_matmul_bias_gradient(h, a, b, c, db.data(), 1.0F);
    std::vector<double> ref_w(static_cast<std::size_t>(out * in), 0.0);
    std::vector<double> ref_b(static_cast<std::size_t>(out), 0.0);
    for (std::int64_t o = 0; o < out; ++o) {
        for (std::int64_t r = 0; r < rows; ++r) {
            const double g = dy.values[static_cast<std::size_t>(r * out + o)];
            ref_b[static_cast<std::size_t>(o)] += g;
            for (std::int64_t i = 0; i < in; ++i) {
                ref_w[static_cast<std::size_t>(o * in + i)] +=
                    g * x.values[static_cast<std::size_t>(r * in + i)];
            }
        }
    }
    CHECK(gpu::test::relative_error<double>(widened(dw.to_host()), ref_w) < 1e-5);
    CHECK(gpu::test::relative_error<double>(widened(db.to_host()), ref_b) < 1e-5);
}

TEST_CASE("the heuristic runs once per problem: shapes, epilogue and alignment make a problem",
          "[blas][gpu]")
{
    const gpu::stream stream;
    blas::lt_handle h(stream);
    gpu::device_buffer<float> a(64 * 64 + 1, stream);
    gpu::device_buffer<float> b(64 * 64, stream);
    gpu::device_buffer<float> c(64 * 64, stream);
    gpu::device_buffer<float> bias(64, stream);
    a.fill_zero_async(stream);
    b.fill_zero_async(stream);
    bias.fill_zero_async(stream);
    const auto av = gpu::matrix::row_major(static_cast<const float*>(a.data()), 64, 64);
    const auto bv = gpu::matrix::row_major(static_cast<const float*>(b.data()), 64, 64);
    const auto cv = gpu::matrix::row_major(c.data(), 64, 64);
    blas::lt_matmul(h, av, bv, cv);
    blas::lt_matmul(h, av, bv, cv);
    CHECK(h.cached_problems() == 1);
    blas::lt_matmul_bias(h, av, bv, cv, static_cast<const float*>(bias.data()));
    CHECK(h.cached_problems() == 2);
    blas::lt_matmul(h, gpu::matrix::row_major(static_cast<const float*>(a.data()) + 1, 64, 64), bv,
                    cv);
    CHECK(h.cached_problems() == 3); // a 4-byte aligned A is another problem
    h.set_workspace_size(1 << 20);
    CHECK(h.cached_problems() == 0);
    blas::lt_matmul(h, av, bv, cv);
    stream.synchronize();
    std::vector<float> out = c.to_host();
    CHECK(out[0] == 0.0F);
    CHECK(out.back() == 0.0F);
}
