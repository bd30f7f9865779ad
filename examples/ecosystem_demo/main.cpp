// cudagap-demo: the CUDA ecosystem demo cuda_ecosystem_demo.py in C++, measured
// honestly: warm-up, medians of repetitions, GFLOP/s next to milliseconds, a real CPU BLAS.
//
//   1. the ecosystem's status: runtime, driver, cuBLAS, cuDNN, GPUs (or why there is none);
//   2. CPU vs GPU matrix multiply (OpenBLAS or whatever BLAS CMake found, vs cuBLAS);
//   3. the demo's cuDNN convolution (32x3x224x224, 64 3x3 filters), and why cuDNN chose
//      its algorithm;
//   4. tensor cores: a 4096x4096 multiply in FP32, TF32, FP16 and BF16.
//
// Every GPU result is checked against a float64 reference computed on the CPU (accuracy.hpp) and
// judged by its precision's bound; a result past it prints WRONG and the program exits 3.
// Without a CPU BLAS the CPU side is a naive loop, timed at n <= 500 only (sizes.hpp).
// Without a GPU the CPU column still runs and the GPU parts say why they were skipped.
// --json prints the whole report as one JSON object (in a build with nlohmann-json; without it
// --json says how to get it); --profile picks a gpu::profile.
#include <gpu/blas/capabilities.hpp>
#include <gpu/blas/convert.hpp>
#include <gpu/blas/gemm.hpp>
#include <gpu/blas/handle.hpp>
#include <gpu/blas/random.hpp>
#include <gpu/blas/version.hpp>
#include <gpu/gpu.hpp>
#include <gpu/host_blas.hpp>
#if CUDAGAP_DEMO_HAS_DNN
#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/version.hpp>
#endif

#include "accuracy.hpp"
#include "report.hpp"
#include "sizes.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

using json = demo::report;
using namespace std::chrono_literals;

constexpr const char* usage =
    R"(usage: cudagap-demo [--sizes N,N,...] [--tensor-size N] [--profile NAME] [--json] [--help]

cuda_ecosystem_demo.py in C++: the ecosystem's status, CPU vs GPU matrix multiply, the
cuDNN convolution and tensor cores, with warm-up, medians and FLOP/s.

  --sizes N,N,...   matrix sizes of the CPU vs GPU multiply (default 1000,2000,4000)
  --tensor-size N   matrix size of the tensor-core comparison (default 4096)
  --profile NAME    development, production or testing (default: CUDAGAP_PROFILE, else none)
  --json            print the report as one JSON object (progress still goes to stderr)
  --help            print this text

Each GPU result is checked against a float64 reference on the CPU (relative error under 1e-5
in FP32, 1e-3 in TF32, 1e-2 in FP16 and BF16). Exit status: 0 when every result is correct
(or there is no GPU), 1 when something failed, 2 for a bad command line (or --json in a build
without nlohmann-json), 3 when a GPU result is WRONG.
)";

#if !CUDAGAP_DEMO_HAS_JSON
// What --json says in a build without nlohmann-json: how to get it. CMake looks for it again
// only when it configures, which scripts/quickstart demo --json does when the last one found none.
constexpr const char* no_json_message =
    "cudagap-demo: --json needs nlohmann-json, and this cudagap-demo was built without it.\n"
    "Install it (apt-get install nlohmann-json3-dev), or on a host without apt copy beside\n"
    "cudagap's source the .deps/ folder that scripts/bundle-deps makes where it is installed;\n"
    "then run scripts/quickstart demo --json, which configures again to find it.\n";
#endif

struct options {
    std::vector<int> sizes = {1000, 2000, 4000};
    int tensor_size = 4096;
    std::string profile;
    bool json = false;
};

// What the program prints goes to stdout unless --json asked for JSON only; progress goes to
// stderr either way, so that long steps show.
bool quiet = false;
void say(const char* format, auto... args)
{
    if (!quiet) {
        std::printf(format, args...);
    }
}
void progress(const std::string& text)
{
    std::fprintf(stderr, "cudagap-demo: %s...\n", text.c_str());
}
void heading(const char* title)
{
    say("\n%s\n%s\n", title, std::string(60, '-').c_str());
}

