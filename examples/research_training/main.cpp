// cudagap-train: the research_training.py template made real. Fashion-MNIST's reference
// convnet trained with that template's setup (seeds, exhaustive algorithm search, TF32, FP16 with
// the grad scaler or BF16 or FP32, AdamW, cross-entropy), the whole data set on the GPU and
// shuffled there, eager or with the whole step captured in one CUDA graph (--graph). Per epoch:
// the mean loss, the test accuracy, images/s, the loss scale and the skipped steps; --json;
// --save/--resume in safetensors; a failure part way still writes the --json report, with the
// error. --gpus N: this process becomes the launcher of N ranks, each this program again, which
// train data-parallel over NCCL (launcher.hpp, data_parallel.hpp). See docs/research_training.md
// and docs/scaling_out.md.
#include "data_parallel.hpp"
#include "dataset.hpp"
#include "launcher.hpp"
#include "options.hpp"
#include "trainer.hpp"

#include <gpu/blas/error.hpp>
#include <gpu/device.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/error.hpp>
#include <gpu/json.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_trace.hpp>
#include <gpu/nn/format_error.hpp>
#include <gpu/version.hpp>

#include <nlohmann/json.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef CUDAGAP_TRAIN_NCCL
#define CUDAGAP_TRAIN_NCCL 0 // the CMakeLists sets 1 when cudagap has its nccl component
#endif

namespace {

constexpr int exit_failure = 1;
constexpr int exit_usage = 2;
constexpr int exit_interrupted = 130;

// A bad argument found after parsing (exit 2): a --gpus that this build or this machine cannot
// serve, or launcher variables that do not fit the command line.
class usage_error : public std::invalid_argument {
public:
    using std::invalid_argument::invalid_argument;
};

// The name in messages: "cudagap-train", or "cudagap-train (rank 1 of 2)" in a rank of --gpus N.
std::string program = "cudagap-train";

// The first Ctrl-C asks the loop to stop after its step. The handler then gives SIGINT back to
// its default, so a second one ends the program at once: a long cuDNN search or a save never
// looks at the flag. (signal() is async-signal-safe for the signal being handled.)
extern "C" void on_sigint(int)
{
    train::stop_requested.store(1);
    std::signal(SIGINT, SIG_DFL);
}

// A rank of --gpus N keeps its handler: the terminal's Ctrl-C reaches it directly (the whole
// foreground group) and again through the launcher, which passes on what it receives, so a
// second SIGINT is no second Ctrl-C. The launcher owns that: on a second signal it kills the
// ranks (SIGKILL). Installed first thing in main, so that a Ctrl-C while the data loads or the
// ranks join does not kill some ranks and leave the others waiting for them.
extern "C" void on_rank_sigint(int)
{
    train::stop_requested.store(1);
}

nlohmann::json base_report(const train::options& opts, const train::fashion_mnist& data)
{
    return {{"program", "cudagap-train"},
            {"version", gpu::library_version().to_string()},
            {"device", nullptr},
            {"gpu_available", false},
            {"precision", opts.precision},
            {"graph", opts.graph},
            {"seed", opts.seed},
            {"batch_size", opts.batch_size},
            {"gpus", std::max(opts.gpus, 1)},
            {"lr", opts.lr},
            {"train_images", data.train.images.count},
            {"test_images", data.test.images.count},
            {"epochs", nlohmann::json::array()},
            {"final_test_accuracy", nullptr},
            {"checkpoint", nullptr},
            {"replicas_identical", nullptr},
            {"interrupted", false},
            {"error", nullptr}};
}

nlohmann::json to_json(const train::epoch_result& r)
{
    // NaN: the grad scaler skipped every step of the epoch, so there is no mean to give.
    const nlohmann::json loss =
        std::isnan(r.mean_loss) ? nlohmann::json(nullptr) : nlohmann::json(r.mean_loss);
    return {{"epoch", r.epoch},
            {"mean_loss", loss},
            {"test_accuracy", r.test_accuracy},
            {"images_per_second", r.images_per_second},
            {"seconds", r.seconds},
            {"loss_scale", r.loss_scale},
            {"skipped_steps", r.skipped_steps}};
}

// Writes the report to the --json target: stdout for "-", else the file.
void write_json(const train::options& opts, const nlohmann::json& report)
{
    if (!opts.json) {
        return;
    }
    if (*opts.json == "-") {
        std::cout << gpu::to_json_text(report) << '\n';
        return;
    }
    std::ofstream file(*opts.json);
    file << gpu::to_json_text(report) << '\n';
    if (!file) {
        throw std::runtime_error("cannot write the JSON report to " + *opts.json);
    }
}

// Human-readable lines go to stdout unless the JSON report goes there.
bool text_out(const train::options& opts)
{
    return !(opts.json && *opts.json == "-");
}

void print_epoch(const train::epoch_result& r)
{
    char loss[32] = "n/a";
    if (!std::isnan(r.mean_loss)) {
        std::snprintf(loss, sizeof loss, "%.4f", r.mean_loss);
    }
    std::printf(
        "epoch %3d  loss %s  test accuracy %6.2f%%  %10.0f images/s  %6.2f s  loss scale %g  "
        "skipped steps %lld\n",
        r.epoch, loss, 100.0 * r.test_accuracy, r.images_per_second, r.seconds, r.loss_scale,
        static_cast<long long>(r.skipped_steps));
    std::fflush(stdout);
}

void print_progress(int epoch, std::int64_t step, std::int64_t steps)
{
    // About 100 redraws an epoch: a redraw per step would cost more than a step.
    if (step != steps && step % std::max<std::int64_t>(1, steps / 100) != 0) {
        return;
    }
    constexpr int width = 40;
    const int filled = static_cast<int>(width * step / steps);
    std::fprintf(stderr, "\repoch %3d [%s%s] %lld/%lld", epoch,
                 std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), '.').c_str(),
                 static_cast<long long>(step), static_cast<long long>(steps));
    if (step == steps) {
        std::fputs("\r\033[K", stderr);
    }
}

