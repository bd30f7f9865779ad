// gpu/blas/gemm.hpp: argument handling without a GPU, and on a GPU every element type, layout
// and transpose combination, odd sizes, batches, TF32 on and off, reproducibility and the
// profile checks, against a float64 CPU reference (OpenBLAS dgemm, itself checked against a
// naive loop in the host_blas tests), with outputs poisoned with NaN first; a GEMM captured in
// a CUDA graph with cudagap's allocations and replayed, and the profile checks refused during
// a capture.
#include <gpu/blas/gemm.hpp>
#include <gpu/blas/lt.hpp>
#include <gpu/blas/numerics.hpp>
#include <gpu/host_blas.hpp>

#include <cublas_v2.h>

#include "catch.hpp"
#include <element_cast.hpp>
#include <test_support.hpp>

#include <gpu/capture.hpp>
#include <gpu/graph.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace blas = gpu::blas;

// What gemm accepts, checked at compile time.
static_assert(blas::gemm_types<float, float, float>);
static_assert(blas::gemm_types<const float, float, float>);
static_assert(blas::gemm_types<const double, const double, double>);
static_assert(blas::gemm_types<const __half, const __half, __half>);
static_assert(blas::gemm_types<const __half, const __half, float>);
static_assert(blas::gemm_types<const __nv_bfloat16, __nv_bfloat16, float>);
static_assert(!blas::gemm_types<float, float, double>);
static_assert(!blas::gemm_types<double, double, float>);
static_assert(!blas::gemm_types<__half, __nv_bfloat16, float>);
static_assert(!blas::gemm_types<float, float, const float>);
static_assert(!blas::gemm_types<int, int, int>);
static_assert(std::is_same_v<blas::scalar_t<double>, double>);
static_assert(std::is_same_v<blas::scalar_t<__half>, float>);

namespace {

float* const fake_a = reinterpret_cast<float*>(std::uintptr_t{0x100000});
float* const fake_b = reinterpret_cast<float*>(std::uintptr_t{0x200000});
float* const fake_c = reinterpret_cast<float*>(std::uintptr_t{0x300000});

// Host storage for one operand plus its view; `values` are the elements as doubles (after
// rounding to T), laid out exactly like `storage`, for the float64 reference.
template <class T>
struct host_matrix {
    std::vector<T> storage;
    std::vector<double> values;
    std::int64_t rows, cols, ld;
    gpu::matrix::layout order;