int parse_size(const std::string& text, const char* option)
{
    std::size_t used = 0;
    int value = 0;
    try {
        value = std::stoi(text, &used);
    } catch (const std::logic_error&) {
        used = std::string::npos; // not a number, or beyond int: std::stoi would only say "stoi"
    }
    if (used != text.size() || value < 1 || value > 32768) {
        throw std::invalid_argument(std::string(option) + " takes sizes from 1 to 32768, got '" +
                                    text + "'");
    }
    return value;
}

options parse(int argc, char* argv[])
{
    options opts;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--sizes" && has_value) {
            opts.sizes.clear();
            std::istringstream list(argv[++i]);
            for (std::string item; std::getline(list, item, ',');) {
                opts.sizes.push_back(parse_size(item, "--sizes"));
            }
            if (opts.sizes.empty()) {
                throw std::invalid_argument("--sizes needs at least one size");
            }
        } else if (arg == "--tensor-size" && has_value) {
            opts.tensor_size = parse_size(argv[++i], "--tensor-size");
        } else if (arg == "--profile" && has_value) {
            opts.profile = argv[++i];
        } else if (arg == "--json") {
            opts.json = true;
        } else {
            throw std::invalid_argument("unknown option or missing value: '" + std::string(arg) +
                                        "'");
        }
    }
    return opts;
}

// The profile's checks that cudagap runs inside every GPU call the demo times (the development
// profile has both): they synchronise after each call, so they are part of the GPU timings.
// Named as the profile's fields; empty when the profile has none.
std::vector<std::string> timed_checks(const gpu::profile& profile)
{
    std::vector<std::string> checks;
    if (profile.synchronous_checks) {
        checks.emplace_back("synchronous_checks");
    }
    if (profile.check_numerics) {
        checks.emplace_back("check_numerics");
    }
    return checks;
}

// The line that says so, printed next to the GPU timings (without a GPU: what they would
// include); empty when the profile has no such checks.
std::string timed_checks_note(const gpu::profile& profile, bool gpu_ran)
{
    std::vector<std::string> parts;
    if (profile.synchronous_checks) {
        parts.emplace_back("synchronous error checks after every call");
    }
    if (profile.check_numerics) {
        parts.emplace_back("NaN/Inf checks of every output");
    }
    if (parts.empty()) {
        return {};
    }
    std::string text = std::string("GPU timings ") + (gpu_ran ? "include" : "would include") +
                       " the " + profile.name + " profile's " + parts.front();
    for (std::size_t i = 1; i < parts.size(); ++i) {
        text += " and " + parts[i];
    }
    return text + " (each synchronises: the GPU runs faster without them; --profile production or "
                  "testing times without them)";
}

void say_timed_checks(const gpu::profile& profile, bool gpu_ran)
{
    const std::string note = timed_checks_note(profile, gpu_ran);
    if (!note.empty()) {
        say(" Note: %s\n", note.c_str());
    }
}

// A timing as JSON, with GFLOP/s and whether the profile's checks ran inside it.
json timing(const gpu::statistics& stats, double flops, bool includes_profile_checks)
{
    json j = stats;
    j["gflops"] = gpu::gflops(flops, stats.median_ms);
    j["includes_profile_checks"] = includes_profile_checks;
    return j;
}

// --- 1. status ---------------------------------------------------------------------------------