// What a failure says: an out-of-memory error with its numbers and what to reduce, else the
// error's own message. cuDNN's and cuBLAS's own allocations, and a convolution whose every
// allowed algorithm lacked workspace memory, get the same advice (their messages carry no
// request size).
std::string failure_message(const std::exception& e, const train::options& opts)
{
    const std::string reduce =
        "Reduce --batch-size (the activations grow with it; the model and AdamW's state do not).\n";
    const auto* oom = dynamic_cast<const gpu::out_of_memory*>(&e);
    if (oom == nullptr) {
        const bool library_oom = gpu::dnn::is_out_of_memory(e) || gpu::blas::is_out_of_memory(e);
        return library_oom ? "out of GPU memory with --batch-size " +
                                 std::to_string(opts.batch_size) + ".\n" + reduce + e.what()
                           : std::string(e.what());
    }
    constexpr double mib = 1024.0 * 1024.0;
    char numbers[256];
    std::snprintf(numbers, sizeof numbers, "%.1f MiB asked for, %.1f MiB free of %.1f MiB",
                  static_cast<double>(oom->requested_bytes()) / mib,
                  static_cast<double>(oom->free_bytes()) / mib,
                  static_cast<double>(oom->total_bytes()) / mib);
    return "out of GPU memory with --batch-size " + std::to_string(opts.batch_size) + ": " +
           numbers + ".\n" + reduce + oom->what();
}

// A run that failed part way: the message, the last complete checkpoint, and the --json report
// with the error and the epochs done.
int report_failure(const std::exception& e, const train::options& opts, nlohmann::json& report)
{
    const std::string message = failure_message(e, opts);
    std::fprintf(stderr, "\n%s: %s\n", program.c_str(), message.c_str());
    if (!report["checkpoint"].is_null()) {
        std::fprintf(stderr, "%s: the last complete checkpoint, %s, is intact\n", program.c_str(),
                     report["checkpoint"].get<std::string>().c_str());
    }
    report["error"] = message;
    try {
        write_json(opts, report);
    } catch (const std::exception& json_error) {
        std::fprintf(stderr, "%s: %s\n", program.c_str(), json_error.what());
    }
    return exit_failure;
}

// Trains in this process: on one GPU, or as a rank of --gpus N with its `group`.
// Writes the --memory-trace file and prints the ledger's table of the device (current and
// peak bytes by tag), which the JSON report holds too as "memory_ledger"; a trace that cannot
// be written is reported, and the run's own result stands.
void finish_memory_trace(const train::options& opts, std::optional<gpu::memory_trace>& trace,
                         nlohmann::json& report)
{
    if (!trace) {
        return;
    }
    try {
        trace->write();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: --memory-trace: %s\n", program.c_str(), e.what());
    }
    const gpu::memory_ledger_snapshot snapshot =
        gpu::memory_ledger::snapshot(gpu::device::current());
    report["memory_ledger"] = snapshot;
    if (text_out(opts)) {
        std::printf("Memory trace written to %s (open it in ui.perfetto.dev); at the end:\n%s",
                    opts.memory_trace->c_str(), snapshot.to_text().c_str());
    }
}

