// Drives cudagap-train where a plain run cannot show the behaviour under test.
//
//   cudagap_train_driver hold-gpu-memory LEAVE_MIB PROGRAM ARGS...
//     Takes the GPU's free memory down to about LEAVE_MIB MiB (as another job on the GPU would),
//     runs PROGRAM ARGS with this process's stdout and stderr, and exits with its status. So a
//     batch that fits an H200 many times over can be one that does not fit. Without a GPU it
//     runs PROGRAM as it is.
//
//   cudagap_train_driver interrupt WORKDIR PROGRAM ARGS...
//     Runs PROGRAM ARGS --epochs 100000 --quiet --save WORKDIR/ckpt.safetensors --json
//     WORKDIR/report.json, sends it SIGINT (Ctrl-C) once it has printed two epochs, and checks:
//     exit status 130, the report says interrupted with the epochs done and the checkpoint, the
//     folder holds the checkpoint's two files and the report and nothing else (no temporary
//     file), and PROGRAM ARGS --resume on that checkpoint trains an epoch. Without a GPU the
//     program says so and exits 0 at once; then the report must say so.
//
//   cudagap_train_driver one-rank WORKDIR PROGRAM ARGS...
//     Runs PROGRAM ARGS and PROGRAM ARGS --gpus 1 (a launcher, one rank, a one-rank NCCL
//     communicator) and checks that every epoch's loss, accuracy, loss scale and skipped steps are
//     equal (run them under --profile testing, whose algorithms do not depend on timings), that
//     their --save checkpoints (both files) hold the same tensors byte for byte (the metadata aside), and
//     that the second report says gpus 1 and replicas_identical. Without a GPU both must exit 0
//     and say so.
//
//   cudagap_train_driver data-parallel WORKDIR BATCH PROGRAM ARGS...
//     Needs two GPUs (else exit 77, the reason printed: ctest reports it Skipped). Runs PROGRAM
//     ARGS --batch-size 2*BATCH on one GPU in BF16, then --gpus 2 --batch-size BATCH in BF16
//     eagerly and with --graph: both must end with identical replicas and stay close to the
//     one-GPU run (the same global batches; per epoch the loss within 2% and the accuracy
//     within 0.0625); then in FP16 with --graph, whose grad scaler must decide alike on both.
//
//   cudagap_train_driver launcher WORKDIR
//     The launcher of --gpus N (examples/research_training/launcher.cpp) with /bin/sh as its
//     ranks: the variables each rank gets, rank 1's stdout on /dev/null, the bootstrap folder
//     removed, a failing rank's status returned with the others stopped, Ctrl-C and SIGHUP passed
//     on, a rank killed by SIGINT or exiting 130 while another ignores SIGINT (stopped in
//     seconds), a failure after a 130 (returned), SIGCHLD inherited ignored, a program that cannot
//     run, and its argument checks. Host only.
//
//   cudagap_train_driver replica-difference
//     The comparison that ends a --gpus N run (data_parallel.cpp), on host data. Host only.
//
//   cudagap_train_driver force-quit PROGRAM ARGS...
//     Runs PROGRAM ARGS --epochs 100000 --quiet, sends it SIGINT once it has printed two epochs,
//     waits until its handler has given SIGINT back to the default (/proc/PID/status, SigCgt),
//     sends a second SIGINT and checks that it ended the program at once (killed by SIGINT),
//     as a second Ctrl-C must end a long cuDNN search. Without a GPU: exit 0, as above.
//
// Exit status: 0 checks passed (interrupt, force-quit, one-rank, data-parallel, launcher, replica-difference)
// or the program's own status (hold-gpu-memory); 1 a check failed; 2 usage; 77 skipped.
#include "launcher.hpp"
#if CUDAGAP_TRAIN_NCCL
#include "data_parallel.hpp"
#endif

#include <nlohmann/json.hpp>

#include <cuda_runtime_api.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

volatile sig_atomic_t child_pid = 0;

// The driver's own deadline: a program that ignores Ctrl-C is killed, and the check then fails
// on its status instead of hanging until ctest's timeout.
extern "C" void on_alarm(int)
{
    if (child_pid > 0) {
        ::kill(child_pid, SIGKILL);
    }
}

