// cudagap-bench-conv: the demo's convolution, nn.Conv2d(3, 64, 3, padding=1) on a
// 32x3x224x224 batch, in FP32 NCHW (PyTorch's defaults) and in FP16 NHWC (what tensor
// cores read best), side by side in one run:
//
//   cudagap heuristic       gpu::dnn::convolution, cuDNN's ranked heuristic list
//   cudagap exhaustive      every algorithm timed once at planning (cudnn.benchmark)
//   cudagap deterministic   heuristic ranking, deterministic algorithms only
//   raw cuDNN               the cudnnConvolutionForward call the exhaustive plan makes, with
//                           its descriptors, algorithm and a workspace of the same size
//   torch                   torch.nn.functional.conv2d, cudnn.benchmark = True, TF32 off
//   device copy             a device-to-device cudaMemcpyAsync of 1 GiB: the measured copy
//                           bandwidth that the convolutions' GB/s are compared against
//
// The problem is memory-bound: it reads 19 MB and writes 411 MB per FP32 batch for 5.5 GFLOP.
// Every variant is timed with CUDA events around back-to-back calls after a warm-up (plans and
// torch's search stay outside), its samples stopped when their noise reaches the target or the
// time limit passes (nvbench's rule); the median per call is quoted. The exhaustive plan, the raw
// call and torch also get single calls ("1 call"), a CUDA graph replay of the batch ("graph";
// torch.cuda.CUDAGraph for torch) and cold rows (single calls, the L2 flushed before each). A
// policy that cannot plan a case (no
// algorithm fits, or cuDNN fails the planning) loses its own row, with a note that says why; the
// rest of the case and the exit status stand. Without a GPU the program explains the problem and
// what it would compare, and exits 77.
//
// Targets (issue 4, for an H200): exhaustive within 5% of PyTorch with benchmark mode; FP32 NCHW
// at least 60% and FP16 NHWC at least 70% of the measured copy bandwidth.
#include "harness.hpp"
#include "policy_plan.hpp"

#include <gpu/device.hpp>
#include <gpu/dnn.hpp>
#include <gpu/error.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>
#include <gpu/timing.hpp>

#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstring>
#include <optional>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace {

namespace bench = gpu::bench;
namespace dnn = gpu::dnn;

// The layer and batch of docs/convolution.md's PyTorch line.
constexpr int batch = 32;
constexpr int in_channels = 3;
constexpr int image = 224;
constexpr int out_channels = 64;
constexpr int kernel = 3;
constexpr int padding = 1;

constexpr std::size_t copy_bytes = std::size_t{1} << 30;
const char* const copy_case = "device copy 1 GiB";
const char* const copy_variant = "cudaMemcpyAsync D2D";
const char* const raw_variant = "raw cuDNN";
const char* const torch_variant = "torch";

struct conv_case {
    dnn::data_type type;
    dnn::tensor_layout layout;
    const char* label;       // for targets: "FP32 NCHW"
    double bandwidth_target; // fraction of the copy bandwidth
};

constexpr std::array<conv_case, 2> cases{{
    {dnn::data_type::fp32, dnn::tensor_layout::nchw, "FP32 NCHW", 0.60},
    {dnn::data_type::fp16, dnn::tensor_layout::nhwc, "FP16 NHWC", 0.70},
}};

constexpr std::array<dnn::algorithm_search, 3> policies{dnn::algorithm_search::heuristic,
                                                        dnn::algorithm_search::exhaustive,
                                                        dnn::algorithm_search::deterministic};

dnn::convolution_problem problem_of(const conv_case& c)
{
    return {.input = {batch, in_channels, image, image},
            .filter = {out_channels, in_channels, kernel, kernel},
            .geometry = {.padding = {padding, padding}},
            .type = c.type,
            .layout = c.layout};
}

// The case name exactly as compare_torch.py's conv_case_name writes it.
std::string case_name(const conv_case& c)
{
    return "N" + std::to_string(batch) + " C" + std::to_string(in_channels) + " " +
           std::to_string(image) + "x" + std::to_string(image) + " K" +
           std::to_string(out_channels) + " " + std::to_string(kernel) + "x" +
           std::to_string(kernel) + " pad" + std::to_string(padding) + " stride1 " +
           std::string(dnn::to_string(c.type)) + " " + std::string(dnn::to_string(c.layout));
}