json status()
{
    const std::string rule(60, '=');
    say("%s\nCUDA Ecosystem Status\n%s\n", rule.c_str(), rule.c_str());
    const bool available = gpu::is_available();
    json j = {{"available", available},
              {"reason", available ? json(nullptr) : json(gpu::unavailable_reason())},
              {"runtime", gpu::runtime_version()},
              {"compiled_runtime", gpu::compiled_runtime_version()},
              {"driver", gpu::driver_version()}};
    say("CUDA available: %s\n", available ? "yes" : "no");
    if (!available) {
        say("  why: %s\n", gpu::unavailable_reason().c_str());
    }
    say("CUDA runtime: %s (compiled against %s)\n", gpu::runtime_version().to_string().c_str(),
        gpu::compiled_runtime_version().to_string().c_str());
    const gpu::driver_info driver = gpu::driver_version();
    if (driver.installed()) {
        say("CUDA driver: supports CUDA %s\n", driver.supported_cuda.to_string().c_str());
    } else {
        say("CUDA driver: none (%s)\n", driver.reason.c_str());
    }
    const gpu::blas::version_info blas = gpu::blas::version();
    j["cublas"] = {{"loaded", blas.loaded}, {"compiled", blas.compiled}};
    say("cuBLAS: %s (compiled against %s)\n", blas.loaded.to_string().c_str(),
        blas.compiled.to_string().c_str());
#if CUDAGAP_DEMO_HAS_DNN
    const gpu::dnn::version_info dnn = gpu::dnn::version();
    j["cudnn"] = {{"loaded", dnn.loaded},
                  {"compiled", dnn.compiled},
                  {"built_for_cuda", dnn.loaded_for_cuda}};
    say("cuDNN: %s (compiled against %s, built for CUDA %s)\n", dnn.loaded.to_string().c_str(),
        dnn.compiled.to_string().c_str(), dnn.loaded_for_cuda.to_string().c_str());
#else
    j["cudnn"] = nullptr;
    say("cuDNN: not built (cudagap was configured without cuDNN; set CUDNN_ROOT)\n");
#endif
    j["devices"] = json::array();
    say("GPU count: %d\n", gpu::device_count());
    for (const gpu::device& dev : gpu::devices()) {
        const gpu::device_properties props = dev.properties();
        j["devices"].push_back(props);
        say("  GPU %d: %s\n", props.id, props.name.c_str());
        say("    - Memory: %.1f GiB\n", static_cast<double>(props.total_memory_bytes) / (1 << 30));
        say("    - Compute Capability: %s (%s)\n", props.capability.to_string().c_str(),
            std::string(props.capability.architecture_name()).c_str());
    }
    say("%s\n", rule.c_str());
    return j;
}

// --- 2. CPU vs GPU matrix multiply -------------------------------------------------------------

json cpu_blas()
{
    const gpu::host_blas::library_info blas = gpu::host_blas::library();
    const std::string warning = gpu::host_blas::kernel_warning();
    const bool naive = blas.kind == gpu::host_blas::implementation::naive;
    say("CPU: %s\n", blas.to_string().c_str());
    if (naive) {
        say("  (a naive triple loop, not a BLAS: the speedups below flatter the GPU)\n"
            "  The naive loop is timed at n <= %d only, as bench/gemm does: at under 1 GFLOP/s one "
            "4000x4000\n  multiply takes about 9 minutes. For the CPU side at every size, install "
            "OpenBLAS\n  (apt-get install libopenblas-dev, or scripts/bundle-deps --with-openblas) "
            "and reconfigure.\n",
            demo::naive_size_cap);
    }
    if (!warning.empty()) {
        say("  WARNING: %s\n", warning.c_str());
    }
    return {{"name", blas.name},
            {"kind", std::string(gpu::host_blas::to_string(blas.kind))},
            {"core", blas.core},
            {"threads", blas.threads},
            {"path", blas.path},
            {"warning", warning.empty() ? json(nullptr) : json(warning)},
            {"naive_size_cap", naive ? json(demo::naive_size_cap) : json(nullptr)}};
}

// A verdict as JSON.
json to_json(const demo::verdict& v)
{
    return {{"precision", std::string(gpu::blas::to_string(v.which))},
            {"relative_error", v.measured.relative_error},
            {"bound", v.bound},
            {"correct", v.correct},
            {"non_finite", v.measured.non_finite},
            {"rows_checked", v.measured.rows_checked},
            {"rows", v.measured.rows},
            {"reference", "float64 on the CPU"},
            {"text", v.to_string()}};
}