    host_matrix(std::int64_t r, std::int64_t c, gpu::matrix::layout o, std::int64_t padding,
                std::uint32_t seed, bool poison = false)
        : rows(r), cols(c), order(o)
    {
        const std::int64_t inner = o == gpu::matrix::layout::row_major ? c : r;
        const std::int64_t outer = o == gpu::matrix::layout::row_major ? r : c;
        ld = std::max<std::int64_t>(1, inner) + padding;
        const auto size = static_cast<std::size_t>(std::max<std::int64_t>(1, outer) * ld);
        const auto random = gpu::test::random_doubles(size, seed);
        for (const double x : random) {
            const T value =
                gpu::test::narrow<T>(poison ? std::numeric_limits<double>::quiet_NaN() : x);
            storage.push_back(value);
            values.push_back(gpu::test::widen(value));
        }
    }
    [[nodiscard]] gpu::matrix::matrix_view<double> reference_view()
    {
        return {values.data(), rows, cols, ld, order};
    }
};

// The device copy of a host_matrix and a view of it.
template <class T>
struct device_matrix {
    gpu::device_buffer<T> buffer;
    gpu::matrix::matrix_view<T> view;
    explicit device_matrix(const host_matrix<T>& host)
        : buffer(gpu::device_buffer<T>::from_host(host.storage, gpu::legacy_default_stream)),
          view(buffer.data(), host.rows, host.cols, host.ld, host.order)
    {}
    [[nodiscard]] gpu::matrix::matrix_view<const T> cview() const { return view; }
};

struct shape {
    std::int64_t m, n, k;
};

// Runs c = alpha·a·b + beta·c on the GPU and returns ‖out − ref‖/‖ref‖ against float64.
template <class In, class Out>
double gemm_error(blas::handle& h, shape s, gpu::matrix::layout la, gpu::matrix::layout lb,
                  gpu::matrix::layout lc, double alpha = 1.0, double beta = 0.0,
                  std::int64_t padding = 0)
{
    host_matrix<In> a(s.m, s.k, la, padding, 101);
    host_matrix<In> b(s.k, s.n, lb, padding, 202);
    host_matrix<Out> c(s.m, s.n, lc, padding, 303, beta == 0.0);
    device_matrix<In> da(a);
    device_matrix<In> db(b);
    device_matrix<Out> dc(c);
    blas::gemm(h, da.cview(), db.cview(), dc.view, static_cast<blas::scalar_t<In>>(alpha),
               static_cast<blas::scalar_t<In>>(beta));
    const std::vector<Out> out = dc.buffer.to_host();
    host_matrix<double> ref(s.m, s.n, lc, padding, 303);
    ref.values = c.values;
    gpu::host_blas::gemm(a.reference_view(), b.reference_view(), ref.reference_view(), alpha, beta);
    const gpu::matrix::matrix_view<const Out> out_view(out.data(), s.m, s.n, c.ld, lc);
    return gpu::test::relative_error<double>(gpu::test::gather(out_view),
                                             gpu::test::gather(ref.reference_view()));
}

constexpr gpu::matrix::layout layouts[] = {gpu::matrix::layout::row_major,
                                           gpu::matrix::layout::column_major};
constexpr shape odd_shapes[] = {{1, 1, 1}, {7, 7, 7}, {33, 7, 257}, {257, 33, 1}, {7, 257, 33}};

template <class In, class Out>
void check_every_layout(blas::handle& h, double bound)
{
    for (const shape& s : odd_shapes) {
        for (const auto la : layouts) {
            for (const auto lb : layouts) {
                for (const auto lc : layouts) {
                    INFO("m=" << s.m << " n=" << s.n << " k=" << s.k << ", a "
                              << gpu::matrix::to_string(la) << ", b " << gpu::matrix::to_string(lb)
                              << ", c " << gpu::matrix::to_string(lc));
                    CHECK(gemm_error<In, Out>(h, s, la, lb, lc) < bound);
                }
            }
        }
    }
    // A large square case, alpha and beta, and padded leading dimensions.
    CHECK(gemm_error<In, Out>(h, {1000, 1000, 1000}, gpu::matrix::layout::row_major,
                              gpu::matrix::layout::row_major,
                              gpu::matrix::layout::row_major) < bound);
    CHECK(gemm_error<In, Out>(h, {100, 60, 80}, gpu::matrix::layout::row_major,
                              gpu::matrix::layout::column_major, gpu::matrix::layout::row_major,
                              0.5, -2.0, 3) < bound);
}

} // namespace

TEST_CASE("gemm checks shapes before it touches the handle", "[blas]")
{
    blas::handle empty = blas::handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    const gpu::matrix::matrix_view<const float> a(fake_a, 3, 4);
    const gpu::matrix::matrix_view<const float> b(fake_b, 5, 2);
    CHECK_THROWS_AS(blas::gemm(empty, a, b, gpu::matrix::matrix_view<float>(fake_c, 3, 2)),
                    std::invalid_argument);
    CHECK_THROWS_WITH(
        blas::gemm_strided_batched(empty, a, gpu::matrix::matrix_view<const float>(fake_b, 4, 2),
                                   gpu::matrix::matrix_view<float>(fake_c, 3, 2),
                                   gpu::matrix::strided_batch{2, 12, 8, 5}),
        ContainsSubstring("gpu::blas::gemm_strided_batched: c's batch stride 5"));
}

TEST_CASE("gemm on an empty handle throws logic_error instead of calling cuBLAS with null",
          "[blas]")
{
    blas::handle empty = blas::handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    const gpu::matrix::matrix_view<const float> a(fake_a, 3, 4);
    const gpu::matrix::matrix_view<const float> b(fake_b, 4, 2);
    CHECK_THROWS_WITH(blas::gemm(empty, a, b, gpu::matrix::matrix_view<float>(fake_c, 3, 2)),
                      ContainsSubstring("gpu::blas::gemm: the gpu::blas::handle is empty"));
}