int train_on_gpu(const train::options& opts, const train::fashion_mnist& data,
                 nlohmann::json& report, train::replica_group* group)
{
    train::callbacks on;
    on.epoch_done = [&](const train::epoch_result& r) {
        report["epochs"].push_back(to_json(r));
        report["final_test_accuracy"] = r.test_accuracy;
        if (opts.save) {
            report["checkpoint"] = *opts.save; // saved before the epoch is reported
        }
        if (text_out(opts)) {
            print_epoch(r);
        }
    };
    if (!opts.quiet && isatty(STDERR_FILENO) != 0) {
        on.progress = print_progress;
    }
    if (group == nullptr) {
        std::signal(SIGINT, on_sigint); // a rank's was installed in main
    }
    train::run_report run;
    // Recording from before the first allocation of the run to its end, failures included.
    std::optional<gpu::memory_trace> trace;
    if (opts.memory_trace) {
        trace.emplace(*opts.memory_trace);
    }
    try {
        report["device"] = gpu::device::current().properties().name;
        run = train::run_training(opts, data, on, group);
    } catch (const std::exception& e) {
        if (group != nullptr) {
            group->abort(); // run_training did when it threw; not when the device's name failed
        }
        finish_memory_trace(opts, trace, report);
        return report_failure(e, opts, report);
    }
    finish_memory_trace(opts, trace, report);
    report["interrupted"] = run.interrupted;
    if (run.replicas_identical) {
        report["replicas_identical"] = true;
    }
    write_json(opts, report);
    if (run.interrupted && (group == nullptr || group->rank() == 0)) {
        std::fprintf(
            stderr, "\n%s: interrupted (Ctrl-C) after %zu complete epoch(s); %s\n", program.c_str(),
            run.epochs.size(),
            run.checkpoint
                ? ("the last complete checkpoint is " + *run.checkpoint + ", intact").c_str()
                : "no checkpoint was written");
    }
    return run.interrupted ? exit_interrupted : 0;
}

// An output file's folder must exist and be writable, and the file must not be a folder: found
// before the data is read and the GPU trains, not when the first epoch ends.
void check_output(const char* option, const std::string& path)
{
    namespace fs = std::filesystem;
    const fs::path target(path);
    const fs::path folder = target.has_parent_path() ? target.parent_path() : fs::path(".");
    std::error_code ignored;
    const std::string where = std::string(option) + " " + path + ": ";
    if (fs::is_directory(target, ignored)) {
        throw std::runtime_error(where + "it is a folder; give a file name");
    }
    if (!fs::is_directory(folder, ignored)) {
        throw std::runtime_error(where + "the folder " + folder.string() + " does not exist");
    }
    if (::access(folder.c_str(), W_OK) != 0) {
        throw std::runtime_error(where + "cannot write into " + folder.string() + ": " +
                                 std::strerror(errno));
    }
}

// The data must hold at least one full step: one batch, or one per rank under --gpus N.
void check_step_fits(const train::options& opts, const train::fashion_mnist& data)
{
    const std::uint64_t count = data.train.images.count;
    const auto images = static_cast<std::uint64_t>(opts.batch_size) *
                        static_cast<std::uint64_t>(std::max(opts.gpus, 1));
    if (images <= count) {
        return;
    }
    if (opts.gpus <= 1) {
        throw train::data_error(
            "--batch-size " + std::to_string(opts.batch_size) + " is more than the " +
            std::to_string(count) +
            " training images: no full batch to train on (lower --batch-size or raise "
            "--train-limit)");
    }
    throw train::data_error(
        "--batch-size " + std::to_string(opts.batch_size) + " on each of --gpus " +
        std::to_string(opts.gpus) + " makes steps of " + std::to_string(images) +
        " images, more than the " + std::to_string(count) +
        " training images: no full step to train on (lower --batch-size or --gpus, or raise "
        "--train-limit)");
}

// The launcher of --gpus N: N ranks of this program (the same arguments), one per GPU.
int launch_ranks(const train::options& opts, std::vector<std::string> command)
{
    const int visible = gpu::device_count();
    if (opts.gpus > visible) {
        const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
        throw usage_error("--gpus " + std::to_string(opts.gpus) + " asks for more GPUs than the " +
                          std::to_string(visible) + " this process sees" +
                          (mask != nullptr ? std::string(" (CUDA_VISIBLE_DEVICES=") + mask + ")"
                                           : std::string()) +
                          ": one process per GPU needs a GPU per rank");
    }
    // Executes /proc/self/exe itself: this very program even when its file was replaced or
    // deleted meanwhile (its resolved path would then end in " (deleted)"); argv[0] stays.
    return train::launch(command, opts.gpus, "/proc/self/exe");
}

void print_training(const train::options& opts, const std::optional<train::rank_info>& rank)
{
    std::string batch = std::to_string(opts.batch_size);
    if (rank) {
        batch += " per GPU on " + std::to_string(rank->size) +
                 (rank->size == 1 ? " GPU (" : " GPUs (") +
                 std::to_string(opts.batch_size * rank->size) + " a step)";
    }
    std::printf("Training: %s, batch %s, lr %g, %s, profile %s, seed %llu\n",
                opts.precision.c_str(), batch.c_str(), opts.lr,
                opts.graph ? "captured step (--graph)" : "eager", opts.profile.c_str(),
                static_cast<unsigned long long>(opts.seed));
}