// Starts `command`; its stdout goes to the returned descriptor when `capture` (else -1: ours).
// The CUDA runtime runs threads in this process, so between fork() and execv() the child may
// only make async-signal-safe calls (another thread may have held the allocator's or stdio's
// lock at the fork): the arguments and the failure message are made before fork(), and the
// child only duplicates descriptors, executes, writes and exits.
pid_t spawn(const std::vector<std::string>& command, bool capture, int& out)
{
    std::vector<char*> argv;
    argv.reserve(command.size() + 1);
    for (const std::string& part : command) {
        argv.push_back(const_cast<char*>(part.c_str()));
    }
    argv.push_back(nullptr);
    const std::string exec_failed = "cudagap_train_driver: cannot run " + command.at(0) + "\n";
    int fds[2] = {-1, -1};
    if (capture && ::pipe(fds) != 0) {
        throw std::runtime_error(std::string("pipe failed: ") + std::strerror(errno));
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        const int error = errno;
        if (capture) {
            ::close(fds[0]);
            ::close(fds[1]);
        }
        throw std::runtime_error(std::string("fork failed: ") + std::strerror(error));
    }
    if (pid == 0) {
        if (capture) {
            ::dup2(fds[1], STDOUT_FILENO);
            ::close(fds[0]);
            ::close(fds[1]);
        }
        ::execv(argv[0], argv.data());
        static_cast<void>(::write(STDERR_FILENO, exec_failed.data(), exec_failed.size()));
        ::_exit(127);
    }
    if (capture) {
        ::close(fds[1]);
    }
    out = fds[0];
    child_pid = pid;
    return pid;
}

// Waits for `pid` to end; its raw wait status. Retries only an interrupted wait (EINTR): any
// other failure (ECHILD: not our child) would never go away.
int wait_status(pid_t pid)
{
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            const int error = errno;
            child_pid = 0;
            throw std::runtime_error("waitpid(" + std::to_string(pid) +
                                     ") failed: " + std::strerror(error));
        }
    }
    child_pid = 0;
    return status;
}