// Checks @p result (n x n) against the float64 product of @p a and @p b, says the verdict (a
// wrong one on stderr too, so that --json runs show it) and records it in @p verdicts.
json judge_result(const std::string& what, gpu::blas::precision which, const std::vector<float>& a,
                  const std::vector<float>& b, const std::vector<float>& result, int n,
                  std::vector<demo::verdict>& verdicts)
{
    if (n >= 1024) {
        progress("checking the " + what + " result against float64");
    }
    const demo::verdict v = demo::judge(which, demo::check_gemm(a, b, result, n));
    say(" Check: %s\n", v.to_string().c_str());
    if (!v.correct) {
        std::fprintf(stderr, "cudagap-demo: %s: %s\n", what.c_str(), v.to_string().c_str());
    }
    verdicts.push_back(v);
    return to_json(v);
}

// NaN in every element, so that one the GPU leaves unwritten fails the check.
void poison(gpu::device_buffer<float>& buffer)
{
    buffer.copy_from_host(
        std::vector<float>(buffer.size(), std::numeric_limits<float>::quiet_NaN()));
}

// The CPU side of one size: the timing, or why there is none.
std::optional<gpu::statistics> time_cpu(const demo::size_plan& size, const std::vector<float>& a,
                                        const std::vector<float>& b, std::vector<float>& c)
{
    const int n = size.n;
    if (!size.cpu) {
        say(" CPU: skipped (the naive loop is timed at n <= %d only)\n", demo::naive_size_cap);
        return std::nullopt;
    }
    const auto view = [n](auto& storage) { return gpu::matrix::row_major(storage, n, n); };
    progress("CPU " + std::to_string(n) + "x" + std::to_string(n) + " multiply");
    const gpu::statistics cpu = gpu::benchmark(
        [&] { gpu::host_blas::gemm(view(std::as_const(a)), view(std::as_const(b)), view(c)); },
        {.warmup = 1, .repetitions = 3, .min_time = 300ms, .max_repetitions = 20});
    const double flops = 2.0 * n * static_cast<double>(n) * n;
    say(" CPU: %10.2f ms %9.1f GFLOP/s  (median of %zu, spread %.0f%%)\n", cpu.median_ms,
        gpu::gflops(flops, cpu.median_ms), cpu.count, 100 * cpu.relative_spread());
    return cpu;
}

// The GPU side of one size: times gpu::blas::gemm on @p a and @p b, says the speedup over the
// CPU timing (when there is one) and judges the result; all of it into @p row.
void time_gpu(json& row, int n, const std::vector<float>& a, const std::vector<float>& b,
              const std::optional<gpu::statistics>& cpu, gpu::blas::handle& handle,
              gpu::stream_ref stream, gpu::blas::precision precision, bool checks_timed,
              std::vector<demo::verdict>& verdicts)
{
    const auto view = [n](auto& storage) { return gpu::matrix::row_major(storage, n, n); };
    const double flops = 2.0 * n * static_cast<double>(n) * n;
    progress("GPU " + std::to_string(n) + "x" + std::to_string(n) + " multiply");
    const auto da = gpu::device_buffer<float>::from_host(a, stream);
    const auto db = gpu::device_buffer<float>::from_host(b, stream);
    gpu::device_buffer<float> dc(a.size(), stream);
    poison(dc);
    const int calls = n <= 1024 ? 20 : n <= 2048 ? 5 : 2;
    const gpu::statistics gpu_stats =
        gpu::benchmark(stream, [&] { gpu::blas::gemm(handle, view(da), view(db), view(dc)); },
                       {.warmup = 3, .repetitions = 10, .calls_per_repetition = calls});
    row["gpu"] = timing(gpu_stats, flops, checks_timed);
    say(" CUDA: %9.3f ms %9.2f TFLOP/s (median of %zu x %d calls, spread %.0f%%)\n",
        gpu_stats.median_ms, gpu::tflops(flops, gpu_stats.median_ms), gpu_stats.count, calls,
        100 * gpu_stats.relative_spread());
    if (cpu) {
        row["speedup"] = cpu->median_ms / gpu_stats.median_ms;
        say(" Speedup: %.1fx\n", cpu->median_ms / gpu_stats.median_ms);
    } else {
        say(" Speedup: n/a (no CPU timing at this size)\n");
    }
    row["accuracy"] =
        judge_result("matmul " + std::to_string(n), precision, a, b, dc.to_host(), n, verdicts);
}