// Checks what can be checked without a GPU, then trains here (one GPU, or as a rank of
// --gpus N), or launches the ranks of --gpus N. `command` is this process's argv.
int run(const train::options& opts, const std::optional<train::rank_info>& rank,
        const std::vector<std::string>& command)
{
    if (opts.save) {
        check_output("--save", *opts.save);
    }
    if (opts.json && *opts.json != "-") {
        check_output("--json", *opts.json);
    }
    if (opts.memory_trace) {
        check_output("--memory-trace", *opts.memory_trace);
    }
    const train::fashion_mnist data =
        train::load_fashion_mnist(opts.data, opts.train_limit, opts.test_limit);
    train::check_checkpoint(opts);
    check_step_fits(opts, data);
    nlohmann::json report = base_report(opts, data);
    if (text_out(opts) && !rank) { // the launcher said it already
        std::printf("Fashion-MNIST from %s: %zu training images, %zu test images\n",
                    opts.data.c_str(), data.train.images.count, data.test.images.count);
    }
    if (!gpu::is_available()) {
        const std::string reason = gpu::unavailable_reason();
        report["reason"] = reason;
        if (text_out(opts)) {
            std::printf("No usable GPU, so no training: %s\n", reason.c_str());
        }
        write_json(opts, report);
        return 0;
    }
    if (CUDAGAP_TRAIN_NCCL && opts.gpus > 0 && !rank) {
        std::fflush(stdout);
        return launch_ranks(opts, command);
    }
    report["gpu_available"] = true;
    if (text_out(opts)) {
        print_training(opts, rank);
    }
#if CUDAGAP_TRAIN_NCCL
    if (rank) {
        const std::unique_ptr<train::replica_group> group = train::join_replicas(*rank);
        return train_on_gpu(opts, data, report, group.get());
    }
#endif
    return train_on_gpu(opts, data, report, nullptr);
}

// What only the launcher's variables and this build decide: a rank must agree with its
// command line, and --gpus N > 1 needs NCCL.
std::optional<train::rank_info> check_gpus(const train::options& opts)
{
    std::optional<train::rank_info> rank;
    try {
        rank = train::rank_from_environment();
    } catch (const std::invalid_argument& e) {
        throw usage_error(e.what());
    }
    if (!CUDAGAP_TRAIN_NCCL && opts.gpus > 1) {
        throw usage_error("--gpus " + std::to_string(opts.gpus) +
                          " needs NCCL, and this cudagap-train was built against a cudagap without "
                          "its nccl component. "
                          "Install NCCL (NVIDIA's wheel: pip install nvidia-nccl-cu13; or "
                          "libnccl-dev), configure cudagap again "
                          "(it prints 'cudagap: NCCL <version> at <path>' when it finds NCCL; "
                          "NCCL_ROOT tells it where), then "
                          "rebuild cudagap and this program: see docs/scaling_out.md");
    }
    if (rank && (!CUDAGAP_TRAIN_NCCL || rank->size != opts.gpus)) {
        throw usage_error(std::string(train::rank_variable) + " and " + train::size_variable + "=" +
                          std::to_string(rank->size) +
                          " are set, so this process is a rank of cudagap-train "
                          "--gpus N, but its command line says --gpus " +
                          std::to_string(opts.gpus) +
                          (CUDAGAP_TRAIN_NCCL ? "" : " and it was built without NCCL") +
                          " (its launcher sets both; unset them to run it alone)");
    }
    return rank;
}

} // namespace

int main(int argc, char* argv[])
{
    train::options opts;
    try {
        opts = train::parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-train: %s\n\n%s", e.what(), train::usage);
        return exit_usage;
    }
    if (opts.help) {
        std::fputs(train::usage, stdout);
        return 0;
    }
    if (opts.version) {
        std::printf("cudagap-train %s\n", gpu::library_version().to_string().c_str());
        return 0;
    }
    std::optional<train::rank_info> rank;
    try {
        rank = check_gpus(opts);
        if (rank) {
            std::signal(SIGINT, on_rank_sigint);
            program +=
                " (rank " + std::to_string(rank->rank) + " of " + std::to_string(rank->size) + ")";
        }
        if (rank &&
            rank->rank != 0) { // only rank 0 reports and saves; the others' stdout is /dev/null
            opts.quiet = true;
            opts.json.reset();
            opts.save.reset();
            opts.memory_trace.reset();
        }
        return run(opts, rank, std::vector<std::string>(argv, argv + argc));
    } catch (const usage_error& e) {
        std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
        return exit_usage;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s: %s\n", program.c_str(), failure_message(e, opts).c_str());
    }
    return exit_failure;
}
