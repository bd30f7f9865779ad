// cudagap-bench-overhead: the host cost per call of cudagap's wrappers against the raw calls
// they make, over many calls in one run.
//
// Cases: event record (gpu::event::record vs cudaEventRecord), stream query
// (gpu::stream::is_ready vs cudaStreamQuery), a scoped_device round trip (switch to a device
// and back, against the cudaGetDevice/cudaSetDevice pair written by hand: to the current device,
// what every operation on an object of the current device pays, and to another device where
// there are two), a kernel launch (gpu::launch of an empty kernel with two arguments vs the same
// kernel launched with <<<>>> and cudaGetLastError; target: at most 5% more host time per
// launch) and a GEMM launch (gpu::blas::gemm vs the
// cublasGemmEx call it makes, FP32 64x64x64 on one handle and stream, so that the launch, not
// the math, is what is timed: cudagap's side is plan_gemm's checks and that one cuBLAS call, the
// handle's math and pointer modes coming from its own record).
// The raw side checks its status too, as any careful caller must; the difference is what the
// wrapper adds. Both sides run in alternating samples (A B B A ...) with the host clock around a
// batch of back-to-back calls (the row) and around single calls ("1 call"); the stream is
// synchronised between samples, outside the timed window, so that a full launch queue never
// blocks a timed call. Sampling stops when the noise reaches the target or the time limit passes
// (nvbench's rule). The GEMM launches are also captured into a CUDA graph, the batch's calls in
// one, and the replay's launch timed per call ("graph": what a graph takes off the host); an
// event record or a stream query is not a graph node, so those two have no graph column.
//
// Targets: each wrapper within 2% or 0.5 us per call of the raw call (issue 6); gpu::launch at
// most 1.05 times the raw launch's host time per launch (issue 21). Each target's measured text
// gives both host times per call in us, the difference and the ratio.
#include "harness.hpp"

#include <gpu/capture.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/event.hpp>
#include <gpu/graph.hpp>
#include <gpu/launch.hpp>
#include <gpu/stream.hpp>
#include <gpu/memory.hpp>
#include <gpu/timing.hpp>

#if CUDAGAP_BENCH_HAS_BLAS
#include <gpu/blas/gemm.hpp>
#include <gpu/blas/handle.hpp>
#include <gpu/matrix/matrix.hpp>

#include <cublas_v2.h>
#endif

#include "empty_kernel.hpp"

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <stdexcept>
#include <string>

