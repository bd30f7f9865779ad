// bench/harness/device_timing.hpp on a GPU ([gpu]: scripts/gpu-check runs them with the other
// [gpu] tests, ctest label gpu): a cold sample of a tiny GEMM is slower than a warm one, the
// flush is made once from the device's L2 and reused, and a graph replay of 100 tiny GEMMs costs
// less host time than 100 launches (and computes what they compute, against a float64
// reference).
#include "device_timing.hpp"

#include <gpu/blas/gemm.hpp>
#include <gpu/blas/handle.hpp>
#include <gpu/matrix/matrix.hpp>
#include <gpu/device.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include <test_support.hpp>

#include <array>
#include <cstdint>
#include <vector>

namespace bench = gpu::bench;

namespace {

// A tiny FP32 GEMM, C = A·B (n x n, row major): its inputs fit any L2 this library supports.
struct tiny_gemm {
    std::int64_t n;
    gpu::stream stream{gpu::stream_flags::non_blocking};
    gpu::blas::handle handle{stream};
    std::vector<float> a_host;
    std::vector<float> b_host;
    gpu::device_buffer<float> a;
    gpu::device_buffer<float> b;
    gpu::device_buffer<float> c;

    explicit tiny_gemm(std::int64_t size)
        : n(size), a_host(gpu::test::random_floats(static_cast<std::size_t>(size * size), 1)),
          b_host(gpu::test::random_floats(static_cast<std::size_t>(size * size), 2)),
          a(gpu::device_buffer<float>::from_host(a_host, stream)),
          b(gpu::device_buffer<float>::from_host(b_host, stream)),
          c(static_cast<std::size_t>(size * size), stream)
    {}

    void operator()()
    {
        gpu::blas::gemm(handle, gpu::matrix::row_major(std::as_const(a), n, n),
                        gpu::matrix::row_major(std::as_const(b), n, n),
                        gpu::matrix::row_major(c, n, n));
    }

    // The float64 reference of C.
    [[nodiscard]] std::vector<double> reference() const
    {
        std::vector<double> out(static_cast<std::size_t>(n * n), 0.0);
        for (std::int64_t i = 0; i < n; ++i) {
            for (std::int64_t k = 0; k < n; ++k) {
                const double aik = a_host[static_cast<std::size_t>(i * n + k)];
                for (std::int64_t j = 0; j < n; ++j) {
                    out[static_cast<std::size_t>(i * n + j)] +=
                        aik * b_host[static_cast<std::size_t>(k * n + j)];
                }
            }
        }
        return out;
    }
};

} // namespace

// [serial]: the test runs alone, so that no other process's kernels evict the L2 between the
// warm samples (that would make them cold too).
TEST_CASE("a cold sample of a tiny GEMM is slower than a warm one", "[bench][gpu][serial]")
{
    tiny_gemm gemm(256);
    bench::device_timer timer(gemm.stream,
                              {.max_noise = 0.005, .min_samples = 20, .time_limit_s = 0.5});
    const std::array<bench::device_call, 1> works{[&] { gemm(); }};
    const bench::series warm = timer.single_calls(works, bench::cache_state::warm).front();
    CHECK(timer.flush() == nullptr); // a warm sampling makes no flush
    const bench::series cold = timer.single_calls(works, bench::cache_state::cold).front();
    INFO("warm median " << warm.stats.median_ms << " ms, cold median " << cold.stats.median_ms
                        << " ms");
    CHECK(warm.stats.count >= 20);
    CHECK(cold.stats.count >= 20);
    CHECK(cold.stats.median_ms > warm.stats.median_ms);

    // The flush: twice the L2 the device reports, one per cold sample, made once and reused.
    REQUIRE(timer.flush() != nullptr);
    const gpu::device_properties props = gpu::current_device().properties();
    CHECK(timer.flush()->bytes() == 2 * static_cast<std::size_t>(props.l2_cache_bytes));
    CHECK(timer.flush()->flushes() == cold.stats.count);
    const bench::l2_flush* first = timer.flush();
    const bench::series again = timer.single_calls(works, bench::cache_state::cold).front();
    CHECK(timer.flush() == first);
    CHECK(timer.flush()->flushes() == cold.stats.count + again.stats.count);
}

TEST_CASE("a graph replay of 100 tiny GEMMs costs less host time than 100 launches", "[bench][gpu]")
{
    tiny_gemm gemm(64);
    bench::device_timer timer(gemm.stream,
                              {.max_noise = 0.005, .min_samples = 10, .time_limit_s = 1.0});
    const std::array<bench::device_call, 1> works{[&] { gemm(); }};
    const bench::series launches = timer.batch(works, 100).front();
    gemm.c.copy_from_host(gpu::test::poisoned(gemm.c.size()));
    const bench::series replays = timer.graph(works, 100).front();
    REQUIRE(launches.host_ms.has_value());
    REQUIRE(replays.host_ms.has_value());
    INFO("host time per GEMM: " << *launches.host_ms * 1e3 << " us launched, "
                                << *replays.host_ms * 1e3 << " us replayed");
    CHECK(*replays.host_ms < *launches.host_ms);
    CHECK(replays.calls_per_sample == 100);
    // The replays computed C (it was poisoned before the capture).
    const std::vector<float> c = gemm.c.to_host();
    CHECK(gpu::test::relative_error<float>(c, gemm.reference()) < 1e-5);
}
