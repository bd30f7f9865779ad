// cudagap-bench-gemm: the demo's matrix multiplies, side by side in one run on the same
// buffers and settings:
//
//   cudagap      gpu::blas::gemm on row-major views (C = A·B), the handle's math mode set for
//                the precision (FP32: default, no TF32; TF32: math_mode::tf32)
//   raw cuBLAS   the cublasGemmEx call gpu::blas::gemm makes (B and A swapped for row-major,
//                same compute type), on the same handle, stream and input buffers
//   torch        torch.mm(a, b, out=c) through bench/compare_torch.py, allow_tf32 matching
//   OpenBLAS     the CPU side: gpu::host_blas::gemm on the CPU BLAS found at build time (its
//                name, kernels and thread count are printed; "naive loop" when there is none)
//
// at n = 1000, 2000, 4000, 4096 and 8192 (square), in FP32, TF32, FP16 and BF16 (FP32
// accumulation, output in the input type like torch.mm). GPU variants are timed with CUDA events
// after a warm-up, cudagap and raw cuBLAS in alternating samples so that clock changes fall on
// both alike, each sampling stopped when its noise reaches the target or its time limit passes
// (nvbench's rule, bench/harness/sampling.hpp). A row is a warm batch of back-to-back calls (its
// median per call is quoted, with TFLOP/s and the fraction of the dense peak: gpu::blas::dense_peak,
// NVIDIA's datasheet figure for the GPUs cudagap lists, H200 included, for others an estimate from
// the maximum SM clock, which each row and note labels as such); at n <= 2000 the row also carries single calls
// ("1 call": the GPU time plus the launch the GPU waits for) and the batch replayed from one CUDA
// graph ("graph"); at the smallest size, "cold" rows time single calls with the L2 flushed
// before each. torch.mm is timed the same ways (torch.cuda.CUDAGraph for its graph). The CPU
// side is timed with the host clock. Without a GPU, the CPU part runs and the program exits 77.
//
// Targets (issue 3, for an H200): cudagap within 2% of raw cuBLAS at n >= 4000 and 5% at 1000
// and 2000; not slower than torch.mm beyond noise; at 4096, FP32 >= 70% of the FP32 peak, TF32
// >= 75% of the TF32 peak, FP16 and BF16 >= 70% of theirs.
#include "harness.hpp"

#include <gpu/blas.hpp>
#include <gpu/device.hpp>
#include <gpu/event.hpp>
#include <gpu/host_blas.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>
#include <gpu/timing.hpp>

#include <cublas_v2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

namespace bench = gpu::bench;
namespace blas = gpu::blas;

const char* const cudagap_variant = "cudagap";
const char* const raw_variant = "raw cuBLAS";
const char* const torch_variant = "torch";
const char* const cudagap_cold_variant = "cudagap cold";
const char* const raw_cold_variant = "raw cuBLAS cold";

struct precision_case {
    const char* name;          // as compare_torch.py names it: fp32, tf32, fp16, bf16
    bench::math_mode math;     // what the report prints
    blas::precision precision; // for the peak
    blas::math_mode mode;      // the handle's math mode
    double peak_target;        // fraction of the peak at 4096
};

constexpr std::array<precision_case, 4> precisions{{
    {"fp32", bench::math_mode::fp32, blas::precision::fp32, blas::math_mode::default_math, 0.70},
    {"tf32", bench::math_mode::tf32, blas::precision::tf32, blas::math_mode::tf32, 0.75},
    {"fp16", bench::math_mode::fp16, blas::precision::fp16, blas::math_mode::default_math, 0.70},
    {"bf16", bench::math_mode::bf16, blas::precision::bf16, blas::math_mode::default_math, 0.70},
}};

constexpr int peak_size = 4096;
const char* const target_raw_large = "cudagap within 2% of raw cuBLAS, n >= 4000";
const char* const target_raw_small = "cudagap within 5% of raw cuBLAS, n = 1000, 2000";
const char* const target_torch = "cudagap not slower than torch.mm beyond noise";

std::string peak_target_name(const precision_case& p)
{
    std::string upper = p.name;
    std::transform(upper.begin(), upper.end(), upper.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::toupper(ch)); });
    return std::to_string(peak_size) + " " + upper +
           " >= " + std::to_string(static_cast<int>(p.peak_target * 100 + 0.5)) + "% of the " +
           upper + " peak";
}

