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

#include <array>
#include <atomic>
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

// Written by the handler, read by the polling loop. A lock-free atomic, not a volatile
// sig_atomic_t: the handler may run on any thread of the process (the CUDA runtime's too).
std::atomic<int> signals_received{0};
std::atomic<int> last_signal{0};
static_assert(std::atomic<int>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

extern "C" void on_launcher_signal(int signal)
{
    last_signal.store(signal);
    signals_received.fetch_add(1);
}

// While the ranks run: catches SIGINT, SIGTERM and SIGHUP (to pass them on) and gives SIGCHLD its
// default disposition (inherited as SIG_IGN, it would make the kernel reap the ranks itself, and
// waitpid would fail with ECHILD for every one); restores all four at the end.
class signal_guard {
public:
    signal_guard()
    {
        signals_received.store(0);
        last_signal.store(0);
        struct sigaction action {};
        action.sa_handler = on_launcher_signal;
        sigemptyset(&action.sa_mask);
        for (std::size_t i = 0; i < forwarded.size(); ++i) {
            ::sigaction(forwarded[i], &action, &old_[i]);
            if (forwarded[i] == SIGHUP && old_[i].sa_handler == SIG_IGN) {
                ::sigaction(SIGHUP, &old_[i], nullptr); // under nohup: the ranks inherit it ignored
            }
        }
        struct sigaction plain {};
        plain.sa_handler = SIG_DFL;
        sigemptyset(&plain.sa_mask);
        ::sigaction(SIGCHLD, &plain, &old_child_);
    }
    ~signal_guard()
    {
        for (std::size_t i = 0; i < forwarded.size(); ++i) {
            ::sigaction(forwarded[i], &old_[i], nullptr);
        }
        ::sigaction(SIGCHLD, &old_child_, nullptr);
    }
    signal_guard(const signal_guard&) = delete;
    signal_guard& operator=(const signal_guard&) = delete;

private:
    static constexpr std::array<int, 3> forwarded{SIGINT, SIGTERM, SIGHUP};
    std::array<struct sigaction, 3> old_{};
    struct sigaction old_child_ {};
};

// A variable of the launcher's as a whole number in [least, most]; the message names it.
int whole_variable(const char* name, int least, int most)
{
    const char* text = std::getenv(name);
    if (text == nullptr) {
        throw std::invalid_argument(std::string(rank_variable) +
                                    " is set (this process is a rank of cudagap-train "
                                    "--gpus N, started by its launcher), but " +
                                    name + " is not");
    }
    long value = -1;
    char* end = nullptr;
    if (std::isdigit(static_cast<unsigned char>(text[0])) != 0) {
        errno = 0;
        value = std::strtol(text, &end, 10);
    }
    if (end == nullptr || *end != '\0' || errno != 0 || value < least || value > most) {
        throw std::invalid_argument(std::string(name) + " must be a whole number from " +
                                    std::to_string(least) + " to " + std::to_string(most) +
                                    ", got '" + text + "'");
    }
    return static_cast<int>(value);
}

// This process's environment without the launcher's variables, then rank `rank`'s.
std::vector<std::string> rank_environment(int rank, int ranks,
                                          const std::filesystem::path& bootstrap)
{
    std::vector<std::string> result;
    for (char** entry = environ; *entry != nullptr; ++entry) {
        const std::string_view text(*entry);
        const std::string_view name = text.substr(0, text.find('='));
        if (name != rank_variable && name != size_variable && name != gpu_variable &&
            name != bootstrap_variable) {
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
[[noreturn]] void become_rank(const char* executable, char* const* argv, char* const* envp,
                              bool quiet_stdout, pid_t launcher,
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
    ::execve(executable, argv, envp);
    static_cast<void>(::write(STDERR_FILENO, failure.data(), failure.size()));
    ::_exit(127); // as a shell says for a command it cannot run
}

pid_t start_rank(std::vector<std::string> command, const std::string& executable, int rank,
                 int ranks, const std::filesystem::path& bootstrap)
{
    std::vector<std::string> environment = rank_environment(rank, ranks, bootstrap);
    const std::vector<char*> argv = pointers(command);
    const std::vector<char*> envp = pointers(environment);
    const std::string failure =
        "cudagap-train: rank " + std::to_string(rank) + " cannot execute " + command[0] + "\n";
    const pid_t launcher = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) {
        throw std::system_error(errno, std::generic_category(),
                                "cudagap-train: cannot start rank " + std::to_string(rank));
    }
    if (pid == 0) {
        become_rank(executable.c_str(), argv.data(), envp.data(), rank != 0, launcher, failure);
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

// How a rank ended: its exit status, or 128 + the signal that killed it, as a shell says.
struct ending {
    int status = 0;
    bool killed = false; // by a signal: SIGINT too, since a rank that stops on Ctrl-C exits 130
};

ending ending_of(int wait_status)
{
    if (WIFSIGNALED(wait_status)) {
        return {128 + WTERMSIG(wait_status), true};
    }
    return {WEXITSTATUS(wait_status), false};
}

// When the launcher stops the ranks that are left: max, not at all.
struct stop_times {
    std::chrono::steady_clock::time_point terminate = std::chrono::steady_clock::time_point::max();
    std::chrono::steady_clock::time_point kill = std::chrono::steady_clock::time_point::max();
    bool sent = false; // the launcher has sent the SIGTERM of a deadline

    // The others get term_grace to end by themselves, then SIGTERM, then SIGKILL: an earlier
    // deadline already armed stays.
    void arm()
    {
        const auto then = std::chrono::steady_clock::now() + term_grace;
        if (then < terminate) {
            terminate = then;
            kill = then + kill_grace;
        }
    }
};

// Ctrl-C's agreed status: a rank that exited 130 by itself (killed by SIGINT is a failure: that
// rank never reached the agreement, and the others may wait for it in a collective).
bool interrupted(const ending& e)
{
    return !e.killed && e.status == interrupted_status;
}

// What the launcher does when rank `rank` ends badly. A failure (any status but 0 and 130, or a
// signal) is returned and stops the others, and replaces an earlier 130 (which would hide it);
// a 130 is passed on as SIGINT. Either way the others get the grace period to follow.
void rank_ended(std::vector<pid_t>& pids, std::size_t rank, const ending& e, bool signalled,
                ending& failure, stop_times& stop)
{
    if (interrupted(e)) {
        if (failure.status == 0) {
            failure = e;
            if (!signalled) {
                signal_ranks(pids, SIGINT);
            }
        }
        stop.arm();
        return;
    }
    if (failure.status != 0 && !interrupted(failure)) {
        return; // the first failure is the one returned
    }
    if (interrupted(failure) && stop.sent && e.killed) {
        // Stopped by the launcher's own deadline, a consequence and not a cause: 130 stays.
        std::fprintf(
            stderr,
            "cudagap-train: rank %zu of %zu had not ended %lld s after another rank stopped on "
            "Ctrl-C; stopped by signal %d\n",
            rank, pids.size(), static_cast<long long>(term_grace.count()), e.status - 128);
        return;
    }
    failure = e;
    if (!signalled) {
        std::fprintf(stderr, "cudagap-train: rank %zu of %zu %s %d%s%s; stopping the other ranks\n",
                     rank, pids.size(),
                     e.killed ? "was killed by signal" : "failed with exit status",
                     e.killed ? e.status - 128 : e.status, e.killed ? ", " : "",
                     e.killed ? strsignal(e.status - 128) : "");
    }
    stop.arm();
}

// Reaps the ranks that ended; returns false when none is left.
bool reap(std::vector<pid_t>& pids, ending& failure, bool signalled, stop_times& stop)
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
        const ending e =
            done > 0 ? ending_of(wait_status) : ending{1, false}; // not our child any more: lost
        if (e.status != 0) {
            rank_ended(pids, rank, e, signalled, failure, stop);
        }
    }
    return running;
}

int wait_for_ranks(std::vector<pid_t>& pids)
{
    ending failure;
    int signals_handled = 0;
    stop_times stop;
    while (reap(pids, failure, signals_handled > 0, stop)) {
        const int received = signals_received.load();
        if (received != signals_handled) {
            // The first signal is passed on (Ctrl-C: the ranks stop together); a second kills.
            signal_ranks(pids, received == 1 ? last_signal.load() : SIGKILL);
            signals_handled = received;
        }
        const auto now = std::chrono::steady_clock::now();
        if (now >= stop.terminate) {
            signal_ranks(pids, SIGTERM);
            stop.sent = true;
            stop.terminate = std::chrono::steady_clock::time_point::max();
        }
        if (now >= stop.kill) {
            signal_ranks(pids, SIGKILL);
            stop.kill = std::chrono::steady_clock::time_point::max();
        }
        std::this_thread::sleep_for(poll_interval);
    }
    return failure.status;
}

std::filesystem::path make_job_folder()
{
    std::string pattern =
        (std::filesystem::temp_directory_path() / "cudagap-train-XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
        throw std::system_error(errno, std::generic_category(),
                                "cudagap-train: cannot make the ranks' bootstrap folder " +
                                    pattern);
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
        throw std::invalid_argument(std::string(rank_variable) +
                                    " is set (this process is a rank of cudagap-train "
                                    "--gpus N), but " +
                                    bootstrap_variable + " (the unique id's file) is not");
    }
    info.bootstrap = bootstrap;
    return info;
}

int launch(const std::vector<std::string>& command, int ranks, const std::string& executable)
{
    if (command.empty() || command.front().empty() || ranks < 1) {
        throw std::invalid_argument(
            "train::launch needs a program and at least 1 rank, got " +
            (command.empty() ? std::string("no program") : "'" + command.front() + "'") + " and " +
            std::to_string(ranks) + " rank(s)");
    }
    const std::filesystem::path folder = make_job_folder();
    const signal_guard guard;
    std::vector<pid_t> pids;
    int status = 0;
    try {
        for (int rank = 0; rank < ranks; ++rank) {
            pids.push_back(start_rank(command, executable.empty() ? command.front() : executable,
                                      rank, ranks, folder / "nccl-id"));
        }
        status = wait_for_ranks(pids);
    } catch (...) {
        signal_ranks(pids, SIGKILL);
        for (const pid_t pid : pids) {
            while (pid > 0 && ::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
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