// A raw wait status as a shell reports it: the exit status, or 128 + the signal that ended it.
int shell_status(int status)
{
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int wait_for(pid_t pid)
{
    return shell_status(wait_status(pid));
}

int hold_gpu_memory(std::size_t leave_mib, const std::vector<std::string>& command)
{
    std::vector<void*> held;
    std::size_t free = 0;
    std::size_t total = 0;
    if (cudaMemGetInfo(&free, &total) == cudaSuccess) {
        const std::size_t leave = leave_mib << 20;
        constexpr std::size_t chunk = std::size_t{1} << 30;
        while (free > leave + (std::size_t{64} << 20)) {
            void* memory = nullptr;
            if (cudaMalloc(&memory, std::min(chunk, free - leave)) != cudaSuccess) {
                static_cast<void>(cudaGetLastError());
                break;
            }
            held.push_back(memory);
            static_cast<void>(cudaMemGetInfo(&free, &total));
        }
        std::fprintf(stderr, "cudagap_train_driver: holding GPU memory; %zu MiB of %zu MiB free\n",
                     free >> 20, total >> 20);
    } else {
        static_cast<void>(cudaGetLastError());
        std::fprintf(stderr, "cudagap_train_driver: no usable GPU: running the program as it is\n");
    }
    int unused = -1;
    const int status = wait_for(spawn(command, false, unused));
    for (void* memory : held) {
        static_cast<void>(cudaFree(memory));
    }
    return status;
}

void require(bool condition, const std::string& what)
{
    if (!condition) {
        throw std::runtime_error(what);
    }
}

// Whether `pid` has given SIGINT back to the default action (its handler no longer catches it,
// by the SigCgt mask of /proc/PID/status), polled until `deadline`; false at once when it has
// ended (a zombie, state Z) still catching it.
bool sigint_back_to_default(pid_t pid, std::chrono::steady_clock::time_point deadline)
{
    const std::string path = "/proc/" + std::to_string(pid) + "/status";
    do {
        std::ifstream status(path);
        std::string line;
        while (std::getline(status, line)) {
            if (line.rfind("State:", 0) == 0 && line.find('Z') != std::string::npos) {
                return false;
            }
            if (line.rfind("SigCgt:", 0) == 0 &&
                (std::stoull(line.substr(7), nullptr, 16) & (1ULL << (SIGINT - 1))) == 0) {
                return true;
            }
        }
        ::usleep(100);
    } while (std::chrono::steady_clock::now() < deadline);
    return false;
}

// Sends SIGINT (Ctrl-C) once; with `twice`, a second one as soon as the program's handler has
// run (so that the two are not merged into one pending signal).
void send_ctrl_c(pid_t pid, bool twice)
{
    std::printf("cudagap_train_driver: sending SIGINT\n");
    std::fflush(stdout);
    ::kill(pid, SIGINT);
    ::alarm(120);
    if (twice) {
        const bool restored = sigint_back_to_default(pid, std::chrono::steady_clock::now() +
                                                              std::chrono::seconds(10));
        std::printf("cudagap_train_driver: %s; sending SIGINT again\n",
                    restored ? "the handler gave SIGINT back to the default"
                             : "the program still catches SIGINT (or ended catching it)");
        ::kill(pid, SIGINT);
    }
}

// Runs the training, echoes its stdout, sends SIGINT after the second epoch line (twice with
// `twice`); returns the raw wait status and whether an epoch was seen (false: the program had
// no GPU to train on).
int run_and_interrupt(const std::vector<std::string>& command, bool& trained, bool twice = false)
{
    int out = -1;
    const pid_t pid = spawn(command, true, out);
    std::FILE* lines = ::fdopen(out, "r");
    require(lines != nullptr, "fdopen failed");
    char line[4096];
    int epochs = 0;
    while (std::fgets(line, sizeof line, lines) != nullptr) {
        std::fputs(line, stdout);
        if (std::string(line).rfind("epoch ", 0) == 0 && ++epochs == 2) {
            send_ctrl_c(pid, twice);
        }
    }
    std::fclose(lines);
    trained = epochs > 0;
    const int status = wait_status(pid);
    ::alarm(0); // the deadline was for this run only: a later one (the --resume) has its own pace
    return status;
}

nlohmann::json read_report(const fs::path& path)
{
    std::ifstream file(path);
    require(file.good(), "no report at " + path.string());
    return nlohmann::json::parse(file);
}

int interrupt(const fs::path& work, const std::vector<std::string>& command)
{
    fs::remove_all(work);
    fs::create_directories(work);
    const fs::path checkpoint = work / "ckpt.safetensors";
    const fs::path report_path = work / "report.json";
    std::vector<std::string> run = command;
    run.insert(run.end(), {"--epochs", "100000", "--quiet", "--save", checkpoint.string(), "--json",
                           report_path.string()});
    bool trained = false;
    const int status = shell_status(run_and_interrupt(run, trained));
    const nlohmann::json report = read_report(report_path);
    if (!trained) {
        require(status == 0 && report.at("gpu_available") == false &&
                    report.at("interrupted") == false,
                "without a GPU the program must exit 0 and say so; it exited " +
                    std::to_string(status));
        std::printf("cudagap_train_driver: no GPU: the program said so and exited 0\n");
        return 0;
    }
    require(status == 130, "expected exit status 130 after Ctrl-C, got " + std::to_string(status));
    require(report.at("interrupted") == true && report.at("error").is_null(),
            "the report does not say interrupted");
    require(report.at("epochs").size() >= 2, "the report holds fewer than the 2 epochs seen");
    require(report.at("checkpoint") == checkpoint.string(), "the report names no checkpoint");
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(work)) {
        names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    require(names == std::vector<std::string>{"ckpt.optim.safetensors", "ckpt.safetensors",
                                              "report.json"},
            "the folder holds other files than the checkpoint's two and the report (a temporary "
            "file?)");
    std::vector<std::string> resume = command;
    resume.insert(resume.end(), {"--epochs", "1", "--quiet", "--resume", checkpoint.string()});
    int unused = -1;
    require(wait_for(spawn(resume, false, unused)) == 0,
            "--resume on the interrupted run's checkpoint failed");
    std::printf(
        "cudagap_train_driver: interrupted after %zu epochs; the checkpoint loads and trains\n",
        report.at("epochs").size());
    return 0;
}

int force_quit(const std::vector<std::string>& command)
{
    std::vector<std::string> run = command;
    run.insert(run.end(), {"--epochs", "100000", "--quiet"});
    bool trained = false;
    const int status = run_and_interrupt(run, trained, true);
    if (!trained) {
        require(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                "without a GPU the program must exit 0; it ended with " +
                    std::to_string(shell_status(status)));
        std::printf("cudagap_train_driver: no GPU: the program said so and exited 0\n");
        return 0;
    }
    require(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT,
            WIFEXITED(status)
                ? "the second SIGINT did not end the program: it exited " +
                      std::to_string(WEXITSTATUS(status)) + " on its own (its handler kept SIGINT)"
                : "the program ended by signal " + std::to_string(WTERMSIG(status)) +
                      ", not SIGINT");
    std::printf("cudagap_train_driver: the second SIGINT ended the program at once\n");
    return 0;
}

// Runs `command` plus `extra` with this process's stdout; returns its status.
int run_quietly(std::vector<std::string> command, const std::vector<std::string>& extra)
{
    command.insert(command.end(), extra.begin(), extra.end());
    std::string line;
    for (const std::string& part : command) {
        line += part + " ";
    }
    std::printf("cudagap_train_driver: running %s\n", line.c_str());
    std::fflush(stdout);
    int unused = -1;
    return wait_for(spawn(command, false, unused));
}

std::string read_file_bytes(const fs::path& path)
{
    std::ifstream file(path, std::ios::binary);
    require(file.good(), "missing: " + path.string());
    return std::string(std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>());
}

// Whether two reports' epochs hold the same numbers (exactly).
void require_same_epochs(const nlohmann::json& a, const nlohmann::json& b)
{
    require(!a.at("epochs").empty() && a.at("epochs").size() == b.at("epochs").size(),
            "the epochs differ in number");
    for (std::size_t i = 0; i < a.at("epochs").size(); ++i) {
        for (const char* member : {"mean_loss", "test_accuracy", "loss_scale", "skipped_steps"}) {
            require(a["epochs"][i].at(member) == b["epochs"][i].at(member),
                    "epoch " + std::to_string(i + 1) + ": " + member + " " +
                        a["epochs"][i].at(member).dump() + " in the plain run, " +
                        b["epochs"][i].at(member).dump() + " with --gpus 1");
        }
    }
}

// A safetensors file's tensors: its header without "__metadata__" (names, types, shapes and
// offsets), and its data bytes.
std::pair<nlohmann::json, std::string> tensors_of(const fs::path& path)
{
    const std::string bytes = read_file_bytes(path);
    require(bytes.size() >= 8, path.string() + " is too short for a safetensors file");
    std::uint64_t header = 0;
    for (int i = 7; i >= 0; --i) {
        header = (header << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(i)]);
    }
    require(header <= bytes.size() - 8, path.string() + ": its header runs past the file");
    nlohmann::json tensors = nlohmann::json::parse(bytes.substr(8, header));
    tensors.erase("__metadata__");
    return {tensors, bytes.substr(8 + header)};
}