std::vector<int> gpu_sizes(const bench::options& settings)
{
    return settings.quick ? std::vector<int>{1000, 4096}
                          : std::vector<int>{1000, 2000, 4000, 4096, 8192};
}

std::vector<int> cpu_sizes(const bench::options& settings, gpu::host_blas::implementation kind)
{
    // The naive loop runs at under 1 GFLOP/s (96 s for one 2000^3 call on a 2-core machine):
    // at the BLAS sizes it would eat the benchmark's time limit before the GPU part starts.
    if (kind == gpu::host_blas::implementation::naive) {
        return {500};
    }
    return settings.quick ? std::vector<int>{1000} : std::vector<int>{1000, 2000, 4000};
}

std::string case_name(int n, const precision_case& p)
{
    return std::to_string(n) + " " + p.name;
}

std::string fixed(double value, const char* format)
{
    std::array<char, 64> text{};
    std::snprintf(text.data(), text.size(), format, value);
    return text.data();
}

double flops_of(int n)
{
    return 2.0 * n * n * n;
}

// What a row's "of peak" is against: "; of peak: NVIDIA H200 SXM datasheet" or "; of peak:
// estimated from the max SM clock"; empty when there is no peak.
std::string peak_note(const std::optional<blas::peak_figure>& peak)
{
    return peak ? "; of peak: " + peak->label() : std::string();
}

// ---- the CPU part: the demo's CPU side on a real BLAS --------------------------------------

std::string cpu_variant()
{
    return std::string(gpu::host_blas::to_string(gpu::host_blas::library().kind));
}

void cpu_part(bench::report& r)
{
    const gpu::host_blas::library_info info = gpu::host_blas::library();
    const gpu::host_blas::cpu_features cpu = gpu::host_blas::detect_cpu();
    r.add_note("CPU BLAS: " + info.to_string());
    r.add_note("CPU: " + (cpu.model.empty() ? std::string("unknown model") : cpu.model) + ", " +
               std::to_string(cpu.logical_cpus) + " hardware threads, AVX2 " +
               (cpu.has_avx2_kernels() ? "yes" : "no") + ", AVX-512 " +
               (cpu.has_avx512_kernels() ? "yes" : "no"));
    if (const std::string warning = gpu::host_blas::kernel_warning(); !warning.empty()) {
        r.add_note("warning: " + warning);
    }
    if (info.kind == gpu::host_blas::implementation::naive) {
        r.add_note("no BLAS was found when cudagap was built: the CPU rows are a naive loop, not a "
                   "BLAS, timed at n = 500 only (install OpenBLAS: apt-get install "
                   "libopenblas-dev, or scripts/bundle-deps --with-openblas, and reconfigure)");
    }
    const std::string variant = cpu_variant();
    for (const int n : cpu_sizes(r.settings(), info.kind)) {
        const std::string name = case_name(n, precisions[0]);
        r.run_case(name + " " + variant, [&] {
            const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
            std::vector<float> a(count);
            std::vector<float> b(count);
            std::vector<float> c(count);
            for (std::size_t i = 0; i < count; ++i) {
                // Deterministic, never-zero values in [-1, 1).
                a[i] = static_cast<float>((i * 7919 % 2003) / 1001.5 - 1.0);
                b[i] = static_cast<float>((i * 104729 % 1999) / 999.5 - 1.0);
            }
            const auto a_view = gpu::matrix::row_major(std::as_const(a), n, n);
            const auto b_view = gpu::matrix::row_major(std::as_const(b), n, n);
            const auto c_view = gpu::matrix::row_major(c, n, n);
            // A 4000^3 GEMM is 128 GFLOP: a few repetitions are plenty on the host clock.
            const gpu::benchmark_options options{.warmup = 1, .repetitions = n >= 4000 ? 3 : 5};
            const gpu::statistics stats = bench::time_host(
                options, [&] { gpu::host_blas::gemm(a_view, b_view, c_view); }, [] {});
            bench::measurement m = bench::measurement::from(stats, 1, "host clock");
            m.case_name = name;
            m.variant = variant;
            m.math = bench::math_mode::fp32;
            m.set_flops(flops_of(n));
            m.note = info.kind == gpu::host_blas::implementation::naive
                         ? "naive loop, 1 thread"
                         : (info.core.empty() ? std::string() : info.core + " kernels, ") +
                               (info.threads > 0 ? std::to_string(info.threads) + " threads"
                                                 : "threads unknown");
            r.add(std::move(m));
        });
    }
}