TEST_CASE("each element type and math mode has its compute type", "[blas]")
{
    using blas::math_mode;
    CHECK(blas::compute_type_name<float>(math_mode::default_math) == "CUBLAS_COMPUTE_32F");
    CHECK(blas::compute_type_name<float>(math_mode::tf32) == "CUBLAS_COMPUTE_32F_FAST_TF32");
    CHECK(blas::compute_type_name<float>(math_mode::strict_fp32) == "CUBLAS_COMPUTE_32F_PEDANTIC");
    CHECK(blas::compute_type_name<double>(math_mode::default_math) == "CUBLAS_COMPUTE_64F");
    CHECK(blas::compute_type_name<double>(math_mode::tf32) == "CUBLAS_COMPUTE_64F");
    CHECK(blas::compute_type_name<double>(math_mode::strict_fp32) == "CUBLAS_COMPUTE_64F_PEDANTIC");
    CHECK(blas::compute_type_name<__half>(math_mode::tf32) == "CUBLAS_COMPUTE_32F");
    CHECK(blas::compute_type_name<__nv_bfloat16>(math_mode::default_math) == "CUBLAS_COMPUTE_32F");
    CHECK(blas::compute_type_name<__half>(math_mode::strict_fp32) == "CUBLAS_COMPUTE_32F_PEDANTIC");
}

TEST_CASE("FP32 gemm matches float64 for every layout and odd size", "[blas][gpu]")
{
    blas::handle h(gpu::legacy_default_stream);
    check_every_layout<float, float>(h, 1e-5);
    h.set_math(blas::math_mode::strict_fp32);
    check_every_layout<float, float>(h, 1e-5);
}

TEST_CASE("FP64 gemm matches float64 for every layout and odd size", "[blas][gpu]")
{
    blas::handle h(gpu::legacy_default_stream);
    check_every_layout<double, double>(h, 1e-12);
}

TEST_CASE("FP16 gemm with FP32 accumulation, FP16 or FP32 output", "[blas][gpu]")
{
    blas::handle h(gpu::legacy_default_stream);
    check_every_layout<__half, __half>(h, 1e-2);
    check_every_layout<__half, float>(h, 1e-2);
}

TEST_CASE("BF16 gemm with FP32 accumulation, BF16 or FP32 output", "[blas][gpu]")
{
    blas::handle h(gpu::legacy_default_stream);
    check_every_layout<__nv_bfloat16, __nv_bfloat16>(h, 1e-2);
    check_every_layout<__nv_bfloat16, float>(h, 1e-2);
}

TEST_CASE("transposed views compute Aᵀ·Bᵀ", "[blas][gpu]")
{
    blas::handle h(gpu::legacy_default_stream);
    const std::int64_t m = 33;
    const std::int64_t n = 7;
    const std::int64_t k = 257;
    host_matrix<float> a(k, m, gpu::matrix::layout::row_major, 0, 1);    // stored k x m
    host_matrix<float> b(n, k, gpu::matrix::layout::column_major, 2, 2); // stored n x k
    host_matrix<float> c(m, n, gpu::matrix::layout::row_major, 0, 3, true);
    device_matrix<float> da(a);
    device_matrix<float> db(b);
    device_matrix<float> dc(c);
    blas::gemm(h, da.cview().transposed(), db.cview().transposed(), dc.view);
    const auto out = dc.buffer.to_host();
    std::vector<double> ref(static_cast<std::size_t>(m * n));
    gpu::host_blas::gemm(a.reference_view().transposed(), b.reference_view().transposed(),
                         gpu::matrix::row_major(ref, m, n));
    CHECK(gpu::test::relative_error<float>(out, ref) < 1e-5);
}

TEST_CASE("TF32 on and off give errors in their expected ranges", "[blas][gpu]")
{
    const shape s{1024, 1024, 1024};
    const auto row = gpu::matrix::layout::row_major;
    blas::handle h(gpu::legacy_default_stream, {.math = blas::math_mode::tf32});
    const double tf32 = gemm_error<float, float>(h, s, row, row, row);
    h.set_math(blas::math_mode::default_math);
    const double fp32 = gemm_error<float, float>(h, s, row, row, row);
    INFO("TF32 error " << tf32 << ", FP32 error " << fp32);
    CHECK(fp32 < 1e-5);
    CHECK(tf32 < 1e-3);
    if (gpu::current_device().capability().has_tf32()) {
        // A 10-bit mantissa shows: if this fails, the TF32 mode did not reach the tensor cores.
        CHECK(tf32 > 1e-5);
    }
}