json matmul(const options& opts, const gpu::profile& profile, std::uint64_t seed,
            std::vector<demo::verdict>& verdicts)
{
    heading("Benchmark: CPU vs CUDA (Matrix Multiplication, FP32)");
    json j = {{"cpu_blas", cpu_blas()}, {"gpu_math", nullptr}, {"rows", json::array()}};
    const bool gpu_ok = gpu::is_available();
    std::optional<gpu::stream> stream;
    std::optional<gpu::blas::handle> handle;
    // The profile's math mode decides the precision, and so the bound, of the GPU results.
    gpu::blas::precision precision = gpu::blas::precision::fp32;
    if (gpu_ok) {
        stream.emplace();
        handle.emplace(profile, *stream);
        const std::string math(gpu::blas::compute_type_name<float>(handle->math()));
        if (handle->math() == gpu::blas::math_mode::tf32) {
            precision = gpu::blas::precision::tf32;
        }
        j["gpu_math"] = math;
        say("GPU: %s, math mode %s (%s) from the %s profile\n",
            gpu::current_device().properties().name.c_str(),
            std::string(gpu::blas::to_string(handle->math())).c_str(), math.c_str(),
            profile.name.c_str());
    } else {
        say("GPU: skipped (no usable GPU)\n");
    }
    say_timed_checks(profile, gpu_ok);
    const bool checks_timed = !timed_checks(profile).empty();
    const bool naive = gpu::host_blas::library().kind == gpu::host_blas::implementation::naive;
    std::mt19937 engine(static_cast<std::uint32_t>(seed));
    std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
    for (const demo::size_plan& size : demo::plan_sizes(opts.sizes, naive)) {
        const int n = size.n;
        const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
        const double flops = 2.0 * n * static_cast<double>(n) * n;
        std::vector<float> a(count), b(count), c(count);
        for (std::size_t i = 0; i < count; ++i) {
            a[i] = dist(engine);
            b[i] = dist(engine);
        }
        say(" %dx%d Matrix:%s\n", n, n, size.added ? " (the naive loop's size, added)" : "");
        const std::optional<gpu::statistics> cpu = time_cpu(size, a, b, c);
        json row = {{"size", n},
                    {"added_for_the_naive_loop", size.added},
                    {"cpu", cpu ? timing(*cpu, flops, false) : json(nullptr)},
                    {"gpu", nullptr},
                    {"speedup", nullptr},
                    {"accuracy", nullptr}};
        if (gpu_ok) {
            time_gpu(row, n, a, b, cpu, *handle, *stream, precision, checks_timed, verdicts);
        } else {
            say(" CUDA: skipped (no usable GPU)\n");
        }
        j["rows"].push_back(row);
    }
    return j;
}

// --- 3. the cuDNN convolution ------------------------------------------------------------------