// ---- the GPU part ---------------------------------------------------------------------------

// The batch sample each calibration aims at: long enough for CUDA events to resolve well.
double batch_target_ms(const bench::options& settings)
{
    return settings.quick ? 2.0 : 10.0;
}

// Where the single-call and graph columns are measured: the small sizes, where a launch's host
// cost is a visible share of the call.
bool small_size(int n)
{
    return n <= 2000;
}

// The most calls one graph holds (a graph of tiny GEMMs captures as many as the batch does).
constexpr int max_graph_calls = 1000;

template <class T>
cudaDataType cuda_type()
{
    if constexpr (std::is_same_v<T, __half>) {
        return CUDA_R_16F;
    } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
        return CUDA_R_16BF;
    } else {
        return CUDA_R_32F;
    }
}

// The wrapper makes the raw call: the results must be the same bits.
template <class T, class Ours, class Raw>
void check_same_bits(bench::report& r, const std::string& name, int n, const Ours& ours,
                     const Raw& raw, const gpu::device_buffer<T>& c,
                     const gpu::device_buffer<T>& c_raw, gpu::stream_ref stream)
{
    if (n > peak_size) {
        return;
    }
    ours();
    raw();
    stream.synchronize();
    const std::vector<T> x = c.to_host();
    const std::vector<T> y = c_raw.to_host();
    if (std::memcmp(x.data(), y.data(), x.size() * sizeof(T)) != 0) {
        r.add_error(name, "gpu::blas::gemm and the raw cublasGemmEx call disagree");
    }
}

// The rows of one variant of a case: the warm batch, with its single calls and graph beside it.
struct variant_timings {
    bench::series batch;
    std::optional<bench::series> single;
    std::optional<bench::series> graph;
};

// Times cudagap and the raw call alike, in alternation: batches at every size, single calls and
// graph replays at the small sizes, and cold single calls at the smallest size (separate rows).
std::array<variant_timings, 2> time_variants(bench::report& r, bench::device_timer& timer,
                                             const std::string& name, int n,
                                             std::span<const bench::device_call, 2> works)
{
    const int calls = timer.calls_for(works[0], batch_target_ms(r.settings()));
    const std::vector<bench::series> batch = timer.batch(works, calls);
    std::array<variant_timings, 2> out{{{batch[0], {}, {}}, {batch[1], {}, {}}}};
    if (!small_size(n)) {
        return out;
    }
    const std::vector<bench::series> single = timer.single_calls(works, bench::cache_state::warm);
    out[0].single = single[0];
    out[1].single = single[1];
    try {
        const std::vector<bench::series> graph =
            timer.graph(works, std::min(calls, max_graph_calls));
        out[0].graph = graph[0];
        out[1].graph = graph[1];
    } catch (const std::exception& e) {
        r.add_error(name + " graph", e.what());
    }
    return out;
}