TEST_CASE("strided batches match the reference and leave the gaps alone", "[blas][gpu]")
{
    blas::handle h(gpu::legacy_default_stream);
    const std::int64_t m = 33;
    const std::int64_t n = 17;
    const std::int64_t k = 9;
    const std::int64_t count = 4;
    const gpu::matrix::strided_batch batch{count, m * k + 5, 0, m * n + 3}; // b broadcast
    std::vector<float> a_host(static_cast<std::size_t>(count * batch.stride_a));
    const auto random = gpu::test::random_floats(a_host.size(), 7);
    std::copy(random.begin(), random.end(), a_host.begin());
    const auto b_host = gpu::test::random_floats(static_cast<std::size_t>(k * n), 8);
    const auto c_host =
        gpu::test::poisoned<float>(static_cast<std::size_t>(count * batch.stride_c));
    auto a = gpu::device_buffer<float>::from_host(a_host, gpu::legacy_default_stream);
    auto b = gpu::device_buffer<float>::from_host(b_host, gpu::legacy_default_stream);
    auto c = gpu::device_buffer<float>::from_host(c_host, gpu::legacy_default_stream);
    blas::gemm_strided_batched(h, gpu::matrix::matrix_view<const float>(a.data(), m, k),
                               gpu::matrix::matrix_view<const float>(b.data(), k, n),
                               gpu::matrix::matrix_view<float>(c.data(), m, n), batch);
    const auto out = c.to_host();
    for (std::int64_t i = 0; i < count; ++i) {
        INFO("batch " << i);
        std::vector<double> a_ref(a_host.begin() + i * batch.stride_a,
                                  a_host.begin() + i * batch.stride_a + m * k);
        std::vector<double> b_ref(b_host.begin(), b_host.end());
        std::vector<double> ref(static_cast<std::size_t>(m * n));
        gpu::host_blas::gemm(gpu::matrix::row_major(std::as_const(a_ref), m, k),
                             gpu::matrix::row_major(std::as_const(b_ref), k, n),
                             gpu::matrix::row_major(ref, m, n));
        const std::span<const float> got(out.data() + i * batch.stride_c,
                                         static_cast<std::size_t>(m * n));
        CHECK(gpu::test::relative_error<float>(got, ref) < 1e-5);
        for (std::int64_t gap = m * n; gap < batch.stride_c; ++gap) {
            CHECK(std::isnan(out[static_cast<std::size_t>(i * batch.stride_c + gap)]));
        }
    }
}

TEST_CASE("with atomics forbidden, repeated runs are bitwise identical", "[blas][gpu]")
{
    blas::handle h(gpu::profile::testing(), gpu::legacy_default_stream);
    REQUIRE(h.atomics() == blas::atomics_mode::forbidden);
    const std::int64_t n = 1500;
    auto a = gpu::device_buffer<float>::from_host(
        gpu::test::random_floats(static_cast<std::size_t>(n * n), 1), gpu::legacy_default_stream);
    auto b = gpu::device_buffer<float>::from_host(
        gpu::test::random_floats(static_cast<std::size_t>(n * n), 2), gpu::legacy_default_stream);
    gpu::device_buffer<float> c(static_cast<std::size_t>(n * n), gpu::legacy_default_stream);
    std::vector<std::vector<float>> runs;
    for (int run = 0; run < 3; ++run) {
        c.copy_from_host(gpu::test::poisoned<float>(c.size()));
        blas::gemm(h, gpu::matrix::row_major(std::as_const(a), n, n),
                   gpu::matrix::row_major(std::as_const(b), n, n), gpu::matrix::row_major(c, n, n));
        runs.push_back(c.to_host());
    }
    REQUIRE_FALSE(std::isnan(runs[0][0]));
    CHECK(std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * sizeof(float)) == 0);
    CHECK(std::memcmp(runs[0].data(), runs[2].data(), runs[0].size() * sizeof(float)) == 0);
}

TEST_CASE("gemm on a given stream binds the handle to it", "[blas][gpu]")
{
    gpu::stream other(gpu::stream_flags::non_blocking);
    blas::handle h(gpu::legacy_default_stream);
    const std::int64_t n = 64;
    auto a = gpu::device_buffer<float>::from_host(
        gpu::test::random_floats(static_cast<std::size_t>(n * n), 1), gpu::legacy_default_stream);
    auto c = gpu::device_buffer<float>::from_host(
        gpu::test::poisoned<float>(static_cast<std::size_t>(n * n)), gpu::legacy_default_stream);
    blas::gemm(h, gpu::matrix::row_major(std::as_const(a), n, n),
               gpu::matrix::row_major(std::as_const(a), n, n), gpu::matrix::row_major(c, n, n),
               1.0F, 0.0F, other);
    CHECK(h.stream() == other.ref());
    other.synchronize();
    const auto finite = blas::check_finite(c);
    CHECK(finite.all_finite());
    CHECK(finite.elements == static_cast<std::size_t>(n * n));
}