// The two runs' checkpoint files (the model's, or the optimizer's) hold the same tensors, byte for byte (their metadata may differ).
void require_same_checkpoints(const fs::path& a, const fs::path& b)
{
    const auto [a_header, a_data] = tensors_of(a);
    const auto [b_header, b_data] = tensors_of(b);
    require(a_header == b_header,
            "the checkpoints hold different tensors: " + a.string() + " and " + b.string());
    require(a_data == b_data,
            "the checkpoints' tensors differ in their bytes: " + a.string() + " and " + b.string());
}

int one_rank(const fs::path& work, const std::vector<std::string>& command)
{
    fs::remove_all(work);
    fs::create_directories(work);
    require(run_quietly(command, {"--quiet", "--json", (work / "plain.json").string(), "--save",
                                  (work / "plain.safetensors").string()}) == 0,
            "the plain run failed");
    require(
        run_quietly(command, {"--gpus", "1", "--quiet", "--json", (work / "one-rank.json").string(),
                              "--save", (work / "one-rank.safetensors").string()}) == 0,
        "the --gpus 1 run failed");
    const nlohmann::json plain = read_report(work / "plain.json");
    const nlohmann::json ranked = read_report(work / "one-rank.json");
    require(plain.at("gpus") == 1 && ranked.at("gpus") == 1, "a report does not say gpus 1");
    require(plain.at("gpu_available") == ranked.at("gpu_available"),
            "one run found a GPU, the other did not");
    if (plain.at("gpu_available") == false) {
        std::printf("cudagap_train_driver: no GPU: both runs checked the data and said so\n");
        return 0;
    }
    require(plain.at("replicas_identical").is_null() && ranked.at("replicas_identical") == true,
            "replicas_identical: null in the plain run, true with --gpus 1 expected");
    require_same_epochs(plain, ranked);
    require_same_checkpoints(work / "plain.safetensors", work / "one-rank.safetensors");
    require_same_checkpoints(work / "plain.optim.safetensors", work / "one-rank.optim.safetensors");
    std::printf(
        "cudagap_train_driver: --gpus 1 trained bit for bit as the plain run (%zu epochs)\n",
        plain.at("epochs").size());
    return 0;
}

