// gpu/host_blas.hpp: the CPU baseline, against a float64 reference, on the real BLAS of this
// machine (and the naive loop, which stands in when there is none).
#include <gpu/host_blas.hpp>

#include "catch.hpp"
#include <test_support.hpp>

#include <string>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace host_blas = gpu::host_blas;

namespace {

// One operand: storage with room for a leading dimension larger than needed (padding), and a
// view of it in the requested layout.
template <class T>
struct operand {
    std::vector<T> storage;
    gpu::matrix::matrix_view<T> view;

    operand(std::int64_t rows, std::int64_t cols, gpu::matrix::layout order, std::int64_t padding,
            std::uint32_t seed)
    {
        const std::int64_t inner = order == gpu::matrix::layout::row_major ? cols : rows;
        const std::int64_t outer = order == gpu::matrix::layout::row_major ? rows : cols;
        const std::int64_t ld = std::max<std::int64_t>(1, inner) + padding;
        const auto values = gpu::test::random_doubles(
            static_cast<std::size_t>(std::max<std::int64_t>(1, outer) * ld), seed);
        storage.assign(values.begin(), values.end());
        view = gpu::matrix::matrix_view<T>(storage.data(), rows, cols, ld, order);
    }
};

constexpr gpu::matrix::layout layouts[] = {gpu::matrix::layout::row_major,
                                           gpu::matrix::layout::column_major};

template <class T, class Gemm>
void check_every_layout(Gemm gemm, double bound)
{
    for (const auto& [m, n, k] : {std::tuple{1, 1, 1}, std::tuple{7, 5, 3}, std::tuple{33, 17, 65},
                                  std::tuple{64, 64, 64}}) {
        for (const gpu::matrix::layout la : layouts) {
            for (const gpu::matrix::layout lb : layouts) {
                for (const gpu::matrix::layout lc : layouts) {
                    for (const std::int64_t padding : {0, 3}) {
                        INFO("m=" << m << " n=" << n << " k=" << k << " a "
                                  << gpu::matrix::to_string(la) << ", b "
                                  << gpu::matrix::to_string(lb) << ", c "
                                  << gpu::matrix::to_string(lc) << ", padding " << padding);
                        operand<T> a(m, k, la, padding, 1);
                        operand<T> b(k, n, lb, padding, 2);
                        operand<T> c(m, n, lc, padding, 3);
                        const auto before = c.storage;
                        const double alpha = 0.75;
                        const double beta = -0.5;
                        const auto ref =
                            gpu::test::reference_gemm(a.view, b.view, c.view, alpha, beta);
                        gemm(gpu::matrix::matrix_view<const T>(a.view),
                             gpu::matrix::matrix_view<const T>(b.view), c.view,
                             static_cast<T>(alpha), static_cast<T>(beta));
                        const auto out = gpu::test::gather(c.view);
                        CHECK(gpu::test::relative_error<double>(out, ref) < bound);
                        // The padding between rows (or columns) of c is left alone.
                        std::size_t touched_padding = 0;
                        const auto logical = [&](std::size_t index) {
                            const auto ld = static_cast<std::size_t>(c.view.leading_dimension());
                            const auto inner = static_cast<std::size_t>(
                                lc == gpu::matrix::layout::row_major ? c.view.cols()
                                                                     : c.view.rows());
                            return index % ld < inner;
                        };
                        for (std::size_t i = 0; i < c.storage.size(); ++i) {
                            if (!logical(i) && c.storage[i] != before[i]) {
                                ++touched_padding;
                            }
                        }
                        CHECK(touched_padding == 0);
                    }
                }
            }
        }
    }
}

template <class T, class Gemm>
void check_transposed_views(Gemm gemm, double bound)
{
    // C = Aᵀ·Bᵀ with A stored as k x m and B as n x k, both row-major.
    const std::int64_t m = 9;
    const std::int64_t n = 4;
    const std::int64_t k = 6;
    operand<T> a(k, m, gpu::matrix::layout::row_major, 0, 11);
    operand<T> b(n, k, gpu::matrix::layout::row_major, 0, 12);
    std::vector<T> c_storage(static_cast<std::size_t>(m * n), std::numeric_limits<T>::quiet_NaN());
    const auto c = gpu::matrix::row_major(c_storage, m, n);
    const auto at = a.view.transposed();
    const auto bt = b.view.transposed();
    REQUIRE(at.rows() == m);
    REQUIRE(bt.cols() == n);
    const auto ref = gpu::test::reference_gemm(at, bt, c, 1.0, 0.0);
    gemm(gpu::matrix::matrix_view<const T>(at), gpu::matrix::matrix_view<const T>(bt), c, T(1),
         T(0));
    CHECK(gpu::test::relative_error<double>(gpu::test::gather(c), ref) < bound);
}

// The overload sets as callables, so that one test body serves float and double.
const auto blas_gemm = [](auto a, auto b, auto c, auto alpha, auto beta) {
    host_blas::gemm(a, b, c, alpha, beta);
};
const auto naive = [](auto a, auto b, auto c, auto alpha, auto beta) {
    host_blas::naive_gemm(a, b, c, alpha, beta);
};

gpu::host_blas::cpu_features avx512_cpu()
{
    gpu::host_blas::cpu_features cpu;
    cpu.model = "Intel(R) Xeon(R) Processor";
    cpu.avx2 = cpu.fma = cpu.avx512f = cpu.avx512bw = cpu.avx512dq = cpu.avx512vl = true;
    return cpu;
}

} // namespace