TEST_CASE("the development profile throws at the gemm that produces NaN, naming it", "[blas][gpu]")
{
    blas::handle h(gpu::profile::development(), gpu::legacy_default_stream);
    const std::int64_t n = 16;
    auto a_host = gpu::test::random_floats(static_cast<std::size_t>(n * n), 1);
    a_host[5] = std::numeric_limits<float>::quiet_NaN();
    auto a = gpu::device_buffer<float>::from_host(a_host, gpu::legacy_default_stream);
    gpu::device_buffer<float> c(static_cast<std::size_t>(n * n), gpu::legacy_default_stream);
    try {
        blas::gemm(h, gpu::matrix::row_major(std::as_const(a), n, n),
                   gpu::matrix::row_major(std::as_const(a), n, n), gpu::matrix::row_major(c, n, n));
        FAIL("no numerics_error although the input holds a NaN");
    } catch (const gpu::numerics_error& e) {
        CHECK_THAT(e.operation(), ContainsSubstring("gpu::blas::gemm (FP32 inputs"));
        CHECK(e.report().nan_count > 0);
        CHECK(e.report().first_index.has_value());
        CHECK(e.device() == h.device().id());
        CHECK_THAT(std::string(e.what()), ContainsSubstring("non-finite output") &&
                                              ContainsSubstring("NaN") &&
                                              ContainsSubstring("check_finite"));
    }
    // The same gemm on finite data passes all checks and is complete when it returns.
    a_host[5] = 0.5F;
    a.copy_from_host(a_host);
    blas::gemm(h, gpu::matrix::row_major(std::as_const(a), n, n),
               gpu::matrix::row_major(std::as_const(a), n, n), gpu::matrix::row_major(c, n, n));
    CHECK(h.stream().is_ready());
}

TEST_CASE("a handle in device pointer mode is refused instead of reading host scalars as addresses",
          "[blas][gpu]")
{
    blas::handle h(gpu::legacy_default_stream);
    const std::int64_t n = 8;
    auto a = gpu::device_buffer<float>::from_host(
        gpu::test::random_floats(static_cast<std::size_t>(n * n), 1), gpu::legacy_default_stream);
    gpu::device_buffer<float> c(static_cast<std::size_t>(n * n), gpu::legacy_default_stream);
    // A change through the raw handle is seen once the handle refreshes its record.
    REQUIRE(cublasSetPointerMode(h.get(), CUBLAS_POINTER_MODE_DEVICE) == CUBLAS_STATUS_SUCCESS);
    h.refresh_settings();
    CHECK_THROWS_WITH(
        blas::gemm(h, gpu::matrix::row_major(std::as_const(a), n, n),
                   gpu::matrix::row_major(std::as_const(a), n, n), gpu::matrix::row_major(c, n, n)),
        ContainsSubstring("gpu::blas::gemm: the cuBLAS handle is in device pointer mode"));
    REQUIRE(cublasSetPointerMode(h.get(), CUBLAS_POINTER_MODE_HOST) == CUBLAS_STATUS_SUCCESS);
    h.refresh_settings();
    blas::gemm(h, gpu::matrix::row_major(std::as_const(a), n, n),
               gpu::matrix::row_major(std::as_const(a), n, n), gpu::matrix::row_major(c, n, n));
    CHECK(blas::check_finite(c).all_finite());

    // A raw handle adopted in device pointer mode is refused without a refresh: adoption reads it.
    cublasHandle_t raw = h.release();
    REQUIRE(cublasSetPointerMode(raw, CUBLAS_POINTER_MODE_DEVICE) == CUBLAS_STATUS_SUCCESS);
    blas::handle adopted = blas::handle::from_native_handle(raw, gpu::legacy_default_stream);
    CHECK_THROWS_WITH(
        blas::gemm(adopted, gpu::matrix::row_major(std::as_const(a), n, n),
                   gpu::matrix::row_major(std::as_const(a), n, n), gpu::matrix::row_major(c, n, n)),
        ContainsSubstring("gpu::blas::gemm: the cuBLAS handle is in device pointer mode"));
}

