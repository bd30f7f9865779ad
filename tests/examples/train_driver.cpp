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
//   cudagap_train_driver force-quit PROGRAM ARGS...
//     Runs PROGRAM ARGS --epochs 100000 --quiet, sends it SIGINT once it has printed two epochs,
//     waits until its handler has given SIGINT back to the default (/proc/PID/status, SigCgt),
//     sends a second SIGINT and checks that it ended the program at once (killed by SIGINT),
//     as a second Ctrl-C must end a long cuDNN search. Without a GPU: exit 0, as above.
//
// Exit status: 0 checks passed (interrupt, force-quit) or the program's own status
// (hold-gpu-memory); 1 a check failed; 2 usage.
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
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
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
            throw std::runtime_error("waitpid(" + std::to_string(pid) + ") failed: " + std::strerror(error));
        }
    }
    child_pid = 0;
    return status;
}

// A raw wait status as a shell reports it: the exit status, or 128 + the signal that ended it.
int shell_status(int status) { return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status); }

int wait_for(pid_t pid) { return shell_status(wait_status(pid)); }

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
        std::fprintf(stderr, "cudagap_train_driver: holding GPU memory; %zu MiB of %zu MiB free\n", free >> 20,
                     total >> 20);
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
        const bool restored = sigint_back_to_default(pid, std::chrono::steady_clock::now() + std::chrono::seconds(10));
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
        require(status == 0 && report.at("gpu_available") == false && report.at("interrupted") == false,
                "without a GPU the program must exit 0 and say so; it exited " + std::to_string(status));
        std::printf("cudagap_train_driver: no GPU: the program said so and exited 0\n");
        return 0;
    }
    require(status == 130, "expected exit status 130 after Ctrl-C, got " + std::to_string(status));
    require(report.at("interrupted") == true && report.at("error").is_null(), "the report does not say interrupted");
    require(report.at("epochs").size() >= 2, "the report holds fewer than the 2 epochs seen");
    require(report.at("checkpoint") == checkpoint.string(), "the report names no checkpoint");
    std::vector<std::string> names;
    for (const auto& entry : fs::directory_iterator(work)) {
        names.push_back(entry.path().filename().string());
    }
    std::sort(names.begin(), names.end());
    require(names == std::vector<std::string>{"ckpt.optim.safetensors", "ckpt.safetensors", "report.json"},
            "the folder holds other files than the checkpoint's two and the report (a temporary file?)");
    std::vector<std::string> resume = command;
    resume.insert(resume.end(), {"--epochs", "1", "--quiet", "--resume", checkpoint.string()});
    int unused = -1;
    require(wait_for(spawn(resume, false, unused)) == 0, "--resume on the interrupted run's checkpoint failed");
    std::printf("cudagap_train_driver: interrupted after %zu epochs; the checkpoint loads and trains\n",
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
                "without a GPU the program must exit 0; it ended with " + std::to_string(shell_status(status)));
        std::printf("cudagap_train_driver: no GPU: the program said so and exited 0\n");
        return 0;
    }
    require(WIFSIGNALED(status) && WTERMSIG(status) == SIGINT,
            WIFEXITED(status) ? "the second SIGINT did not end the program: it exited " +
                                    std::to_string(WEXITSTATUS(status)) + " on its own (its handler kept SIGINT)"
                              : "the program ended by signal " + std::to_string(WTERMSIG(status)) + ", not SIGINT");
    std::printf("cudagap_train_driver: the second SIGINT ended the program at once\n");
    return 0;
}

} // namespace

int main(int argc, char* argv[])
{
    const std::string mode = argc > 1 ? argv[1] : "";
    const int first = mode == "force-quit" ? 2 : 3; // where PROGRAM is
    if (argc < first + 1 || (mode != "hold-gpu-memory" && mode != "interrupt" && mode != "force-quit")) {
        std::fprintf(stderr, "usage: cudagap_train_driver hold-gpu-memory LEAVE_MIB PROGRAM ARGS...\n"
                             "       cudagap_train_driver interrupt WORKDIR PROGRAM ARGS...\n"
                             "       cudagap_train_driver force-quit PROGRAM ARGS...\n");
        return 2;
    }
    std::signal(SIGALRM, on_alarm);
    const std::vector<std::string> command(argv + first, argv + argc);
    try {
        if (mode == "hold-gpu-memory") {
            return hold_gpu_memory(std::stoul(argv[2]), command);
        }
        if (mode == "force-quit") {
            return force_quit(command);
        }
        return interrupt(argv[2], command);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap_train_driver: %s\n", e.what());
        return 1;
    }
}