TEST_CASE("host sgemm matches a float64 reference for every layout, padding and size",
          "[host_blas]")
{
    check_every_layout<float>(blas_gemm, 1e-5);
}

TEST_CASE("host dgemm matches a float64 reference for every layout, padding and size",
          "[host_blas]")
{
    check_every_layout<double>(blas_gemm, 1e-13);
}

TEST_CASE("the naive loop matches the reference too, and is what it says", "[host_blas]")
{
    check_every_layout<float>(naive, 1e-5);
    check_every_layout<double>(naive, 1e-13);
}

TEST_CASE("host gemm takes transposes as views and writes every element with beta = 0",
          "[host_blas]")
{
    check_transposed_views<float>(blas_gemm, 1e-5);
    check_transposed_views<double>(blas_gemm, 1e-13);
    check_transposed_views<float>(naive, 1e-5);
}

TEST_CASE("host gemm with k = 0 scales c by beta, with m = 0 does nothing", "[host_blas]")
{
    std::vector<float> a;
    std::vector<float> b;
    std::vector<float> c{1, 2, 3, 4, 5, 6};
    host_blas::gemm(gpu::matrix::row_major(std::as_const(a), 2, 0),
                    gpu::matrix::row_major(std::as_const(b), 0, 3), gpu::matrix::row_major(c, 2, 3),
                    1.0F, 2.0F);
    CHECK(c == std::vector<float>{2, 4, 6, 8, 10, 12});
    host_blas::gemm(gpu::matrix::row_major(std::as_const(a), 0, 0),
                    gpu::matrix::row_major(std::as_const(b), 0, 3), gpu::matrix::row_major(c, 0, 3),
                    1.0F, 0.0F);
    CHECK(c == std::vector<float>{2, 4, 6, 8, 10, 12});
}

TEST_CASE("host gemm checks shapes before calling the BLAS and names them", "[host_blas]")
{
    std::vector<float> a(12, 1.0F);
    std::vector<float> b(12, 1.0F);
    std::vector<float> c(12, 0.0F);
    const auto av = gpu::matrix::row_major(std::as_const(a), 3, 4);
    CHECK_THROWS_WITH(host_blas::gemm(av, gpu::matrix::row_major(std::as_const(b), 3, 4),
                                      gpu::matrix::row_major(c, 3, 4)),
                      ContainsSubstring("gpu::host_blas::gemm: the inner dimensions differ") &&
                          ContainsSubstring("a is 3x4 row-major (ld 4)") &&
                          ContainsSubstring("b is 3x4 row-major (ld 4)"));
    CHECK_THROWS_WITH(host_blas::gemm(av, gpu::matrix::row_major(std::as_const(b), 4, 3),
                                      gpu::matrix::row_major(c, 4, 3)),
                      ContainsSubstring("c is 4x3 row-major (ld 3)") &&
                          ContainsSubstring("is 3x3"));
    CHECK_THROWS_WITH(host_blas::naive_gemm(av, gpu::matrix::row_major(std::as_const(b), 4, 3),
                                            gpu::matrix::matrix_view<float>(nullptr, 3, 3)),
                      ContainsSubstring("gpu::host_blas::naive_gemm: c is 3x3") &&
                          ContainsSubstring("null"));
    // Nothing was written by the failed calls.
    CHECK(c == std::vector<float>(12, 0.0F));
}