// A --gpus 2 report against the one-GPU report of the same global batches.
void require_close(const nlohmann::json& one, const nlohmann::json& two)
{
    require(one.at("epochs").size() == two.at("epochs").size(),
            "the runs did not train the same epochs");
    for (std::size_t i = 0; i < one.at("epochs").size(); ++i) {
        const auto& a = one["epochs"][i];
        const auto& b = two["epochs"][i];
        const double accuracy_a = a.at("test_accuracy"), accuracy_b = b.at("test_accuracy");
        std::printf("epoch %zu: loss %s vs %s, accuracy %.4f vs %.4f, %.0f vs %.0f images/s\n",
                    i + 1, a.at("mean_loss").dump().c_str(), b.at("mean_loss").dump().c_str(),
                    accuracy_a, accuracy_b, a.at("images_per_second").get<double>(),
                    b.at("images_per_second").get<double>());
        require(std::abs(accuracy_a - accuracy_b) <= 0.0625 &&
                    b.at("images_per_second").get<double>() > 0,
                "epoch " + std::to_string(i + 1) + ": the accuracies differ by more than 0.0625");
        if (a.at("mean_loss").is_number() && b.at("mean_loss").is_number()) {
            const double loss_a = a["mean_loss"], loss_b = b["mean_loss"];
            require(std::abs(loss_a - loss_b) <= 0.02 * std::abs(loss_a),
                    "epoch " + std::to_string(i + 1) + ": the losses differ by more than 2%");
        }
    }
}

// Two ranks, `extra` added: exit 0, gpus 2, identical replicas; returns the report.
nlohmann::json two_ranks(const fs::path& work, const std::string& name, std::int64_t batch,
                         const std::vector<std::string>& command, std::vector<std::string> extra)
{
    const fs::path report = work / (name + ".json");
    extra.insert(extra.end(), {"--gpus", "2", "--batch-size", std::to_string(batch), "--quiet",
                               "--json", report.string()});
    require(run_quietly(command, extra) == 0, "the --gpus 2 run (" + name + ") failed");
    const nlohmann::json two = read_report(report);
    require(two.at("gpus") == 2 && two.at("batch_size") == batch &&
                two.at("replicas_identical") == true,
            name + ": the report does not say gpus 2, its batch and replicas_identical");
    return two;
}

