// cudagap-train: the article's research_training.py made real. Fashion-MNIST's reference
// convnet trained with the article's setup (seeds, exhaustive algorithm search, TF32, FP16 with
// the grad scaler or BF16 or FP32, AdamW, cross-entropy), the whole data set on the GPU and
// shuffled there, eager or with the whole step captured in one CUDA graph (--graph). Per epoch:
// the mean loss, the test accuracy, images/s, the loss scale and the skipped steps; --json;
// --save/--resume in safetensors; a failure part way still writes the --json report, with the
// error. See docs/research_training.md.
#include "dataset.hpp"
#include "options.hpp"
#include "trainer.hpp"

#include <gpu/blas/error.hpp>
#include <gpu/device.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/error.hpp>
#include <gpu/json.hpp>
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
#include <stdexcept>
#include <string>

namespace {

constexpr int exit_failure = 1;
constexpr int exit_usage = 2;
constexpr int exit_interrupted = 130;

// The first Ctrl-C asks the loop to stop after its step. The handler then gives SIGINT back to
// its default, so a second one ends the program at once: a long cuDNN search or a save never
// looks at the flag. (signal() is async-signal-safe for the signal being handled.)
extern "C" void on_sigint(int)
{
    train::stop_requested = 1;
    std::signal(SIGINT, SIG_DFL);
}

nlohmann::json base_report(const train::options& opts, const train::fashion_mnist& data)
{
    return {{"program", "cudagap-train"}, {"version", gpu::library_version().to_string()},
            {"device", nullptr}, {"gpu_available", false}, {"precision", opts.precision}, {"graph", opts.graph},
            {"seed", opts.seed}, {"batch_size", opts.batch_size}, {"lr", opts.lr},
            {"train_images", data.train.images.count}, {"test_images", data.test.images.count},
            {"epochs", nlohmann::json::array()}, {"final_test_accuracy", nullptr}, {"checkpoint", nullptr},
            {"interrupted", false}, {"error", nullptr}};
}

nlohmann::json to_json(const train::epoch_result& r)
{
    // NaN: the grad scaler skipped every step of the epoch, so there is no mean to give.
    const nlohmann::json loss = std::isnan(r.mean_loss) ? nlohmann::json(nullptr) : nlohmann::json(r.mean_loss);
    return {{"epoch", r.epoch}, {"mean_loss", loss}, {"test_accuracy", r.test_accuracy},
            {"images_per_second", r.images_per_second}, {"seconds", r.seconds}, {"loss_scale", r.loss_scale},
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
bool text_out(const train::options& opts) { return !(opts.json && *opts.json == "-"); }

void print_epoch(const train::epoch_result& r)
{
    char loss[32] = "n/a";
    if (!std::isnan(r.mean_loss)) {
        std::snprintf(loss, sizeof loss, "%.4f", r.mean_loss);
    }
    std::printf("epoch %3d  loss %s  test accuracy %6.2f%%  %10.0f images/s  %6.2f s  loss scale %g  "
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
    std::fprintf(stderr, "\repoch %3d [%s%s] %lld/%lld", epoch, std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), '.').c_str(), static_cast<long long>(step),
                 static_cast<long long>(steps));
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
        return library_oom ? "out of GPU memory with --batch-size " + std::to_string(opts.batch_size) + ".\n" +
                                 reduce + e.what()
                           : std::string(e.what());
    }
    constexpr double mib = 1024.0 * 1024.0;
    char numbers[256];
    std::snprintf(numbers, sizeof numbers, "%.1f MiB asked for, %.1f MiB free of %.1f MiB",
                  static_cast<double>(oom->requested_bytes()) / mib, static_cast<double>(oom->free_bytes()) / mib,
                  static_cast<double>(oom->total_bytes()) / mib);
    return "out of GPU memory with --batch-size " + std::to_string(opts.batch_size) + ": " + numbers +
           ".\n" + reduce + oom->what();
}

// A run that failed part way: the message, the last complete checkpoint, and the --json report
// with the error and the epochs done.
int report_failure(const std::exception& e, const train::options& opts, nlohmann::json& report)
{
    const std::string message = failure_message(e, opts);
    std::fprintf(stderr, "\ncudagap-train: %s\n", message.c_str());
    if (!report["checkpoint"].is_null()) {
        std::fprintf(stderr, "cudagap-train: the last complete checkpoint, %s, is intact\n",
                     report["checkpoint"].get<std::string>().c_str());
    }
    report["error"] = message;
    try {
        write_json(opts, report);
    } catch (const std::exception& json_error) {
        std::fprintf(stderr, "cudagap-train: %s\n", json_error.what());
    }
    return exit_failure;
}

int train_on_gpu(const train::options& opts, const train::fashion_mnist& data, nlohmann::json& report)
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
    std::signal(SIGINT, on_sigint);
    train::run_report run;
    try {
        report["device"] = gpu::device::current().properties().name;
        run = train::run_training(opts, data, on);
    } catch (const std::exception& e) {
        return report_failure(e, opts, report);
    }
    report["interrupted"] = run.interrupted;
    write_json(opts, report);
    if (run.interrupted) {
        std::fprintf(stderr, "\ncudagap-train: interrupted (Ctrl-C) after %zu complete epoch(s); %s\n",
                     run.epochs.size(),
                     run.checkpoint ? ("the last complete checkpoint is " + *run.checkpoint + ", intact").c_str()
                                    : "no checkpoint was written");
        return exit_interrupted;
    }
    return 0;
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
        throw std::runtime_error(where + "cannot write into " + folder.string() + ": " + std::strerror(errno));
    }
}

int run(const train::options& opts)
{
    if (opts.save) {
        check_output("--save", *opts.save);
    }
    if (opts.json && *opts.json != "-") {
        check_output("--json", *opts.json);
    }
    const train::fashion_mnist data = train::load_fashion_mnist(opts.data, opts.train_limit, opts.test_limit);
    train::check_checkpoint(opts);
    if (static_cast<std::uint64_t>(opts.batch_size) > data.train.images.count) {
        throw train::data_error("--batch-size " + std::to_string(opts.batch_size) + " is more than the " +
                                std::to_string(data.train.images.count) +
                                " training images: no full batch to train on (lower --batch-size or raise "
                                "--train-limit)");
    }
    nlohmann::json report = base_report(opts, data);
    if (text_out(opts)) {
        std::printf("Fashion-MNIST from %s: %zu training images, %zu test images\n", opts.data.c_str(),
                    data.train.images.count, data.test.images.count);
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
    report["gpu_available"] = true;
    if (text_out(opts)) {
        std::printf("Training: %s, batch %lld, lr %g, %s, profile %s, seed %llu\n", opts.precision.c_str(),
                    static_cast<long long>(opts.batch_size), opts.lr, opts.graph ? "captured step (--graph)" : "eager",
                    opts.profile.c_str(), static_cast<unsigned long long>(opts.seed));
    }
    return train_on_gpu(opts, data, report);
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
    try {
        return run(opts);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-train: %s\n", failure_message(e, opts).c_str());
    }
    return exit_failure;
}