json convolution([[maybe_unused]] const gpu::profile& profile, [[maybe_unused]] std::uint64_t seed)
{
    heading("Demo: cuDNN Convolution (Deep Learning Core)");
#if CUDAGAP_DEMO_HAS_DNN
    const gpu::dnn::convolution_problem problem{
        .input = {32, 3, 224, 224}, .filter = {64, 3, 3, 3}, .geometry = {.padding = {1, 1}}};
    const std::vector<int> output = problem.output();
    const auto shape = [](const std::vector<int>& dims) {
        std::string text = "[";
        for (std::size_t i = 0; i < dims.size(); ++i) {
            text += (i == 0 ? "" : ", ") + std::to_string(dims[i]);
        }
        return text + "]";
    };
    json j = {{"input_shape", problem.input}, {"output_shape", output}, {"gpu", nullptr}};
    say(" Input Shape: %s\n Output Shape: %s\n", shape(problem.input).c_str(),
        shape(output).c_str());
    if (!gpu::is_available()) {
        say(" Timing: skipped (no usable GPU)\n");
        return j;
    }
    const gpu::dnn::convolution_options conv_options =
        gpu::dnn::convolution_options::from_profile(profile);
    gpu::stream stream;
    gpu::dnn::handle h(stream);
    gpu::device_buffer<float> x(problem.input_elements(), stream);
    gpu::device_buffer<float> w(problem.filter_elements(), stream);
    gpu::device_buffer<float> y(problem.output_elements(), stream);
    gpu::blas::random_generator rng(seed, stream);
    rng.normal(x);
    rng.normal(w, 0.0, 0.1);
    progress(std::string("planning the convolution (") +
             std::string(gpu::dnn::to_string(conv_options.search)) + " search)");
    gpu::dnn::convolution conv(h, problem, conv_options, x, w, y);
    progress("100 convolutions");
    const gpu::statistics stats =
        gpu::benchmark(stream, [&] { conv.forward(h, x, w, y); },
                       {.warmup = 3, .repetitions = 10, .calls_per_repetition = 10});
    const double images_per_second = problem.input[0] / (stats.median_ms / 1000.0);
    const gpu::dnn::convolution_explanation& why = conv.explain();
    j["gpu"] = {{"timing", timing(stats, problem.flops(), !timed_checks(profile).empty())},
                {"ms_per_batch", stats.median_ms},
                {"images_per_second", images_per_second},
                {"algorithm", std::string(gpu::dnn::to_string(why.algorithm))},
                {"search", std::string(gpu::dnn::to_string(why.search))},
                {"deterministic", why.deterministic},
                {"workspace_bytes", why.workspace_bytes},
                {"explanation", why.to_string()}};
    say(" Average Time: %.3f ms/batch (median of %zu samples of 10 calls, after warm-up), %.1f "
        "TFLOP/s\n",
        stats.median_ms, stats.count, gpu::tflops(problem.flops(), stats.median_ms));
    say(" Throughput: %.0f images/sec\n", images_per_second);
    say_timed_checks(profile, true);
    say(" Algorithm: %s, chosen by the %s search. cuDNN's candidates, from explain():\n",
        std::string(gpu::dnn::to_string(why.algorithm)).c_str(),
        std::string(gpu::dnn::to_string(why.search)).c_str());
    std::istringstream lines(why.to_string());
    for (std::string line; std::getline(lines, line);) {
        say("   %s\n", line.c_str());
    }
    return j;
#else
    say(" skipped: cudagap was built without cuDNN (set CUDNN_ROOT and reconfigure)\n");
    return nullptr;
#endif
}

// --- 4. tensor cores ---------------------------------------------------------------------------

// What the rows of the tensor-core comparison share.
struct tensor_bench {
    const gpu::device_properties& props;
    const gpu::profile& profile;
    gpu::stream_ref stream;
    gpu::device_buffer<float>& c; // the output of every precision (FP32)
    int n;
    std::vector<demo::verdict>& verdicts;
    double fp32_ms = 0.0;
    json rows = json::array();
};

// A peak with its basis, as the JSON rows give it.
void add_peak(json& row, const std::optional<gpu::blas::peak_figure>& peak)
{
    row["peak_tflops"] = peak ? json(peak->tflops) : json(nullptr);
    row["peak_basis"] = peak ? json(std::string(to_string(peak->basis))) : json(nullptr);
    row["peak_source"] = peak ? json(peak->source) : json(nullptr);
}