TEST_CASE("a gemm captured with cudagap's allocations replays on the inputs of each launch",
          "[blas][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    blas::handle h(s);
    const std::int64_t m = 33;
    const std::int64_t k = 17;
    const std::int64_t n = 9;
    host_matrix<float> a(m, k, gpu::matrix::layout::row_major, 0, 11);
    host_matrix<float> b(k, n, gpu::matrix::layout::row_major, 0, 12);
    auto da = gpu::device_buffer<float>::from_host(a.storage, s);
    const auto db = gpu::device_buffer<float>::from_host(b.storage, s);
    gpu::device_buffer<float> dc(static_cast<std::size_t>(m * n), s);
    const auto a_view = gpu::matrix::row_major(std::as_const(da), m, k);
    const auto b_view = gpu::matrix::row_major(db, k, n);
    // Warm-up outside the capture: a library's first call may load modules or allocate.
    blas::gemm(h, a_view, b_view, gpu::matrix::row_major(dc, m, n));
    const gpu::graph g = gpu::capture(s, [&](gpu::stream_ref captured) {
        gpu::device_buffer<float> product(static_cast<std::size_t>(m * n), captured);
        blas::gemm(h, a_view, b_view, gpu::matrix::row_major(product, m, n));
        dc.copy_from_async(product, captured);
    });
    gpu::graph_exec exec(g);
    for (const std::uint32_t seed : {21U, 22U, 23U}) {
        a = host_matrix<float>(m, k, gpu::matrix::layout::row_major, 0, seed);
        da.copy_from_host(a.storage); // new inputs, same addresses: the graph reads them
        dc.copy_from_host(gpu::test::poisoned<float>(dc.size()));
        exec.launch(s);
        const std::vector<float> out = dc.to_host();
        host_matrix<double> ref(m, n, gpu::matrix::layout::row_major, 0, 1);
        gpu::host_blas::gemm(a.reference_view(), b.reference_view(), ref.reference_view(), 1.0,
                             0.0);
        INFO("launch with inputs from seed " << seed);
        CHECK(gpu::test::relative_error<float>(out, ref.values) < 1e-5);
    }
}

TEST_CASE("a profile's synchronising checks refuse a gemm during a capture and leave it intact",
          "[blas][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    blas::handle h(gpu::profile::development(), s);
    const std::int64_t n = 8;
    const auto a = gpu::device_buffer<float>::from_host(
        gpu::test::random_floats(static_cast<std::size_t>(n * n), 1), s);
    gpu::device_buffer<float> c(static_cast<std::size_t>(n * n), s);
    gpu::capture_scope scope(s);
    CHECK_THROWS_AS(blas::gemm(h, gpu::matrix::row_major(a, n, n), gpu::matrix::row_major(a, n, n),
                               gpu::matrix::row_major(c, n, n)),
                    std::logic_error);
    CHECK_THROWS_WITH(
        blas::gemm(h, gpu::matrix::row_major(a, n, n), gpu::matrix::row_major(a, n, n),
                   gpu::matrix::row_major(c, n, n)),
        ContainsSubstring("gpu::blas::gemm") && ContainsSubstring("synchronous_checks") &&
            ContainsSubstring("use a profile without synchronous_checks while capturing"));
    h.set_synchronous_checks(false);
    CHECK_THROWS_WITH(blas::gemm(h, gpu::matrix::row_major(a, n, n),
                                 gpu::matrix::row_major(a, n, n), gpu::matrix::row_major(c, n, n)),
                      ContainsSubstring("check_numerics"));
    CHECK(gpu::capture_status_of(s) == gpu::capture_status::active); // nothing broke the capture
    const gpu::graph g = scope.end();
    CHECK(g.node_count() == 0); // refused before anything was queued
}

TEST_CASE("a handle refuses to move its workspace into a capture from a stream outside it",
          "[blas][gpu]")
{
    gpu::stream outside(gpu::stream_flags::non_blocking);
    gpu::stream s(gpu::stream_flags::non_blocking);
    blas::handle h(outside); // the recommended workspace: moving it makes the new stream wait
    blas::lt_handle lt(outside);
    gpu::capture_scope scope(s);
    CHECK_THROWS_WITH(h.set_stream(s),
                      ContainsSubstring("gpu::blas::handle::set_stream") &&
                          ContainsSubstring("bind the handle to the capturing stream"));
    CHECK_THROWS_WITH(lt.set_stream(s), ContainsSubstring("gpu::blas::lt_handle::set_stream") &&
                                            ContainsSubstring("before the capture begins"));
    CHECK(gpu::capture_status_of(s) == gpu::capture_status::active); // nothing broke the capture
    CHECK(h.stream() == outside.ref());
    const gpu::graph g = scope.end();
    CHECK(g.node_count() == 0);
}