std::string variant_of(dnn::algorithm_search policy)
{
    return "cudagap " + std::string(gpu::dnn::to_string(policy));
}

std::string torch_target(const conv_case& c)
{
    return std::string("exhaustive within 5% of torch, ") + c.label;
}

std::string bandwidth_target(const conv_case& c)
{
    return std::string(c.label) +
           " >= " + std::to_string(static_cast<int>(c.bandwidth_target * 100)) +
           "% of copy bandwidth";
}

std::string megabytes(double bytes)
{
    std::array<char, 32> text{};
    std::snprintf(text.data(), text.size(), "%.1f MB", bytes / 1e6);
    return text.data();
}

std::string fixed(double value, const char* format)
{
    std::array<char, 48> text{};
    std::snprintf(text.data(), text.size(), format, value);
    return text.data();
}

bench::math_mode math_of(dnn::data_type type)
{
    return type == dnn::data_type::fp16 ? bench::math_mode::fp16 : bench::math_mode::fp32;
}

// The batch sample each calibration aims at: long enough for CUDA events to resolve well.
double batch_target_ms(const bench::options& settings)
{
    return settings.quick ? 5.0 : 25.0;
}

// What one variant's timing comes to: its warm batch row and, for the exhaustive plan and the
// raw call, the single calls and graph replay beside it and a cold row of single calls.
struct variant_rows {
    bench::measurement warm;
    std::optional<bench::measurement> cold;
};

// Times `work` (which queues device work on the timer's stream): batches of back-to-back calls
// for about the target time each, then, with `extras`, single calls warm and cold and the
// batch's calls replayed from a CUDA graph.
variant_rows time_work(bench::report& r, bench::device_timer& timer, const std::string& label,
                       const bench::device_call& work, bool extras)
{
    const int calls = timer.calls_for(work, batch_target_ms(r.settings()));
    const std::array<bench::device_call, 1> works{work};
    variant_rows out{bench::measurement::from(timer.batch(works, calls).front(), "CUDA events",
                                              bench::cache_state::warm),
                     std::nullopt};
    if (!extras) {
        return out;
    }
    out.warm.single_call =
        bench::side_timing::from(timer.single_calls(works, bench::cache_state::warm).front());
    try {
        out.warm.graph = bench::side_timing::from(timer.graph(works, calls).front());
    } catch (const std::exception& e) {
        r.add_error(label + " graph", e.what());
    }
    out.cold = bench::measurement::from(timer.single_calls(works, bench::cache_state::cold).front(),
                                        "CUDA events", bench::cache_state::cold);
    return out;
}

// ---- the part that needs no GPU: the problem, checked by cuDNN on the host -----------------

void cpu_part(bench::report& r)
{
    const dnn::version_info v = dnn::version();
    r.add_note("cuDNN " + v.loaded.to_string() + " loaded (compiled against " +
               v.compiled.to_string() + ", built for CUDA " + v.loaded_for_cuda.to_string() + ")");
    r.add_note("problem: nn.Conv2d(3, 64, kernel_size=3, padding=1) on a " + std::to_string(batch) +
               "x3x224x224 batch, no bias");
    for (const conv_case& c : cases) {
        const dnn::convolution_problem p = problem_of(c);
        // Descriptors and cuDNN's own output shape: host calls, no GPU needed.
        const dnn::tensor_descriptor x(p.input, p.type, p.layout);
        const dnn::filter_descriptor w(p.filter, p.type, p.layout);
        const dnn::convolution_descriptor conv(p.geometry);
        const std::vector<int> out = conv.output_dims(x, w);
        const double in_bytes = static_cast<double>(x.size_bytes());
        const double out_bytes =
            static_cast<double>(p.output_elements() * dnn::element_size(p.type));
        r.add_note(case_name(c) + ": output " + dnn::to_string(out) + " (cuDNN), reads " +
                   megabytes(in_bytes) + " + " + gpu::format_bytes(w.size_bytes()) +
                   " of weights, writes " + megabytes(out_bytes) + "; at least " +
                   megabytes(p.minimum_bytes()) + " moved and " + fixed(p.flops() / 1e9, "%.2f") +
                   " GFLOP per batch (" + fixed(p.flops() / p.minimum_bytes(), "%.1f") +
                   " FLOP per byte moved: the output write dominates)");
    }
    r.add_note("compares, per case: cudagap under the heuristic, exhaustive and deterministic "
               "policies; the raw cudnnConvolutionForward the exhaustive plan makes; torch conv2d "
               "with cudnn.benchmark = True and TF32 off; GB/s are the minimum bytes over the "
               "median time, as a fraction of a measured 1 GiB device-to-device copy");
    r.add_note("targets are set for an H200; elsewhere they are reported against the same numbers");
}