int data_parallel(const fs::path& work, std::int64_t batch, const std::vector<std::string>& command)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        count = 0;
    }
    if (count < 2) {
        std::printf("cudagap_train_driver: skipped: --gpus 2 needs two GPUs; this host has %d\n",
                    count);
        return 77;
    }
    fs::remove_all(work);
    fs::create_directories(work);
    // BF16 for the comparison: under FP16 each rank's loss is a mean over its own batch, so its
    // scaled gradients are twice one GPU's and the grad scaler may skip other steps.
    require(run_quietly(command, {"--precision", "bf16", "--batch-size", std::to_string(2 * batch),
                                  "--quiet", "--json", (work / "one.json").string()}) == 0,
            "the one-GPU run failed");
    const nlohmann::json one = read_report(work / "one.json");
    require_close(one, two_ranks(work, "eager", batch, command, {"--precision", "bf16"}));
    require_close(one,
                  two_ranks(work, "graph", batch, command, {"--precision", "bf16", "--graph"}));
    // FP16: every rank must take the grad scaler's decisions alike, or the replicas part.
    static_cast<void>(
        two_ranks(work, "graph-fp16", batch, command, {"--precision", "fp16", "--graph"}));
    std::printf("cudagap_train_driver: --gpus 2 kept identical replicas, close to one GPU\n");
    return 0;
}

// Runs train::launch with /bin/sh as each rank's program; returns its status and the seconds taken.
int launch_shell(const std::string& script, int ranks, double& seconds)
{
    const auto start = std::chrono::steady_clock::now();
    const int status = train::launch({"/bin/sh", "-c", script}, ranks);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return status;
}

// Every rank gets its variables; only rank 0 writes to the launcher's stdout; the folder goes.
void launcher_environment(const fs::path& work)
{
    double seconds = 0;
    const std::string script =
        "echo \"$CUDAGAP_TRAIN_RANK $CUDAGAP_TRAIN_WORLD_SIZE $CUDAGAP_TRAIN_GPU "
        "$CUDAGAP_TRAIN_BOOTSTRAP $(readlink /proc/$$/fd/1)\" > '" +
        work.string() + "'/rank-$CUDAGAP_TRAIN_RANK";
    require(launch_shell(script, 3, seconds) == 0,
            "three ranks that exit 0: the launcher must return 0");
    for (int rank = 0; rank < 3; ++rank) {
        std::istringstream fields(read_file_bytes(work / ("rank-" + std::to_string(rank))));
        std::string got_rank, size, gpu, bootstrap, out;
        fields >> got_rank >> size >> gpu >> bootstrap >> out;
        require(got_rank == std::to_string(rank) && size == "3" && gpu == std::to_string(rank),
                "rank " + std::to_string(rank) +
                    " was told: " + read_file_bytes(work / ("rank-" + std::to_string(rank))));
        require(fs::path(bootstrap).filename() == "nccl-id" &&
                    !fs::exists(fs::path(bootstrap).parent_path()),
                "the bootstrap file must lie in a folder of this launch, removed at the end: " +
                    bootstrap);
        require((out == "/dev/null") == (rank != 0),
                "rank " + std::to_string(rank) + "'s stdout is " + out);
    }
}

// A failing rank: its status comes back at once and the others are stopped.
void launcher_failures(const fs::path& work)
{
    double seconds = 0;
    const std::string sleeper = "exec sleep 60";
    require(launch_shell("[ $CUDAGAP_TRAIN_RANK = 1 ] && exit 3; " + sleeper, 2, seconds) == 3 &&
                seconds < 8,
            "rank 1 exits 3: the launcher must stop rank 0 and return 3 at once (" +
                std::to_string(seconds) + " s)");
    require(launch_shell("[ $CUDAGAP_TRAIN_RANK = 0 ] && kill -KILL $$; " + sleeper, 2, seconds) ==
                    128 + SIGKILL &&
                seconds < 8,
            "rank 0 killed by SIGKILL: the launcher must return 137 and stop rank 1");
    require(train::launch({(work / "no-such-program").string()}, 2) == 127,
            "a program that cannot run: 127");
    for (const int ranks : {0, -1}) {
        bool refused = false;
        try {
            static_cast<void>(train::launch({"/bin/true"}, ranks));
        } catch (const std::invalid_argument&) {
            refused = true;
        }
        require(refused, "train::launch must refuse " + std::to_string(ranks) + " ranks");
    }
}