template <class T>
void gpu_case(bench::report& r, bench::device_timer& timer, int n, const precision_case& p,
              blas::handle& h, gpu::stream_ref stream, const gpu::device_properties& props)
{
    const std::string name = case_name(n, p);
    const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    h.set_math(p.mode);
    gpu::device_buffer<T> a(count, stream);
    gpu::device_buffer<T> b(count, stream);
    gpu::device_buffer<T> c(count, stream);
    gpu::device_buffer<T> c_raw(count, stream);
    blas::fill_uniform(a, 1, -1.0, 1.0, stream);
    blas::fill_uniform(b, 2, -1.0, 1.0, stream);
    const auto a_view = gpu::matrix::row_major(std::as_const(a), n, n);
    const auto b_view = gpu::matrix::row_major(std::as_const(b), n, n);
    const auto c_view = gpu::matrix::row_major(c, n, n);

    const auto ours = [&] { blas::gemm(h, a_view, b_view, c_view); };
    // What a user writes by hand for row-major C = A·B: column-major Cᵀ = Bᵀ·Aᵀ.
    const cublasComputeType_t compute =
        p.mode == blas::math_mode::tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    const float one = 1.0F;
    const float zero = 0.0F;
    const auto raw = [&] {
        GPU_CUBLAS_CHECK(cublasGemmEx(h.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, b.data(),
                                      cuda_type<T>(), n, a.data(), cuda_type<T>(), n, &zero,
                                      c_raw.data(), cuda_type<T>(), n, compute,
                                      CUBLAS_GEMM_DEFAULT));
    };
    const std::array<bench::device_call, 2> works{ours, raw};
    const std::array<variant_timings, 2> timed = time_variants(r, timer, name, n, works);
    const std::optional<blas::peak_figure> peak = blas::dense_peak(p.precision, props);
    const double peak_tflops = peak ? peak->tflops : 0.0;
    const std::string compute_name(blas::compute_type_name<T>(h.math()));
    const std::array<std::string, 2> notes{
        "gpu::blas::gemm, math " + std::string(blas::to_string(h.math())) + ", " + compute_name,
        "cublasGemmEx(N, N, B, A), " + compute_name + ", same handle"};
    const std::array<const char*, 2> variants{cudagap_variant, raw_variant};
    const std::array<const char*, 2> cold_variants{cudagap_cold_variant, raw_cold_variant};
    for (std::size_t k = 0; k < 2; ++k) {
        bench::measurement m =
            bench::measurement::from(timed[k].batch, "CUDA events", bench::cache_state::warm);
        if (timed[k].single) {
            m.single_call = bench::side_timing::from(*timed[k].single);
        }
        if (timed[k].graph) {
            m.graph = bench::side_timing::from(*timed[k].graph);
        }
        m.case_name = name;
        m.variant = variants[k];
        m.math = p.math;
        m.set_flops(flops_of(n), peak_tflops);
        m.note = notes[k] + peak_note(peak);
        r.add(std::move(m));
    }
    if (n == gpu_sizes(r.settings()).front()) {
        const std::vector<bench::series> cold = timer.single_calls(works, bench::cache_state::cold);
        for (std::size_t k = 0; k < 2; ++k) {
            bench::measurement m =
                bench::measurement::from(cold[k], "CUDA events", bench::cache_state::cold);
            m.case_name = name;
            m.variant = cold_variants[k];
            m.math = p.math;
            m.set_flops(flops_of(n), peak_tflops);
            m.note = "single calls, the L2 flushed before each" + peak_note(peak);
            r.add(std::move(m));
        }
    }
    check_same_bits(r, name, n, ours, raw, c, c_raw, stream);
}

void add_torch_rows(bench::report& r, const gpu::device_properties& props)
{
    const std::vector<int> sizes = gpu_sizes(r.settings());
    std::vector<int> small;
    std::copy_if(sizes.begin(), sizes.end(), std::back_inserter(small), small_size);
    std::vector<std::string> arguments{"gemm",
                                       "--sizes",
                                       bench::comma_list(sizes),
                                       "--precisions",
                                       "fp32,tf32,fp16,bf16",
                                       "--warmup",
                                       "3",
                                       "--calls",
                                       "auto",
                                       "--target-ms",
                                       fixed(batch_target_ms(r.settings()), "%.1f"),
                                       "--single-call-sizes",
                                       bench::comma_list(small),
                                       "--graph-sizes",
                                       bench::comma_list(small),
                                       "--cold-sizes",
                                       std::to_string(sizes.front())};
    const std::vector<std::string> rule = r.torch_rule_arguments();
    arguments.insert(arguments.end(), rule.begin(), rule.end());
    const bench::torch_run torch = r.compare_torch(arguments);
    for (const int n : sizes) {
        for (const precision_case& p : precisions) {
            const bench::torch_case* t = torch.find(case_name(n, p));
            if (t == nullptr) {
                continue;
            }
            const std::optional<blas::peak_figure> peak = blas::dense_peak(p.precision, props);
            const double peak_tflops = peak ? peak->tflops : 0.0;
            const std::string note = std::string("torch.mm(out=c), allow_tf32 = ") +
                                     (p.math == bench::math_mode::tf32 ? "True" : "False");
            bench::measurement m = t->to_measurement(p.math);
            m.set_flops(flops_of(n), peak_tflops);
            m.note = note + (m.graph ? "; graph: torch.cuda.CUDAGraph" : "") + peak_note(peak);
            r.add(std::move(m));
            if (std::optional<bench::measurement> cold = t->cold_measurement(p.math)) {
                cold->set_flops(flops_of(n), peak_tflops);
                cold->note = note + "; single calls, the L2 flushed before each" + peak_note(peak);
                r.add(std::move(*cold));
            }
        }
    }
}