// ---- the GPU part ---------------------------------------------------------------------------

double to_double(float v)
{
    return v;
}
double to_double(__half v)
{
    return static_cast<double>(__half2float(v));
}

template <class T>
T from_float(float v)
{
    if constexpr (std::is_same_v<T, float>) {
        return v;
    } else {
        return __float2half(v);
    }
}

// Random values in [-1, 1) from a fixed seed, in T, uploaded to a new device buffer.
template <class T>
gpu::device_buffer<T> random_buffer(std::size_t count, std::uint32_t seed, gpu::stream_ref stream)
{
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> dist(-1.0F, 1.0F);
    std::vector<T> host(count);
    for (T& value : host) {
        value = from_float<T>(dist(engine));
    }
    gpu::device_buffer<T> buffer(count, stream);
    buffer.copy_from_host(host);
    return buffer;
}

double measure_copy(bench::report& r, bench::device_timer& timer, gpu::stream_ref stream)
{
    gpu::device_buffer<std::byte> source(copy_bytes, stream);
    gpu::device_buffer<std::byte> target(copy_bytes, stream);
    source.fill_zero_async(stream);
    bench::measurement m =
        time_work(
            r, timer, copy_case, [&] { target.copy_from_async(source, stream); }, false)
            .warm;
    m.case_name = copy_case;
    m.variant = copy_variant;
    // A copy reads and writes every byte.
    m.set_bytes(2.0 * static_cast<double>(copy_bytes), r.env().peak_memory_bandwidth_gbps);
    m.note = "reads + writes 1 GiB; of peak: against the theoretical bandwidth";
    const double gbps = *m.gbps;
    r.add(std::move(m));
    return gbps;
}

// One case's problem, name and buffers (random inputs; the output is overwritten).
template <class T>
struct case_data {
    dnn::convolution_problem problem;
    std::string name;
    gpu::device_buffer<T> x;
    gpu::device_buffer<T> w;
    gpu::device_buffer<T> y;

    case_data(const conv_case& c, gpu::stream_ref stream)
        : problem(problem_of(c)), name(case_name(c)),
          x(random_buffer<T>(problem.input_elements(), 1, stream)),
          w(random_buffer<T>(problem.filter_elements(), 2, stream)),
          y(problem.output_elements(), stream)
    {}
};

// Adds a row of the case with its throughput: images per second, TFLOP/s, GB/s against the copy.
void add_conv_row(bench::report& r, const conv_case& c, bench::measurement m,
                  const std::string& variant, const std::string& note, double copy_gbps)
{
    const dnn::convolution_problem p = problem_of(c);
    m.case_name = case_name(c);
    m.variant = variant;
    m.math = math_of(c.type);
    m.set_bytes(p.minimum_bytes(), copy_gbps);
    m.note = fixed(static_cast<double>(batch) / (m.median_ms / 1e3), "%.0f img/s") + ", " +
             fixed(gpu::tflops(p.flops(), m.median_ms), "%.1f TFLOP/s") + ", " + note;
    r.add(std::move(m));
}

