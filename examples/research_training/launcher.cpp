// cudagap-train --gpus N: the launcher. It forks one process per rank, each of which executes
// the program again with its rank in the environment, then polls them (every 20 ms; it has
// nothing else to do) so that a failure, a signal and the kill deadline are handled in one loop,
// outside any signal handler.
#include "launcher.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <thread>

extern char** environ; // NOLINT: POSIX declares it for the program to define

namespace train {

namespace {

constexpr int interrupted_status = 130; // a rank stopped by Ctrl-C (128 + SIGINT)
constexpr auto poll_interval = std::chrono::milliseconds(20);
// After a rank failed, the others get this long to end by themselves (a NaN loss stops every
// rank at the same point, and rank 0 then writes its report), then SIGTERM (a rank waiting in a
// collective for the failed one would wait forever), then SIGKILL after kill_grace.
constexpr auto term_grace = std::chrono::seconds(2);
constexpr auto kill_grace = std::chrono::seconds(10);

volatile std::sig_atomic_t signals_received = 0;
volatile std::sig_atomic_t last_signal = 0;

extern "C" void on_launcher_signal(int signal)
{
    last_signal = signal;
    signals_received = signals_received + 1;
}

// Catches SIGINT and SIGTERM while the ranks run (to pass them on), and restores what was there.
class signal_guard {
public:
    signal_guard()
    {
        signals_received = 0;
        last_signal = 0;
        struct sigaction action {};
        action.sa_handler = on_launcher_signal;
        sigemptyset(&action.sa_mask);
        ::sigaction(SIGINT, &action, &old_interrupt_);
        ::sigaction(SIGTERM, &action, &old_terminate_);
    }
    ~signal_guard()
    {
        ::sigaction(SIGINT, &old_interrupt_, nullptr);
        ::sigaction(SIGTERM, &old_terminate_, nullptr);
    }
    signal_guard(const signal_guard&) = delete;
    signal_guard& operator=(const signal_guard&) = delete;

private:
    struct sigaction old_interrupt_ {};
    struct sigaction old_terminate_ {};
};

// A variable of the launcher's as a whole number in [least, most]; the message names it.
int whole_variable(const char* name, int least, int most)
{
    const char* text = std::getenv(name);
    if (text == nullptr) {
        throw std::invalid_argument(std::string(rank_variable) + " is set (this process is a rank of cudagap-train "
                                    "--gpus N, started by its launcher), but " + name + " is not");
    }
    long value = -1;
    char* end = nullptr;
    if (std::isdigit(static_cast<unsigned char>(text[0])) != 0) {
        errno = 0;
        value = std::strtol(text, &end, 10);
    }
    if (end == nullptr || *end != '\0' || errno != 0 || value < least || value > most) {
        throw std::invalid_argument(std::string(name) + " must be a whole number from " + std::to_string(least) +
                                    " to " + std::to_string(most) + ", got '" + text + "'");
    }
    return static_cast<int>(value);
}

// This process's environment without the launcher's variables, then rank `rank`'s.
std::vector<std::string> rank_environment(int rank, int ranks, const std::filesystem::path& bootstrap)
{
    std::vector<std::string> result;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        const std::string_view name = text.substr(0, text.find('='));
        if (name != rank_variable && name != size_variable && name != gpu_variable && name != bootstrap_variable) {
            result.emplace_back(text);
        }
    }
    result.push_back(std::string(rank_variable) + "=" + std::to_string(rank));
    result.push_back(std::string(size_variable) + "=" + std::to_string(ranks));
    result.push_back(std::string(gpu_variable) + "=" + std::to_string(rank));
    result.push_back(std::string(bootstrap_variable) + "=" + bootstrap.string());
    return result;
}

std::vector<char*> pointers(std::vector<std::string>& strings)
{
    std::vector<char*> result;
    for (std::string& text : strings) {
        result.push_back(text.data());
    }
    result.push_back(nullptr);
    return result;
}

// The forked child's part: only async-signal-safe calls (the launcher may have threads).
[[noreturn]] void become_rank(char* const* argv, char* const* envp, bool quiet_stdout, pid_t launcher,
                              const std::string& failure) noexcept
{
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != launcher) {
        ::_exit(1); // the launcher died before prctl took effect
    }
    struct sigaction plain {};
    plain.sa_handler = SIG_DFL;
    sigemptyset(&plain.sa_mask);
    ::sigaction(SIGINT, &plain, nullptr); // even when the launcher's own parent ignored it
    ::sigaction(SIGTERM, &plain, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (quiet_stdout) {
        const int null = ::open("/dev/null", O_WRONLY);
        if (null >= 0) {
            ::dup2(null, STDOUT_FILENO);
            ::close(null);
        }
    }
    ::execve(argv[0], argv, envp);
    static_cast<void>(::write(STDERR_FILENO, failure.data(), failure.size()));
    ::_exit(127); // as a shell says for a command it cannot run
}

pid_t start_rank(std::vector<std::string> command, int rank, int ranks, const std::filesystem::path& bootstrap)
{
    std::vector<std::string> environment = rank_environment(rank, ranks, bootstrap);
    const std::vector<char*> argv = pointers(command);
    const std::vector<char*> envp = pointers(environment);
    const std::string failure = "cudagap-train: rank " + std::to_string(rank) + " cannot execute " + command[0] + "\n";
    const pid_t launcher = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        throw std::system_error(errno, std::generic_category(), "cudagap-train: cannot start rank " + std::to_string(rank));
    }
    if (pid == 0) {
        become_rank(argv.data(), envp.data(), rank != 0, launcher, failure);
    }
    return pid;
}