// The worst cudagap / raw cuBLAS ratio among the cases of the sizes `in_band` accepts.
void set_raw_target(bench::report& r, const char* target, double limit, bool (*in_band)(int))
{
    std::optional<double> worst;
    std::string worst_case;
    for (const int n : gpu_sizes(r.settings())) {
        if (!in_band(n)) {
            continue;
        }
        for (const precision_case& p : precisions) {
            const bench::measurement* ours = r.find(case_name(n, p), cudagap_variant);
            const bench::measurement* raw = r.find(case_name(n, p), raw_variant);
            if (ours != nullptr && raw != nullptr &&
                (!worst || ours->median_ms / raw->median_ms > *worst)) {
                worst = ours->median_ms / raw->median_ms;
                worst_case = case_name(n, p);
            }
        }
    }
    if (!worst) {
        r.set_target_not_measured(target, r.settings().quick
                                              ? "no case of these sizes in this run (--quick)"
                                              : "no case of these sizes succeeded");
        return;
    }
    r.set_target(target, *worst <= limit,
                 "worst " + fixed(*worst, "%.3f") + " (" + worst_case + ")");
}

void set_targets(bench::report& r, const gpu::device_properties& props)
{
    set_raw_target(r, target_raw_large, 1.02, [](int n) { return n >= 4000; });
    set_raw_target(r, target_raw_small, 1.05, [](int n) { return n < 4000; });

    // "Beyond noise": each case may be slower by the larger of 2% and the two rows' spreads.
    std::optional<double> worst_excess;
    std::string worst_text;
    bool met = true;
    for (const int n : gpu_sizes(r.settings())) {
        for (const precision_case& p : precisions) {
            const bench::measurement* ours = r.find(case_name(n, p), cudagap_variant);
            const bench::measurement* theirs = r.find(case_name(n, p), torch_variant);
            if (ours == nullptr || theirs == nullptr) {
                continue;
            }
            const double ratio = ours->median_ms / theirs->median_ms;
            const double allowed = 1.0 + std::max({0.02, ours->spread(), theirs->spread()});
            met = met && ratio <= allowed;
            if (!worst_excess || ratio - allowed > *worst_excess) {
                worst_excess = ratio - allowed;
                worst_text = "worst " + fixed(ratio, "%.3f") + " x torch (" + case_name(n, p) +
                             ", noise allowance " + fixed(allowed, "%.3f") + ")";
            }
        }
    }
    if (worst_excess) {
        r.set_target(target_torch, met, worst_text);
    } else {
        r.set_target_not_measured(target_torch, "no torch rows (the notes say why)");
    }

    for (const precision_case& p : precisions) {
        const bench::measurement* ours = r.find(case_name(peak_size, p), cudagap_variant);
        if (ours == nullptr) {
            r.set_target_not_measured(peak_target_name(p),
                                      "the cudagap case did not run (see the errors)");
        } else if (!ours->peak_fraction) {
            r.set_target_not_measured(peak_target_name(p),
                                      "no peak figure for this GPU's architecture");
        } else {
            const std::optional<blas::peak_figure> peak = blas::dense_peak(p.precision, props);
            r.set_target(peak_target_name(p), *ours->peak_fraction >= p.peak_target,
                         fixed(*ours->tflops, "%.1f TFLOP/s = ") +
                             fixed(100 * *ours->peak_fraction, "%.1f%% of ") +
                             (peak ? peak->to_string() : std::string("?")));
        }
    }
}