// Plans and times the case under each policy; a policy that cannot plan loses its own row (see
// policy_plan.hpp). Returns the exhaustive plan, for the raw call, when it has one.
// Adds the rows of one variant: the warm row and, when there is one, its cold row.
void add_conv_rows(bench::report& r, const conv_case& c, variant_rows rows,
                   const std::string& variant, const std::string& note, double copy_gbps)
{
    add_conv_row(r, c, std::move(rows.warm), variant, note, copy_gbps);
    if (rows.cold) {
        add_conv_row(r, c, std::move(*rows.cold), variant + " cold",
                     note + ", single calls with the L2 flushed before each", copy_gbps);
    }
}

template <class T>
std::optional<dnn::convolution> time_policies(bench::report& r, bench::device_timer& timer,
                                              const conv_case& c, dnn::handle& h, case_data<T>& d,
                                              double copy_gbps)
{
    std::optional<dnn::convolution> exhaustive;
    for (const dnn::algorithm_search policy : policies) {
        dnn::convolution_options options;
        options.search = policy;
        const bool timed = policy == dnn::algorithm_search::exhaustive;
        std::optional<dnn::convolution> planned =
            bench::conv::plan_or_lose_row(r, d.name, variant_of(policy), [&] {
                // The exhaustive search times on the real buffers, as cudnn.benchmark does.
                return timed ? dnn::convolution(h, d.problem, options, d.x, d.w, d.y)
                             : dnn::convolution(h, d.problem, options);
            });
        if (!planned) {
            continue;
        }
        const dnn::convolution_explanation& e = planned->explain();
        add_conv_rows(r, c,
                      time_work(
                          r, timer, d.name + " " + variant_of(policy),
                          [&] { planned->forward(h, d.x, d.w, d.y); }, timed),
                      variant_of(policy),
                      std::string(dnn::to_string(e.algorithm)) + ", ws " +
                          gpu::format_bytes(e.workspace_bytes),
                      copy_gbps);
        r.add_note(
            d.name + ", " + std::string(gpu::dnn::to_string(policy)) + ": " +
            std::string(dnn::to_string(e.algorithm)) + " (math " +
            std::string(dnn::to_string(e.math)) + ", workspace " +
            gpu::format_bytes(e.workspace_bytes) +
            (e.time_ms ? ", " + fixed(*e.time_ms, "%.3f ms") + " in the search" : std::string()) +
            (e.deterministic ? ", deterministic" : ", not deterministic") + ")");
        if (timed) {
            if (!r.settings().quick) {
                r.add_note(d.name + " exhaustive search:\n" + e.to_string());
            }
            exhaustive = std::move(planned);
        }
    }
    return exhaustive;
}

// The raw call the exhaustive plan makes, with a workspace of its own of the same size, timed;
// then the wrapper's output against the raw call's: bit for bit when the algorithm is
// deterministic, within rounding otherwise.
template <class T>
void compare_raw(bench::report& r, bench::device_timer& timer, const conv_case& c, dnn::handle& h,
                 gpu::stream_ref stream, case_data<T>& d, dnn::convolution& exhaustive,
                 double copy_gbps)
{
    gpu::device_buffer<std::byte> workspace(exhaustive.workspace().size(), stream);
    gpu::device_buffer<T> y_raw(d.problem.output_elements(), stream);
    const float one = 1.0F;
    const float zero = 0.0F;
    const auto raw = [&] {
        GPU_CUDNN_CHECK(cudnnConvolutionForward(
            h.get(), &one, exhaustive.input_descriptor().get(), d.x.data(),
            exhaustive.weights_descriptor().get(), d.w.data(), exhaustive.descriptor().get(),
            exhaustive.native_algorithm(), workspace.data(), workspace.size(), &zero,
            exhaustive.output_descriptor().get(), y_raw.data()));
    };
    add_conv_rows(r, c, time_work(r, timer, d.name + " " + raw_variant, raw, true), raw_variant,
                  std::string(dnn::to_string(exhaustive.algorithm())) +
                      ", the exhaustive plan's call",
                  copy_gbps);

    exhaustive.forward(h, d.x, d.w, d.y);
    raw();
    stream.synchronize();
    const std::vector<T> ours = d.y.to_host();
    const std::vector<T> theirs = y_raw.to_host();
    const bool same = std::memcmp(ours.data(), theirs.data(), ours.size() * sizeof(T)) == 0;
    double diff = 0.0;
    double norm = 0.0;
    for (std::size_t i = 0; i < ours.size(); ++i) {
        const double a = to_double(ours[i]);
        const double b = to_double(theirs[i]);
        diff += (a - b) * (a - b);
        norm += b * b;
    }
    const double relative = norm > 0.0 ? std::sqrt(diff / norm) : std::sqrt(diff);
    const bool deterministic = exhaustive.explain().deterministic;
    const double allowed = c.type == dnn::data_type::fp32 ? 1e-5 : 1e-2;
    r.add_note(d.name + ": cudagap's output " +
               (same ? std::string("is bitwise identical to the raw cuDNN call's")
                     : "differs from the raw cuDNN call's by " + fixed(relative, "%.2e") +
                           " (relative L2)"));
    if ((deterministic && !same) || !(relative <= allowed)) {
        r.add_error(d.name, "cudagap's exhaustive plan and the raw cuDNN call disagree (relative "
                            "difference " +
                                fixed(relative, "%.2e") +
                                (deterministic ? ", deterministic algorithm)" : ")"));
    }
}