void signal_ranks(const std::vector<pid_t>& pids, int signal)
{
    for (const pid_t pid : pids) {
        if (pid > 0) {
            ::kill(pid, signal);
        }
    }
}

// The status of a rank that ended: its exit status, or 128 + the signal that ended it.
int status_of(int wait_status)
{
    return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

// When the launcher stops the ranks that are left: max, not at all.
struct stop_times {
    std::chrono::steady_clock::time_point terminate = std::chrono::steady_clock::time_point::max();
    std::chrono::steady_clock::time_point kill = std::chrono::steady_clock::time_point::max();
};

// What the launcher does when rank `rank` is the first to end badly: Ctrl-C's status is passed
// on (the ranks stop together); any other failure stops the others.
void first_failure(std::vector<pid_t>& pids, std::size_t rank, int status, bool signalled, stop_times& stop)
{
    if (status == interrupted_status) {
        if (!signalled) {
            signal_ranks(pids, SIGINT);
        }
        return;
    }
    if (!signalled) {
        const bool killed = status > 128;
        std::fprintf(stderr, "cudagap-train: rank %zu of %zu %s %d%s%s; stopping the other ranks\n", rank,
                     pids.size(), killed ? "was killed by signal" : "failed with exit status",
                     killed ? status - 128 : status, killed ? ", " : "", killed ? strsignal(status - 128) : "");
    }
    stop.terminate = std::chrono::steady_clock::now() + term_grace;
    stop.kill = stop.terminate + kill_grace;
}

// Reaps the ranks that ended; returns false when none is left.
bool reap(std::vector<pid_t>& pids, int& failure, bool signalled, stop_times& stop)
{
    bool running = false;
    for (std::size_t rank = 0; rank < pids.size(); ++rank) {
        if (pids[rank] <= 0) {
            continue;
        }
        int wait_status = 0;
        const pid_t done = ::waitpid(pids[rank], &wait_status, WNOHANG);
        if (done == 0 || (done < 0 && errno == EINTR)) {
            running = true;
            continue;
        }
        pids[rank] = 0;
        const int status = done > 0 ? status_of(wait_status) : 1; // not our child any more: lost
        if (status != 0 && failure == 0) {
            failure = status;
            first_failure(pids, rank, status, signalled, stop);
        }
    }
    return running;
}

int wait_for_ranks(std::vector<pid_t>& pids)
{
    int failure = 0;
    int signals_handled = 0;
    stop_times stop;
    while (reap(pids, failure, signals_handled > 0, stop)) {
        const int received = signals_received;
        if (received != signals_handled) {
            // The first signal is passed on (Ctrl-C: the ranks stop together); a second kills.
            signal_ranks(pids, received == 1 ? static_cast<int>(last_signal) : SIGKILL);
            signals_handled = received;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now >= stop.terminate) {
            signal_ranks(pids, SIGTERM);
            stop.terminate = std::chrono::steady_clock::time_point::max();
        }
        if (now >= stop.kill) {
            signal_ranks(pids, SIGKILL);
            stop.kill = std::chrono::steady_clock::time_point::max();
        }
        std::this_thread::sleep_for(poll_interval);
    }
    return failure;
}

std::filesystem::path make_job_folder()
{
    std::string pattern = (std::filesystem::temp_directory_path() / "cudagap-train-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::system_error(errno, std::generic_category(),
                                "cudagap-train: cannot make the ranks' bootstrap folder " + pattern);
    }
    return pattern;
}

} // namespace

std::optional<rank_info> rank_from_environment()
{
    if (std::getenv(rank_variable) == nullptr) {
        return std::nullopt;
    }
    constexpr int most = 1024;
    rank_info info;
    info.size = whole_variable(size_variable, 1, most);
    info.rank = whole_variable(rank_variable, 0, info.size - 1);
    info.gpu = whole_variable(gpu_variable, 0, most - 1);
    const char* bootstrap = std::getenv(bootstrap_variable);
    if (bootstrap == nullptr || *bootstrap == '\0') {
        throw std::invalid_argument(std::string(rank_variable) + " is set (this process is a rank of cudagap-train "
                                    "--gpus N), but " + bootstrap_variable + " (the unique id's file) is not");
    }
    info.bootstrap = bootstrap;
    return info;
}

int launch(const std::vector<std::string>& command, int ranks)
{
    if (command.empty() || command.front().empty() || ranks < 1) {
        throw std::invalid_argument("train::launch needs a program and at least 1 rank, got " +
                                    (command.empty() ? std::string("no program") : "'" + command.front() + "'") +
                                    " and " + std::to_string(ranks) + " rank(s)");
    }
    const std::filesystem::path folder = make_job_folder();
    const signal_guard guard;
    std::vector<pid_t> pids;
    int status = 0;
    try {
        for (int rank = 0; rank < ranks; ++rank) {
            pids.push_back(start_rank(command, rank, ranks, folder / "nccl-id"));
        }
        status = wait_for_ranks(pids);
    } catch (...) {
        signal_ranks(pids, SIGKILL);
        for (const pid_t pid : pids) {
            if (pid > 0) {
                ::waitpid(pid, nullptr, 0);
            }
        }
        std::error_code ignored;
        std::filesystem::remove_all(folder, ignored);
        throw;
    }
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
    return status;
}

} // namespace train