// Times one precision and checks its result against the float64 product of the inputs it
// multiplied (`in_a`, `in_b`: for FP16 and BF16 rounded, as the GPU saw them); `run` queues the
// GEMM on the handle's stream.
template <class Run>
void tensor_row(tensor_bench& t, gpu::blas::precision which, const gpu::device_buffer<float>& in_a,
                const gpu::device_buffer<float>& in_b, Run run)
{
    const gpu::blas::precision_info info = gpu::blas::precision_support(which, t.props);
    const std::string name(gpu::blas::to_string(which));
    if (which != gpu::blas::precision::fp32 && !info.tensor_cores) {
        say(" %-5s skipped: %s\n", name.c_str(), info.note.c_str());
        t.rows.push_back({{"precision", name}, {"skipped", info.note}});
        return;
    }
    const std::string size = std::to_string(t.n) + "x" + std::to_string(t.n);
    progress(name + " " + size + " multiply");
    poison(t.c);
    const gpu::statistics stats =
        gpu::benchmark(t.stream, run, {.warmup = 3, .repetitions = 10, .calls_per_repetition = 5});
    if (which == gpu::blas::precision::fp32) {
        t.fp32_ms = stats.median_ms;
    }
    const double flops = 2.0 * t.n * static_cast<double>(t.n) * t.n;
    const double tflops = gpu::tflops(flops, stats.median_ms);
    json row = {{"precision", name},
                {"timing", timing(stats, flops, !timed_checks(t.profile).empty())},
                {"tflops", tflops},
                {"speedup_over_fp32", t.fp32_ms / stats.median_ms},
                {"skipped", nullptr}};
    add_peak(row, info.peak);
    say(" %-5s %8.3f ms %8.1f TFLOP/s", name.c_str(), stats.median_ms, tflops);
    if (info.peak) {
        say(" (%3.0f%% of %.0f peak, %s)", 100.0 * tflops / info.peak->tflops, info.peak->tflops,
            info.peak->label().c_str());
    }
    say("  speedup %5.1fx\n", t.fp32_ms / stats.median_ms);
    row["accuracy"] = judge_result(name + " " + size, which, in_a.to_host(), in_b.to_host(),
                                   t.c.to_host(), t.n, t.verdicts);
    t.rows.push_back(row);
}

json tensor_cores(const options& opts, const gpu::profile& profile, std::uint64_t seed,
                  std::vector<demo::verdict>& verdicts)
{
    heading("Demo: Tensor Cores (If Available)");
    if (!gpu::is_available()) {
        say(" skipped (no usable GPU)\n");
        return nullptr;
    }
    const gpu::device_properties props = gpu::current_device().properties();
    const int n = opts.tensor_size;
    const bool tensor = props.capability.has_tensor_cores();
    if (tensor) {
        say(" Tensor Cores available (%s, compute capability %s)\n",
            std::string(props.capability.architecture_name()).c_str(),
            props.capability.to_string().c_str());
    } else {
        say(" Tensor Cores not available (compute capability %s; they need Volta, 7.0, or newer): "
            "FP32 only\n",
            props.capability.to_string().c_str());
    }
    const auto count = static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
    gpu::stream stream;
    gpu::blas::handle h(profile, stream);
    gpu::device_buffer<float> a(count, stream);
    gpu::device_buffer<float> b(count, stream);
    gpu::blas::random_generator rng(seed, stream);
    rng.uniform(a);
    rng.uniform(b);
    gpu::device_buffer<float> c(count, stream);
    const auto view = [n](auto& storage) { return gpu::matrix::row_major(storage, n, n); };
    say(" %dx%d Matrix Multiply (median of 10 samples of 5 calls):\n", n, n);
    say_timed_checks(profile, true);

    tensor_bench t{props, profile, stream, c, n, verdicts};
    const auto sixteen_bit = [&](auto tag, gpu::blas::precision which) {
        using T = decltype(tag);
        const auto a16 = gpu::blas::converted<T>(a, stream);
        const auto b16 = gpu::blas::converted<T>(b, stream);
        tensor_row(t, which, gpu::blas::converted<float>(a16, stream),
                   gpu::blas::converted<float>(b16, stream),
                   [&] { gpu::blas::gemm(h, view(a16), view(b16), view(c)); });
    };
    const auto fp32_gemm = [&] {
        gpu::blas::gemm(h, view(std::as_const(a)), view(std::as_const(b)), view(c));
    };
    h.set_math(gpu::blas::math_mode::default_math);
    tensor_row(t, gpu::blas::precision::fp32, a, b, fp32_gemm);
    if (tensor) {
        h.set_math(gpu::blas::math_mode::tf32);
        tensor_row(t, gpu::blas::precision::tf32, a, b, fp32_gemm);
        h.set_math(gpu::blas::math_mode::default_math);
        sixteen_bit(__half{}, gpu::blas::precision::fp16);
        sixteen_bit(__nv_bfloat16{}, gpu::blas::precision::bf16);
    }
    return {{"size", n}, {"tensor_cores", tensor}, {"rows", t.rows}};
}