template <class T>
void run_case(bench::report& r, bench::device_timer& timer, const conv_case& c, dnn::handle& h,
              gpu::stream_ref stream, double copy_gbps)
{
    case_data<T> d(c, stream);
    std::optional<dnn::convolution> exhaustive = time_policies(r, timer, c, h, d, copy_gbps);
    if (!exhaustive) {
        r.add_note(bench::conv::lost_row_note(
            d.name, raw_variant,
            "it makes the exhaustive plan's call, and the exhaustive policy "
            "has no plan (see its note)"));
        return;
    }
    compare_raw(r, timer, c, h, stream, d, *exhaustive, copy_gbps);
}

void set_targets(bench::report& r, double copy_gbps)
{
    for (const conv_case& c : cases) {
        const std::string name = case_name(c);
        const bench::measurement* ours =
            r.find(name, variant_of(dnn::algorithm_search::exhaustive));
        const bench::measurement* theirs = r.find(name, torch_variant);
        if (ours == nullptr) {
            const char* why = "no cudagap exhaustive row (the notes and errors say why)";
            r.set_target_not_measured(torch_target(c), why);
            r.set_target_not_measured(bandwidth_target(c), why);
            continue;
        }
        if (theirs == nullptr) {
            r.set_target_not_measured(torch_target(c), "no torch row (the notes say why)");
        } else {
            const double ratio = ours->median_ms / theirs->median_ms;
            r.set_target(torch_target(c), ratio <= 1.05, fixed(ratio, "%.3f x torch"));
        }
        const double fraction = *ours->gbps / copy_gbps;
        r.set_target(bandwidth_target(c), fraction >= c.bandwidth_target,
                     fixed(*ours->gbps, "%.0f GB/s = ") + fixed(100 * fraction, "%.0f%%"));
    }
}

// compare_torch.py's command line for case `c`: the same problem, timed the same ways.
std::vector<std::string> torch_arguments(const bench::report& r, const conv_case& c)
{
    std::vector<std::string> arguments{"conv", "--dtype", std::string(dnn::to_string(c.type)),
                                       "--layout", std::string(dnn::to_string(c.layout))};
    for (const auto& [flag, value] :
         {std::pair{"--batch", batch}, std::pair{"--in-channels", in_channels},
          std::pair{"--height", image}, std::pair{"--width", image},
          std::pair{"--out-channels", out_channels}, std::pair{"--kernel", kernel},
          std::pair{"--padding", padding}, std::pair{"--warmup", 3}}) {
        arguments.emplace_back(flag);
        arguments.push_back(std::to_string(value));
    }
    for (const char* flag : {"--single-call", "--graph", "--cold"}) {
        arguments.emplace_back(flag);
    }
    arguments.insert(arguments.end(), {"--calls", "auto", "--target-ms",
                                       fixed(batch_target_ms(r.settings()), "%.1f")});
    const std::vector<std::string> rule = r.torch_rule_arguments();
    arguments.insert(arguments.end(), rule.begin(), rule.end());
    return arguments;
}