// `signal` (SIGINT or SIGHUP) to the launcher reaches every rank; the status is theirs.
void launcher_forwards(const fs::path& work, int signal, const std::string& name, int expected)
{
    const std::string mark = work.string() + "/" + name;
    const std::string script = "trap 'touch \"" + mark + "-got-$CUDAGAP_TRAIN_RANK\"; exit " +
                               std::to_string(expected) + "' " + name + "; touch \"" + mark +
                               "-ready-$CUDAGAP_TRAIN_RANK\"; "
                               "while :; do sleep 0.05; done";
    const pid_t launcher = ::fork();
    require(launcher >= 0, "fork failed");
    if (launcher == 0) {
        int status = 1;
        try {
            status = train::launch({"/bin/sh", "-c", script}, 2);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "cudagap_train_driver: %s\n", e.what());
        }
        ::_exit(status);
    }
    child_pid = launcher;
    ::alarm(60);
    while (!fs::exists(mark + "-ready-0") || !fs::exists(mark + "-ready-1")) {
        ::usleep(20000);
    }
    ::kill(launcher, signal);
    const int status = wait_for(launcher);
    ::alarm(0);
    require(status == expected, "after SIG" + name + " the launcher must return " +
                                    std::to_string(expected) + ", got " + std::to_string(status));
    require(fs::exists(mark + "-got-0") && fs::exists(mark + "-got-1"),
            "SIG" + name + " to the launcher did not reach every rank");
}

// Ranks that end on Ctrl-C, while the other rank ignores SIGINT (as a real rank does, waiting in
// a collective): a rank killed by SIGINT is a failure and a rank that exits 130 arms the
// deadline, so the other is stopped in seconds, not after its 60; a failure after a 130 wins.
void launcher_interrupted_ranks(const fs::path& work)
{
    double seconds = 0;
    const std::string stubborn = "trap '' INT; exec sleep 60";
    require(launch_shell("[ $CUDAGAP_TRAIN_RANK = 1 ] && kill -INT $$; " + stubborn, 2, seconds) ==
                    128 + SIGINT &&
                seconds < 8,
            "rank 1 killed by SIGINT: the launcher must stop rank 0 at once and return 130 (" +
                std::to_string(seconds) + " s)");
    require(launch_shell("[ $CUDAGAP_TRAIN_RANK = 1 ] && exit 130; " + stubborn, 2, seconds) ==
                    130 &&
                seconds < 8,
            "rank 1 exits 130: rank 0 must be stopped after the grace period and 130 returned (" +
                std::to_string(seconds) + " s)");
    const std::string ready = "'" + work.string() + "/late-failure-ready'";
    require(launch_shell(
                "if [ $CUDAGAP_TRAIN_RANK = 1 ]; then while [ ! -e " + ready +
                    " ]; do sleep 0.02; done; exit 130; fi; trap 'sleep 0.2; exit 1' INT; touch " +
                    ready + "; while :; do sleep 0.05; done",
                2, seconds) == 1,
            "rank 1 exits 130, then rank 0 fails with 1: the launcher must return 1, not hide it "
            "behind 130");
}

// Inherited with SIGCHLD ignored (the kernel would reap the ranks itself), the launcher still
// waits for its ranks, and gives the disposition back.
void launcher_sigchld_ignored()
{
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    struct sigaction old {};
    ::sigaction(SIGCHLD, &ignore, &old);
    double seconds = 0;
    const int ok = launch_shell("exit 0", 2, seconds);
    const int failed = launch_shell("exit $((CUDAGAP_TRAIN_RANK + 4))", 2, seconds);
    struct sigaction after {};
    ::sigaction(SIGCHLD, &old, &after);
    require(ok == 0 && (failed == 4 || failed == 5),
            "with SIGCHLD ignored the launcher must still see its ranks' statuses: got " +
                std::to_string(ok) + " for exit 0 and " + std::to_string(failed) + " for exit 4/5");
    require(after.sa_handler == SIG_IGN,
            "the launcher did not give SIGCHLD back its ignored disposition");
}