namespace {

namespace bench = gpu::bench;

constexpr double tolerance_fraction = 0.02;
constexpr double tolerance_ms = 0.5e-3; // 0.5 us

const char* const requirement =
    "cudagap's median per call at most 2% or 0.5 us above the raw call's";
const char* const target_event = "event record within 2% or 0.5 us of cudaEventRecord";
const char* const target_query = "stream query within 2% or 0.5 us of cudaStreamQuery";
const char* const target_launch = "gpu::launch / raw <<<>>> host time per launch <= 1.05";
const char* const launch_requirement =
    "gpu::launch's median host time per launch at most 1.05 times the raw <<<>>> launch's";
const char* const target_gemm = "GEMM launch within 2% or 0.5 us of cublasGemmEx";
const char* const target_device =
    "scoped_device round trip within 2% or 0.5 us of cudaGetDevice/cudaSetDevice by hand";

// Calls per batch sample: enough that the host clock's own cost is a small share.
int calls_for(const bench::options& settings, int calls)
{
    return settings.quick ? calls / 4 : calls;
}

// The raw side's check: what a careful caller writes around a bare CUDA call, with cudagap's
// public error type (the hint is built only on failure).
void check(cudaError_t status, const char* api)
{
    if (status != cudaSuccess && status != cudaErrorNotReady) [[unlikely]] {
        throw gpu::cuda_error(status, api, gpu::hint_for(status), -1,
                              std::source_location::current());
    }
}

// What a case adds beside its batches: the two works replayed from a CUDA graph each, when
// they can be captured.
struct graph_pair {
    gpu::graph_exec ours;
    gpu::graph_exec theirs;
    int calls = 0; // calls captured in each
};

// Measures one case: wrapper against raw, alternating, in batches (the row) and one call at a
// time ("1 call"), and, given graphs of both, their replays ("graph"); adds both rows, the ratio
// and the target.
template <class Wrapper, class Raw>
void compare(bench::report& r, const std::string& case_name, const char* target_name,
             const char* raw_variant, int calls, Wrapper&& wrapper, Raw&& raw,
             gpu::stream_ref stream, const graph_pair* graphs = nullptr,
             double allowed_fraction = tolerance_fraction, double allowed_extra_ms = tolerance_ms)
{
    const auto sync = [&] { stream.synchronize(); };
    const std::array<bench::series, 2> batch =
        bench::time_host_paired(r.rule(), calls, calls, wrapper, raw, sync);
    const std::array<bench::series, 2> single =
        bench::time_host_paired(r.rule(), 1, 1, wrapper, raw, sync);
    std::optional<std::array<bench::series, 2>> replayed;
    if (graphs != nullptr) {
        const std::array<bench::series, 2> per_replay = bench::time_host_paired(
            r.rule(), 1, 1, [&] { graphs->ours.launch(stream); },
            [&] { graphs->theirs.launch(stream); }, sync);
        replayed = {bench::per_call(per_replay[0], graphs->calls),
                    bench::per_call(per_replay[1], graphs->calls)};
    }
    const std::array<const char*, 2> variants{"cudagap", raw_variant};
    for (std::size_t k = 0; k < 2; ++k) {
        bench::measurement m = bench::measurement::from(batch[k], "host clock");
        m.case_name = case_name;
        m.variant = variants[k];
        m.single_call = bench::side_timing::from(single[k]);
        if (replayed) {
            m.graph = bench::side_timing::from((*replayed)[k]);
        }
        r.add(std::move(m));
    }
    r.add_ratio(case_name, "cudagap", raw_variant, "the wrapper's cost over the raw call");

    const double ours_ms = batch[0].stats.median_ms;
    const double theirs_ms = batch[1].stats.median_ms;
    const double extra_ms = ours_ms - theirs_ms;
    const double allowed_ms = std::max(allowed_fraction * theirs_ms, allowed_extra_ms);
    // Both host times per call in us, the difference and the ratio: a target is read from the
    // one line (the launch's is the ratio, the others' the difference).
    std::array<char, 160> measured{};
    std::snprintf(measured.data(), measured.size(),
                  "%.3f us vs %.3f us (%s) host time per call: %+.3f us (%+.1f%%), ratio %.3f",
                  ours_ms * 1e3, theirs_ms * 1e3, raw_variant, extra_ms * 1e3,
                  theirs_ms > 0 ? 100.0 * extra_ms / theirs_ms : 0.0,
                  theirs_ms > 0 ? ours_ms / theirs_ms : 0.0);
    r.set_target(target_name, extra_ms <= allowed_ms, measured.data());
}

// `calls` calls of each work captured into a graph of its own, instantiated and warmed up.
template <class Wrapper, class Raw>
graph_pair capture_pair(int calls, Wrapper&& wrapper, Raw&& raw, gpu::stream_ref stream)
{
    const auto captured = [&](auto& work) {
        gpu::graph_exec exec(gpu::capture(stream, [&](gpu::stream_ref) {
            for (int call = 0; call < calls; ++call) {
                work();
            }
        }));
        exec.upload(stream);
        exec.launch(stream);
        return exec;
    };
    graph_pair out{captured(wrapper), captured(raw), calls};
    stream.synchronize();
    return out;
}

// The hand-written switch cudagap's operations would otherwise repeat: save the current device,
// switch when it differs, switch back.
void switch_by_hand(int target)
{
    int previous = -1;
    check(cudaGetDevice(&previous), "cudaGetDevice");
    if (previous != target) {
        check(cudaSetDevice(target), "cudaSetDevice");
    }
    int now = -1;
    check(cudaGetDevice(&now), "cudaGetDevice");
    if (now != previous) {
        check(cudaSetDevice(previous), "cudaSetDevice");
    }
}

// gpu::scoped_device to the current device (what an operation on an object of the current
// device pays) and, with two GPUs, to the other one and back, each against the same by hand.
void compare_device_round_trips(bench::report& r, gpu::stream_ref stream)
{
    const gpu::device here = gpu::current_device();
    const int calls = calls_for(r.settings(), 4000);
    compare(
        r, "scoped_device round trip (same device)", target_device, "cudaGetDevice by hand", calls,
        [&] { const gpu::scoped_device on(here); }, [&] { switch_by_hand(here.id()); }, stream);
    if (gpu::device_count() < 2) {
        return; // the target is judged on the same-device row alone
    }
    const gpu::device other((here.id() + 1) % gpu::device_count());
    const int other_id = other.id();
    compare(
        r, "scoped_device round trip (another device)", target_device, "cudaSetDevice by hand",
        calls, [&] { const gpu::scoped_device on(other); }, [&] { switch_by_hand(other_id); },
        stream);
}

void gpu_part(bench::report& r)
{
    gpu::stream stream(gpu::stream_flags::non_blocking);
    const cudaStream_t raw_stream = stream.get();

    r.run_case("event record", [&] {
        // Same flags on both sides (timing events, cudagap's default).
        const gpu::event ours;
        cudaEvent_t theirs = nullptr;
        GPU_CUDA_CHECK(cudaEventCreateWithFlags(&theirs, cudaEventDefault));
        const gpu::event theirs_owner = gpu::event::from_native_handle(theirs); // frees it
        compare(
            r, "event record", target_event, "cudaEventRecord", calls_for(r.settings(), 2000),
            [&] { ours.record(stream); },
            [&] { check(cudaEventRecord(theirs, raw_stream), "cudaEventRecord"); }, stream);
    });

    r.run_case("stream query", [&] {
        stream.synchronize(); // an idle stream: both sides get the same answer, quickly
        compare(
            r, "stream query", target_query, "cudaStreamQuery", calls_for(r.settings(), 4000),
            [&] { static_cast<void>(stream.is_ready()); },
            [&] { check(cudaStreamQuery(raw_stream), "cudaStreamQuery"); }, stream);
    });

    r.run_case("scoped_device round trip", [&] { compare_device_round_trips(r, stream); });
    r.run_case("kernel launch", [&] {
        // An empty kernel: the host's launch cost is all there is. gpu::launch adds the argument
        // conversion, the device's limits (read once) and the configuration check.
        gpu::device_buffer<float> data(32, stream);
        const gpu::launch_config config{.grid = {1}, .block = {32}};
        const auto ours = [&] {
            gpu::launch(stream, config, bench_kernels::empty(), data.data(), data.size());
        };
        const auto raw = [&] {
            check(bench_kernels::launch_raw(raw_stream, data.data(), data.size()), "<<<>>>");
        };
        const int calls = calls_for(r.settings(), 2000);
        const graph_pair graphs = capture_pair(calls, ours, raw, stream);
        compare(r, "kernel launch (empty kernel)", target_launch, "<<<>>>", calls, ours, raw,
                stream, &graphs, 0.05, 0.0);
    });

#if CUDAGAP_BENCH_HAS_BLAS
    r.run_case("GEMM launch", [&] {
        // 64x64x64 FP32: a kernel of a few microseconds, so the host's launch cost shows.
        constexpr std::int64_t n = 64;
        const std::size_t elements = static_cast<std::size_t>(n * n);
        gpu::device_buffer<float> a(elements, stream);
        gpu::device_buffer<float> b(elements, stream);
        gpu::device_buffer<float> c(elements, stream);
        a.fill_zero_async(stream);
        b.fill_zero_async(stream);
        gpu::blas::handle h(stream); // default math: FP32, CUBLAS_COMPUTE_32F
        const float alpha = 1.0F;
        const float beta = 0.0F;
        const auto a_view = gpu::matrix::row_major(static_cast<const float*>(a.data()), n, n);
        const auto b_view = gpu::matrix::row_major(static_cast<const float*>(b.data()), n, n);
        const auto c_view = gpu::matrix::row_major(c.data(), n, n);
        const int dim = static_cast<int>(n);
        // Taken once, as a program that calls cuBLAS directly would keep it.
        const cublasHandle_t raw_handle = h.get();
        const auto ours = [&] { gpu::blas::gemm(h, a_view, b_view, c_view); };
        const auto raw = [&] {
            // Row-major C = A·B is column-major Cᵀ = Bᵀ·Aᵀ: B first, as cudagap maps it.
            const cublasStatus_t status =
                cublasGemmEx(raw_handle, CUBLAS_OP_N, CUBLAS_OP_N, dim, dim, dim, &alpha, b.data(),
                             CUDA_R_32F, dim, a.data(), CUDA_R_32F, dim, &beta, c.data(),
                             CUDA_R_32F, dim, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
            if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]] {
                throw std::runtime_error("cublasGemmEx failed with status " +
                                         std::to_string(static_cast<int>(status)));
            }
        };
        const int calls = calls_for(r.settings(), 500);
        // The batch's calls, captured once each: a replay is one launch for all of them.
        const graph_pair graphs = capture_pair(calls, ours, raw, stream);
        compare(r, "GEMM launch FP32 64x64x64", target_gemm, "cublasGemmEx", calls, ours, raw,
                stream, &graphs);
    });
#else
    r.set_target_not_measured(target_gemm,
                              "this build has no cuBLAS wrapper (CUDAGAP_ENABLE_BLAS=OFF)");
#endif
}

} // namespace

int main(int argc, char** argv)
{
    bench::suite s;
    s.name = "overhead";
    s.description = "host cost per call of cudagap's wrappers vs the raw calls they make "
                    "(event record, stream query, scoped_device round trip, kernel launch, "
                    "GEMM launch)";
    s.targets = {{target_event, requirement},
                 {target_query, requirement},
                 {target_device, requirement},
                 {target_launch, launch_requirement},
                 {target_gemm, requirement}};
    s.gpu = gpu_part;
    return bench::run(argc, argv, s);
}