void add_torch_rows(bench::report& r, double copy_gbps)
{
    for (const conv_case& c : cases) {
        const std::vector<std::string> arguments = torch_arguments(r, c);
        const bench::torch_run torch = r.compare_torch(arguments);
        const bench::torch_case* t = torch.find(case_name(c));
        if (t == nullptr) {
            continue;
        }
        const dnn::convolution_problem p = problem_of(c);
        bench::measurement m = t->to_measurement(math_of(c.type));
        m.set_bytes(p.minimum_bytes(), copy_gbps);
        m.note = fixed(batch / (m.median_ms / 1e3), "%.0f img/s") +
                 ", conv2d, cudnn.benchmark = True, TF32 off" +
                 (m.graph ? "; graph: torch.cuda.CUDAGraph" : "");
        r.add(std::move(m));
        if (std::optional<bench::measurement> cold = t->cold_measurement(math_of(c.type))) {
            cold->set_bytes(p.minimum_bytes(), copy_gbps);
            cold->note = "conv2d, single calls with the L2 flushed before each";
            r.add(std::move(*cold));
        }
    }
}

void gpu_part(bench::report& r)
{
    gpu::stream stream(gpu::stream_flags::non_blocking);
    dnn::handle h(stream);
    if (r.env().device_name.find("H200") == std::string::npos) {
        r.add_note("targets are set for an H200; this run is on " + r.env().device_name);
    }
    r.add_note("rows: warm batches of back-to-back calls (the targets' figure); for the "
               "exhaustive plan, the raw call and torch, 1 call: single calls on an idle stream, "
               "graph: the batch's calls replayed from one CUDA graph, and cold rows: single "
               "calls with the L2 flushed first");
    // One timer for every case: its cold flush is sized once and reused.
    bench::device_timer timer(stream, r.rule());
    double copy_gbps = 0.0;
    if (!r.run_case(copy_case, [&] { copy_gbps = measure_copy(r, timer, stream); })) {
        return;
    }
    r.run_case(case_name(cases[0]),
               [&] { run_case<float>(r, timer, cases[0], h, stream, copy_gbps); });
    r.run_case(case_name(cases[1]),
               [&] { run_case<__half>(r, timer, cases[1], h, stream, copy_gbps); });
    add_torch_rows(r, copy_gbps);

    for (const conv_case& c : cases) {
        const std::string name = case_name(c);
        const std::string exhaustive = variant_of(dnn::algorithm_search::exhaustive);
        r.add_ratio(name, variant_of(dnn::algorithm_search::heuristic), exhaustive,
                    "what the exhaustive search buys over cuDNN's heuristic");
        r.add_ratio(name, exhaustive, raw_variant, "the wrapper's cost over the raw call");
        r.add_ratio(name, exhaustive, torch_variant, "against PyTorch with cudnn.benchmark");
        r.add_ratio(name, exhaustive + " cold", exhaustive,
                    "a cold single call over the warm batch: the L2 and the launch together");
    }
    set_targets(r, copy_gbps);
}

} // namespace

int main(int argc, char** argv)
{
    bench::suite s;
    s.name = "conv";
    s.description = "the demo's convolution (32x3x224x224, 64 filters 3x3, padding 1) in FP32 "
                    "NCHW and FP16 NHWC: cudagap under each policy vs the raw cuDNN call vs torch "
                    "conv2d (cudnn.benchmark), against the measured copy bandwidth";
    for (const conv_case& c : cases) {
        s.targets.push_back({torch_target(c),
                             "cudagap exhaustive median at most 1.05x torch conv2d with "
                             "cudnn.benchmark = True"});
        s.targets.push_back(
            {bandwidth_target(c), "exhaustive plan's GB/s (minimum bytes / median) at least " +
                                      std::to_string(static_cast<int>(c.bandwidth_target * 100)) +
                                      "% of the measured device copy bandwidth"});
    }
    s.cpu = cpu_part;
    s.gpu = gpu_part;
    return bench::run(argc, argv, s);
}