int launcher(const fs::path& work)
{
    fs::remove_all(work);
    fs::create_directories(work);
    launcher_environment(work);
    launcher_failures(work);
    launcher_forwards(work, SIGINT, "INT", 130);
    launcher_forwards(work, SIGHUP, "HUP", 128 + SIGHUP);
    launcher_interrupted_ranks(work);
    launcher_sigchld_ignored();
    std::printf("cudagap_train_driver: the launcher passed its checks\n");
    return 0;
}

#if CUDAGAP_TRAIN_NCCL
int replica_difference()
{
    const std::vector<gpu::nn::parameter_info> parameters{{"conv1.weight", {2, 2}, 0, 4, {}},
                                                          {"conv1.bias", {2}, 128, 2, {}}};
    std::vector<float> gathered(3 * 256, 0.5F);
    require(!train::replica_difference(gathered, 3, parameters),
            "identical replicas reported as different");
    gathered[2 * 256 + 129] = 0.75F; // conv1.bias[1] on rank 2
    gathered[256 + 200] = 1.0F;      // padding on rank 1: not a parameter
    const std::optional<std::string> bias = train::replica_difference(gathered, 3, parameters);
    require(bias &&
                bias->find("conv1.bias[1] is 0.5 (bits 0x3f000000) on rank 0 and 0.75") !=
                    std::string::npos &&
                bias->find("on rank 2") != std::string::npos,
            "a difference in conv1.bias on rank 2: " + bias.value_or("none"));
    gathered[256 + 3] = -0.5F; // conv1.weight[3] on rank 1: earlier in the model's order
    const std::optional<std::string> weight = train::replica_difference(gathered, 3, parameters);
    require(weight && weight->find("conv1.weight[3]") != std::string::npos &&
                weight->find("on rank 1") != std::string::npos,
            "the first differing parameter must be named: " + weight.value_or("none"));
    bool refused = false;
    try {
        static_cast<void>(
            train::replica_difference(std::span<const float>(gathered).first(500), 3, parameters));
    } catch (const std::invalid_argument&) {
        refused = true;
    }
    require(refused, "500 values are not 3 copies: must be refused");
    std::printf("cudagap_train_driver: replica_difference names the first differing parameter\n");
    return 0;
}
#endif

// Runs `mode` with its arguments; -1 when the arguments do not fit the mode.
int run_mode(const std::string& mode, int argc, char* argv[])
{
    const std::vector<std::string> rest(argv + std::min(argc, 3), argv + argc);
    if (mode == "hold-gpu-memory" && argc >= 4) {
        return hold_gpu_memory(std::stoul(argv[2]), rest);
    }
    if ((mode == "interrupt" || mode == "one-rank") && argc >= 4) {
        return mode == "interrupt" ? interrupt(argv[2], rest) : one_rank(argv[2], rest);
    }
    if (mode == "force-quit" && argc >= 3) {
        return force_quit(std::vector<std::string>(argv + 2, argv + argc));
    }
    if (mode == "data-parallel" && argc >= 5) {
        return data_parallel(argv[2], std::stoll(argv[3]),
                             std::vector<std::string>(argv + 4, argv + argc));
    }
    if (mode == "launcher" && argc == 3) {
        return launcher(argv[2]);
    }
    if (mode == "replica-difference" && argc == 2) {
#if CUDAGAP_TRAIN_NCCL
        return replica_difference();
#else
        std::printf("cudagap_train_driver: skipped: built without NCCL\n");
        return 77;
#endif
    }
    return -1;
}

} // namespace

int main(int argc, char* argv[])
{
    std::signal(SIGALRM, on_alarm);
    try {
        const int status = run_mode(argc > 1 ? argv[1] : "", argc, argv);
        if (status >= 0) {
            return status;
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap_train_driver: %s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "usage: cudagap_train_driver hold-gpu-memory LEAVE_MIB PROGRAM ARGS...\n"
                         "       cudagap_train_driver interrupt|one-rank WORKDIR PROGRAM ARGS...\n"
                         "       cudagap_train_driver force-quit PROGRAM ARGS...\n"
                         "       cudagap_train_driver data-parallel WORKDIR BATCH PROGRAM ARGS...\n"
                         "       cudagap_train_driver launcher WORKDIR\n"
                         "       cudagap_train_driver replica-difference\n");
    return 2;
}