// The verdicts in the report: how many results were checked, whether all were correct, and the
// wrong ones' lines (said once more at the end of the output).
void summarize(json& report, const std::vector<demo::verdict>& verdicts)
{
    report["results_checked"] = verdicts.size();
    report["results_correct"] = demo::exit_status(verdicts) == 0;
    report["wrong_results"] = json::array();
    for (const demo::verdict& v : verdicts) {
        if (!v.correct) {
            report["wrong_results"].push_back(v.to_string());
        }
    }
    const auto wrong = std::count_if(verdicts.begin(), verdicts.end(),
                                     [](const demo::verdict& v) { return !v.correct; });
    if (wrong > 0) {
        say("\n%zu GPU result(s) WRONG (the Check lines above): cudagap-demo exits %d.\n",
            static_cast<std::size_t>(wrong), demo::exit_wrong_result);
    }
}

} // namespace

int main(int argc, char* argv[])
{
    options opts;
    gpu::profile profile;
    try {
        for (int i = 1; i < argc; ++i) {
            if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
                std::fputs(usage, stdout);
                return 0;
            }
        }
        opts = parse(argc, argv);
        profile = gpu::select_profile(opts.profile);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-demo: %s\n\n%s", e.what(), usage);
        return 2;
    }
#if !CUDAGAP_DEMO_HAS_JSON
    if (opts.json) {
        std::fputs(no_json_message, stderr);
        return 2;
    }
#endif
    quiet = opts.json;
    // The testing profile fixes the seed; otherwise every run draws new inputs.
    const std::uint64_t seed = profile.seed.value_or(std::random_device{}());
    try {
        json report = {{"cudagap_version", gpu::library_version()},
                       {"profile", profile},
                       {"seed", seed},
                       {"gpu_parts_skipped_because",
                        gpu::is_available() ? json(nullptr)
                                            : json("no usable GPU: " + gpu::unavailable_reason())}};
        const std::string note = timed_checks_note(profile, gpu::is_available());
        report["gpu_timings_include"] = timed_checks(profile);
        report["gpu_timings_note"] = note.empty() ? json(nullptr) : json(note);
        report["status"] = status();
        say("Profile: %s\n", profile.name.c_str());
        std::vector<demo::verdict> verdicts;
        report["matmul"] = matmul(opts, profile, seed, verdicts);
        report["convolution"] = convolution(profile, seed);
        report["tensor_cores"] = tensor_cores(opts, profile, seed, verdicts);
        const int status = demo::exit_status(verdicts);
        summarize(report, verdicts);
        const std::string rule(60, '=');
        say("\n%s\nThis is the power of the CUDA ecosystem, measured: cuBLAS and cuDNN do the "
            "work;\n"
            "cudagap adds RAII, errors that say what to do, and honest numbers.\n%s\n",
            rule.c_str(), rule.c_str());
#if CUDAGAP_DEMO_HAS_JSON
        if (opts.json) {
            std::cout << gpu::to_json_text(report) << '\n';
        }
#endif
        return status;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-demo: %s\n", e.what());
        return 1;
    }
}