void add_gpu_notes(bench::report& r, const blas::handle& h, const gpu::device_properties& props)
{
    const blas::version_info v = blas::version();
    r.add_note("cuBLAS " + v.loaded.to_string() + " loaded (compiled against " +
               v.compiled.to_string() + "), workspace " +
               gpu::format_bytes(h.workspace_size().value_or(0)) + ", atomics " +
               std::string(blas::to_string(h.atomics())));
    for (const precision_case& p : precisions) {
        r.add_note(std::string(blas::to_string(p.precision)) + ": " +
                   blas::precision_support(p.precision, props).note);
    }
    r.add_note("of peak: against each precision's dense peak above, NVIDIA's datasheet figure "
               "where cudagap lists this GPU, else estimated from the max SM clock (" +
               std::to_string(props.clock_rate_khz / 1000) +
               " MHz, above the datasheets' basis: such fractions are low by up to ~8%)");
    if (r.env().device_name.find("H200") == std::string::npos) {
        r.add_note("targets are set for an H200; this run is on " + r.env().device_name);
    }
    r.add_note("rows: warm batches of back-to-back calls (the targets' figure); 1 call: single "
               "calls on an idle stream, warm; graph: the batch's calls replayed from one CUDA "
               "graph; the cold rows: single calls with the L2 flushed first");
}

void gpu_part(bench::report& r)
{
    const gpu::device_properties props = gpu::current_device().properties();
    gpu::stream stream(gpu::stream_flags::non_blocking);
    blas::handle h(stream);
    add_gpu_notes(r, h, props);
    // One timer for every case: its cold flush is sized once and reused.
    bench::device_timer timer(stream, r.rule());
    for (const int n : gpu_sizes(r.settings())) {
        for (const precision_case& p : precisions) {
            const std::string name = case_name(n, p);
            r.run_case(name, [&] {
                if (p.math == bench::math_mode::fp16) {
                    gpu_case<__half>(r, timer, n, p, h, stream, props);
                } else if (p.math == bench::math_mode::bf16) {
                    gpu_case<__nv_bfloat16>(r, timer, n, p, h, stream, props);
                } else {
                    gpu_case<float>(r, timer, n, p, h, stream, props);
                }
            });
        }
    }
    add_torch_rows(r, props);

    for (const int n : gpu_sizes(r.settings())) {
        for (const precision_case& p : precisions) {
            r.add_ratio(case_name(n, p), cudagap_variant, raw_variant,
                        "the wrapper's cost over the raw call");
            r.add_ratio(case_name(n, p), cudagap_variant, torch_variant, "against torch.mm");
        }
    }
    for (const precision_case& p : precisions) {
        const std::string name = case_name(gpu_sizes(r.settings()).front(), p);
        r.add_ratio(name, cudagap_cold_variant, cudagap_variant,
                    "a cold single call over the warm batch: the L2 and the launch together");
    }
    const std::vector<int> cpu = cpu_sizes(r.settings(), gpu::host_blas::library().kind);
    for (const int n : cpu) {
        r.add_ratio(case_name(n, precisions[0]), cpu_variant(), cudagap_variant,
                    "CPU vs GPU: how many times longer the CPU takes");
    }
    set_targets(r, props);
}

} // namespace

int main(int argc, char** argv)
{
    bench::suite s;
    s.name = "gemm";
    s.description = "square GEMM at 1000..8192 in FP32, TF32, FP16 and BF16: cudagap vs the raw "
                    "cublasGemmEx call vs torch.mm, and the CPU side on the CPU BLAS";
    s.targets = {
        {target_raw_large,
         "cudagap median at most 1.02x the raw cublasGemmEx call, every precision, "
         "n = 4000, 4096, 8192"},
        {target_raw_small, "cudagap median at most 1.05x the raw call at n = 1000 and 2000"},
        {target_torch, "cudagap median at most torch.mm's times 1 + the larger of 2% and the two "
                       "rows' spreads, every case"},
    };
    for (const precision_case& p : precisions) {
        s.targets.push_back(
            {peak_target_name(p),
             "cudagap at n = 4096 reaches this fraction of the dense peak (datasheet, or estimated "
             "from the max SM clock where cudagap has no datasheet figure)"});
    }
    s.cpu = cpu_part;
    s.gpu = gpu_part;
    return bench::run(argc, argv, s);
}
