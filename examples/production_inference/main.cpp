// cudagap-infer: production_inference.py made real. The Fashion-MNIST convnet
// that cudagap-train trains, served as its InferenceWrapper serves a model (predict,
// predict_batch) in inference mode, with torch.compile(mode="reduce-overhead")'s CUDA graph
// replay: requests padded to batch buckets, each bucket planned once (exhaustive algorithm
// search) and captured once. Eager and graph latency p50/p90/p99, images/s and test accuracy side
// by side; --export-onnx for TensorRT and Triton; --outputs and --json for scripts. See
// docs/production_inference.md.
#include "measure.hpp"
#include "model.hpp"
#include "onnx_export.hpp"
#include "options.hpp"
#include "server.hpp"

#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/json.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/nn/safetensors.hpp>
#include <gpu/version.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <stdexcept>
#include <string>

namespace {

constexpr int exit_failure = 1;
constexpr int exit_usage = 2;

// Human-readable lines go to stdout unless the JSON report goes there.
bool text_out(const infer::options& opts)
{
    return !(opts.json && *opts.json == "-");
}

// A progress line on stderr, redrawn in place, only on a terminal and without --quiet.
bool show_progress(const infer::options& opts)
{
    return !opts.quiet && isatty(STDERR_FILENO) != 0;
}

void progress_line(const std::string& text, bool done)
{
    std::fprintf(stderr, "\r\033[K%s", done ? "" : text.c_str());
    std::fflush(stderr);
}

// The --json report itself could not be written: a failure report would fail the same way.
struct json_write_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Writes @p text to a temporary file beside @p path, then renames it over @p path: a reader (a
// script waiting for the report) never sees half a report, and a failed write leaves the old one.
void write_atomically(const std::filesystem::path& path, const std::string& text)
{
    std::filesystem::path temporary = path;
    temporary += ".tmp-" + std::to_string(::getpid());
    std::ofstream file(temporary, std::ios::binary | std::ios::trunc);
    file << text;
    file.close();
    std::error_code error;
    if (!file) {
        const std::string reason = std::strerror(errno);
        std::filesystem::remove(temporary, error);
        throw json_write_error("cannot write the JSON report to " + path.string() + ": " + reason);
    }
    std::filesystem::rename(temporary, path, error);
    if (error) {
        std::error_code ignored;
        std::filesystem::remove(temporary, ignored);
        throw json_write_error("cannot write the JSON report to " + path.string() + ": " +
                               error.message());
    }
}

void write_json(const infer::options& opts, const nlohmann::json& report)
{
    if (!opts.json) {
        return;
    }
    if (*opts.json == "-") {
        std::cout << gpu::to_json_text(report) << '\n';
        return;
    }
    write_atomically(*opts.json, gpu::to_json_text(report) + '\n');
}

// What the run uses: the model on the host, its weights, and the images to run it on.
struct inputs {
    infer::network net;
    std::vector<float> weights;
    infer::image_set images;
    bool test_set = false; // the images are Fashion-MNIST's test set (they have labels)
};

infer::image_set load_images(const infer::options& opts, bool& test_set)
{
    const std::string dir = opts.data.value_or(infer::default_data);
    test_set = opts.data.has_value() || infer::has_test_set(dir);
    if (test_set) {
        return infer::load_test_set(dir, opts.test_limit);
    }
    // No data set where none was asked for: time on synthetic images, report no accuracy.
    return infer::synthetic_images(opts.test_limit != 0 ? opts.test_limit : 64, opts.seed);
}

// What is known before anything runs; the inputs' fields are filled once they are loaded, so
// that a report of a failure says what it can.
nlohmann::json base_report(const infer::options& opts)
{
    return {{"program", "cudagap-infer"},
            {"version", gpu::library_version().to_string()},
            {"device", nullptr},
            {"gpu_available", false},
            {"precision", opts.precision},
            {"profile", opts.profile},
            {"checkpoint",
             opts.checkpoint ? nlohmann::json(*opts.checkpoint) : nlohmann::json(nullptr)},
            {"seeded", !opts.checkpoint},
            {"buckets", opts.buckets},
            {"results", nlohmann::json::array()},
            {"test_accuracy", nullptr},
            {"test_images", nullptr},
            {"data", nullptr},
            {"onnx", nullptr},
            {"error", nullptr}};
}

void print_model(const infer::options& opts, const inputs& in)
{
    if (opts.checkpoint) {
        std::printf("Model: cudagap-train's convnet, %zu parameters, from %s\n",
                    in.net.store.parameter_elements(), opts.checkpoint->c_str());
    } else {
        std::printf("Model: cudagap-train's convnet, %zu parameters, initialised from seed %llu "
                    "(no --checkpoint: "
                    "its predictions are meaningless)\n",
                    in.net.store.parameter_elements(), static_cast<unsigned long long>(opts.seed));
    }
    std::printf("Inputs: %s, %zu images\n", in.images.source.c_str(), in.images.count);
}

void export_model(const infer::options& opts, const inputs& in, nlohmann::json& report)
{
    infer::export_onnx(in.net.store, in.weights, *opts.export_onnx);
    report["onnx"] = {{"path", *opts.export_onnx}, {"opset", infer::onnx_opset}};
    if (text_out(opts)) {
        std::printf("Model exported to %s (ONNX opset %d, input 'input' [batch, 1, 28, 28], output "
                    "'output' "
                    "[batch, 10])\nNext steps:\n 1. Convert to TensorRT: trtexec --onnx=%s "
                    "--saveEngine=model.trt "
                    "--minShapes=input:1x1x28x28 --optShapes=input:32x1x28x28 "
                    "--maxShapes=input:256x1x28x28\n"
                    " 2. Deploy with Triton Inference Server (backend onnxruntime or tensorrt, "
                    "max_batch_size 256)\n",
                    opts.export_onnx->c_str(), infer::onnx_opset, opts.export_onnx->c_str());
    }
}

nlohmann::json to_json(const infer::timing& t)
{
    return {{"mode", infer::to_string(t.mode)},
            {"batch_size", t.batch_size},
            {"bucket", t.bucket},
            {"launches_per_request", t.launches},
            {"requests", t.requests},
            {"latency_ms",
             {{"p50", t.ms.p50}, {"p90", t.ms.p90}, {"p99", t.ms.p99}, {"mean", t.ms.mean}}},
            {"images_per_second", t.images_per_second}};
}

void print_table(const std::vector<infer::timing>& results, const infer::options& opts)
{
    std::printf("\nLatency per request (host to host: input copy, forward, logits back), %lld "
                "requests after %lld "
                "warm-up:\n batch  bucket  mode      p50 ms    p90 ms    p99 ms   mean ms     "
                "images/s  p99/p50\n",
                static_cast<long long>(opts.requests), static_cast<long long>(opts.warmup));
    for (const infer::timing& t : results) {
        std::printf("%6lld  %6lld%s %-6s %9.4f %9.4f %9.4f %9.4f %12.0f %8.2f\n",
                    static_cast<long long>(t.batch_size), static_cast<long long>(t.bucket),
                    t.launches > 1 ? "*" : " ", std::string(infer::to_string(t.mode)).c_str(),
                    t.ms.p50, t.ms.p90, t.ms.p99, t.ms.mean, t.images_per_second,
                    t.ms.p99 / t.ms.p50);
    }
    if (std::any_of(results.begin(), results.end(),
                    [](const infer::timing& t) { return t.launches > 1; })) {
        std::printf(" * larger than the largest bucket: split into several launches per request\n");
    }
}

// Times every --batch-sizes entry in every mode (eager first, then graph, per batch size); each
// result goes into the report as it is measured, so that a failure part way reports those done.
std::vector<infer::timing> time_all(infer::server& model, const infer::options& opts,
                                    const inputs& in, const std::vector<infer::run_mode>& modes,
                                    nlohmann::json& report)
{
    std::vector<infer::timing> results;
    for (const std::int64_t batch : opts.batch_sizes) {
        for (const infer::run_mode mode : modes) {
            std::function<void(std::int64_t)> progress;
            if (show_progress(opts)) {
                progress = [&](std::int64_t done) {
                    progress_line("timing " + std::string(infer::to_string(mode)) + ", batch " +
                                      std::to_string(batch) + ": " + std::to_string(done) + "/" +
                                      std::to_string(opts.requests),
                                  done == opts.requests);
                };
            }
            results.push_back(infer::time_requests(model, in.images, mode, batch, opts.warmup,
                                                   opts.requests, progress));
            report["results"].push_back(to_json(results.back()));
        }
    }
    return results;
}

// The first K inputs and their logits (graph mode when it ran, else eager), for comparisons
// with other runtimes (ONNX Runtime).
void write_outputs(infer::server& model, const infer::options& opts, const inputs& in,
                   infer::run_mode mode)
{
    const std::size_t k =
        std::min<std::size_t>(opts.test_limit != 0 ? opts.test_limit : 64, in.images.count);
    const std::span<const float> first(in.images.pixels.data(), k * infer::image_elements);
    const std::vector<float> logits = model.predict(first, mode);
    const std::vector<gpu::nn::tensor_view> tensors{
        gpu::nn::make_tensor_view("input", first, {k, 1, infer::image_side, infer::image_side}),
        gpu::nn::make_tensor_view("output", logits, {k, infer::classes})};
    gpu::nn::write_safetensors(
        *opts.outputs, tensors,
        {{"precision", opts.precision}, {"mode", std::string(infer::to_string(mode))}});
    if (text_out(opts)) {
        std::printf(
            "Wrote %s: 'input' [%zu, 1, 28, 28] and cudagap's %s logits 'output' [%zu, 10] (%s)\n",
            opts.outputs->c_str(), k, std::string(infer::to_string(mode)).c_str(), k,
            opts.precision.c_str());
    }
}

void report_accuracy(infer::server& model, const infer::options& opts, const inputs& in,
                     const std::vector<infer::run_mode>& modes, nlohmann::json& report)
{
    if (!in.test_set) {
        if (text_out(opts)) {
            std::printf("No test accuracy: no Fashion-MNIST test set (apt-get install "
                        "dataset-fashion-mnist, or --data)\n");
        }
        return;
    }
    report["test_accuracy"] = {{"eager", nullptr}, {"graph", nullptr}};
    std::string line = "Test accuracy (" + std::to_string(in.images.count) + " images):";
    for (const infer::run_mode mode : modes) {
        const double value = infer::test_accuracy(model, in.images, mode);
        report["test_accuracy"][std::string(infer::to_string(mode))] = value;
        char text[64];
        std::snprintf(text, sizeof text, " %s %.2f%%", std::string(infer::to_string(mode)).c_str(),
                      100.0 * value);
        line += text;
    }
    if (text_out(opts)) {
        std::printf("%s\n", line.c_str());
    }
}

// The modes to run; graph is left out, with the reason, under a profile that synchronises.
std::vector<infer::run_mode> modes_of(const infer::options& opts, const gpu::profile& profile,
                                      nlohmann::json& report)
{
    std::vector<infer::run_mode> modes;
    if (opts.mode != "graph") {
        modes.push_back(infer::run_mode::eager);
    }
    if (opts.mode != "eager") {
        if (profile.synchronous_checks || profile.check_numerics) {
            report["graph_skipped"] = "the " + profile.name +
                                      " profile synchronises after every call, which a CUDA "
                                      "graph cannot capture";
            if (text_out(opts)) {
                std::printf("Graph mode skipped: %s\n",
                            report["graph_skipped"].get<std::string>().c_str());
            }
        } else {
            modes.push_back(infer::run_mode::graph);
        }
    }
    return modes;
}

int serve(const infer::options& opts, const inputs& in, nlohmann::json& report)
{
    report["gpu_available"] = true;
    report["device"] = gpu::device::current().properties().name;
    const gpu::profile profile = gpu::profile_from_name(opts.profile);
    const std::vector<infer::run_mode> modes = modes_of(opts, profile, report);
    const bool graph = std::find(modes.begin(), modes.end(), infer::run_mode::graph) != modes.end();
    infer::server_options settings{opts.buckets, profile, graph, {}};
    if (show_progress(opts)) {
        settings.progress = [](std::size_t i, std::size_t n, std::int64_t bucket) {
            progress_line("planning bucket " + std::to_string(bucket) + " (" +
                              std::to_string(i + 1) + "/" + std::to_string(n) + ")",
                          false);
        };
    }
    infer::server model(infer::precision_of(opts.precision), in.weights, settings);
    if (show_progress(opts)) {
        progress_line("", true);
    }
    // Who holds the GPU once every bucket is planned: a "bucket N activations" row per bucket.
    report["memory_ledger"] = gpu::memory_ledger::snapshot(gpu::device::current());
    if (text_out(opts)) {
        std::printf("GPU: %s; %s, profile %s: %zu buckets planned%s in %.2f s\n",
                    report["device"].get<std::string>().c_str(), opts.precision.c_str(),
                    opts.profile.c_str(), opts.buckets.size(), graph ? " and captured" : "",
                    model.setup_seconds());
        for (const std::string& line : model.describe()) {
            std::printf("  %s\n", line.c_str());
        }
    }
    const std::vector<infer::timing> results = time_all(model, opts, in, modes, report);
    if (text_out(opts)) {
        print_table(results, opts);
    }
    report_accuracy(model, opts, in, modes, report);
    if (opts.outputs) {
        write_outputs(model, opts, in, modes.back());
    }
    write_json(opts, report);
    return 0;
}

int run(const infer::options& opts, nlohmann::json& report)
{
    if (opts.export_onnx && !infer::onnx_export_available()) {
        throw std::runtime_error("--export-onnx: " + infer::onnx_export_unavailable_reason());
    }
    inputs in{infer::network(infer::precision_of(opts.precision)), {}, {}, false};
    in.weights = infer::load_weights(in.net, opts.checkpoint, opts.seed);
    in.images = load_images(opts, in.test_set);
    report["test_images"] = in.test_set ? in.images.count : 0;
    report["data"] = in.images.source;
    if (text_out(opts)) {
        print_model(opts, in);
    }
    if (opts.export_onnx) {
        export_model(opts, in, report);
    }
    if (!gpu::is_available()) {
        const std::string reason = gpu::unavailable_reason();
        report["reason"] = reason;
        if (text_out(opts)) {
            std::printf("No usable GPU, so no inference: %s\n", reason.c_str());
            if (opts.outputs) {
                std::printf("--outputs %s not written: it holds the GPU's logits\n",
                            opts.outputs->c_str());
            }
        }
        write_json(opts, report);
        return 0;
    }
    return serve(opts, in, report);
}

// What a failure says: for an out-of-memory error, what to reduce (its message holds the
// numbers: asked for, free, total, what cudagap holds), else the error's own message.
std::string failure_message(const std::exception& e)
{
    if (dynamic_cast<const gpu::out_of_memory*>(&e) == nullptr) {
        return e.what();
    }
    return std::string("out of GPU memory: use smaller --buckets (the activations grow with the "
                       "largest).\n") +
           e.what();
}

// A run that failed: the message on stderr, and the --json report with the error and what was
// known or done before it (as cudagap-train's).
int report_failure(const std::exception& e, const infer::options& opts, nlohmann::json& report)
{
    const std::string message = failure_message(e);
    std::fprintf(stderr, "cudagap-infer: %s\n", message.c_str());
    report["error"] = message;
    if (dynamic_cast<const json_write_error*>(&e) != nullptr) {
        return exit_failure;
    }
    try {
        write_json(opts, report);
    } catch (const std::exception& json_error) {
        std::fprintf(stderr, "cudagap-infer: %s\n", json_error.what());
    }
    return exit_failure;
}

} // namespace

int main(int argc, char* argv[])
{
    infer::options opts;
    try {
        opts = infer::parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-infer: %s\n\n%s", e.what(), infer::usage);
        return exit_usage;
    }
    if (opts.help) {
        std::fputs(infer::usage, stdout);
        return 0;
    }
    if (opts.version) {
        // The second line tells scripts (bench/infer, the ONNX proofs) whether --export-onnx works here.
        std::printf(
            "cudagap-infer %s\nONNX export: %s\n", gpu::library_version().to_string().c_str(),
            infer::onnx_export_available() ? "yes" : "no (built without the ONNX C++ library)");
        return 0;
    }
    nlohmann::json report = base_report(opts);
    try {
        return run(opts, report);
    } catch (const std::exception& e) {
        return report_failure(e, opts, report);
    }
}