TEST_CASE("the linked BLAS is reported for what it is", "[host_blas]")
{
    const host_blas::library_info info = host_blas::library();
    CAPTURE(info.to_string());
#if EXPECT_OPENBLAS
    REQUIRE(info.kind == host_blas::implementation::openblas);
    CHECK_THAT(info.name, ContainsSubstring("OpenBLAS 0."));
    CHECK_THAT(info.config, ContainsSubstring(info.core));
    CHECK_FALSE(info.core.empty());
    CHECK(info.threads >= 1);
    CHECK_THAT(info.path, ContainsSubstring("blas"));
    CHECK_THAT(info.to_string(),
               ContainsSubstring(info.core + " kernels") && ContainsSubstring(" thread"));
#elif EXPECT_SOME_BLAS
    REQUIRE(info.kind != host_blas::implementation::naive);
    CHECK_FALSE(info.path.empty());
#else
    REQUIRE(info.kind == host_blas::implementation::naive);
    CHECK_THAT(info.to_string(),
               ContainsSubstring("naive loop (no BLAS found at build time), 1 thread"));
#endif
    CHECK(host_blas::to_string(host_blas::implementation::naive) == "naive loop");
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    CHECK(info.describe() == info.to_string()); // the old name, one release
#pragma GCC diagnostic pop
}

TEST_CASE("the generic-kernel warning fires on a fast CPU running old kernels and names the fix",
          "[host_blas]")
{
    const auto cpu = avx512_cpu();
    const std::string warning = host_blas::kernel_warning("Prescott", cpu);
    CHECK_THAT(warning,
               ContainsSubstring("generic 'Prescott' kernels") && ContainsSubstring("AVX-512") &&
                   ContainsSubstring("OPENBLAS_CORETYPE=SkylakeX") &&
                   ContainsSubstring(cpu.model) && ContainsSubstring("before the program starts"));
    for (const char* old_core : {"Core2", "Nehalem", "Sandybridge", "Atom", "Penryn", "Unknown"}) {
        INFO(old_core);
        CHECK_FALSE(host_blas::kernel_warning(old_core, cpu).empty());
    }
    auto avx2_only = cpu;
    avx2_only.avx512f = avx2_only.avx512bw = avx2_only.avx512dq = avx2_only.avx512vl = false;
    CHECK_THAT(host_blas::kernel_warning("Prescott", avx2_only),
               ContainsSubstring("AVX2 and FMA") && ContainsSubstring("OPENBLAS_CORETYPE=Haswell"));
}

TEST_CASE("no warning for fitting kernels, old CPUs or unknown cores", "[host_blas]")
{
    const auto cpu = avx512_cpu();
    for (const char* good : {"Haswell", "SkylakeX", "Cooperlake", "Zen", "HASWELL", "skylakex"}) {
        INFO(good);
        CHECK(host_blas::kernel_warning(good, cpu).empty());
    }
    CHECK(host_blas::kernel_warning("", cpu).empty());
    CHECK(host_blas::kernel_warning("Prescott", host_blas::cpu_features{}).empty());
    auto avx2_without_fma = cpu;
    avx2_without_fma.fma = false;
    avx2_without_fma.avx512f = false;
    CHECK(host_blas::kernel_warning("Prescott", avx2_without_fma).empty());
}

TEST_CASE("the live warning is the pure one applied to this BLAS and this CPU", "[host_blas]")
{
    const auto info = host_blas::library();
    const auto cpu = host_blas::detect_cpu();
    CAPTURE(info.to_string(), cpu.model, cpu.avx2, cpu.avx512f);
    CHECK(cpu.logical_cpus >= 1);
    if (info.kind == host_blas::implementation::openblas) {
        CHECK(host_blas::kernel_warning() == host_blas::kernel_warning(info.core, cpu));
    } else {
        CHECK(host_blas::kernel_warning().empty());
    }
}
