// Finding and running tools, globbing, and listing loaded shared objects, for the diagnosis.
// POSIX only, like the rest of cudagap.
#include "system_tools.hpp"

#include <cerrno>
#include <csignal>
#include <cstring>

#include <fcntl.h>
#include <glob.h>
#include <link.h>
#include <poll.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace gpu::tools::detail {

std::string tool_output::describe_failure() const
{
    if (!started) {
        return "could not start: " + spawn_error;
    }
    if (timed_out) {
        return "timed out";
    }
    if (exit_code >= 0) {
        return "exit " + std::to_string(exit_code);
    }
    return "killed by a signal";
}

std::optional<std::string> find_tool(const std::string& name, const std::string& search_path)
{
    std::size_t begin = 0;
    while (begin <= search_path.size()) {
        std::size_t end = search_path.find(':', begin);
        if (end == std::string::npos) {
            end = search_path.size();
        }
        const std::string folder = search_path.substr(begin, end - begin);
        begin = end + 1;
        if (folder.empty()) {
            continue; // an empty entry means "." to a shell; a diagnosis should not run cwd's files
        }
        const std::string candidate = folder + "/" + name;
        struct stat info {};
        if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
            ::access(candidate.c_str(), X_OK) == 0) {
            return candidate;
        }
    }
    return std::nullopt;
}

namespace {

// Closes a file descriptor on every path out of run_tool.
struct descriptor {
    int fd = -1;
    ~descriptor()
    {
        if (fd >= 0) {
            ::close(fd);
        }
    }
};

// Reaps the tool; one that closed its output but keeps running is killed at the deadline.
int wait_for(pid_t pid, std::chrono::steady_clock::time_point deadline, bool& timed_out)
{
    int status = 0;
    for (;;) {
        const pid_t done = ::waitpid(pid, &status, WNOHANG);
        if (done == pid) {
            break;
        }
        if (done < 0 && errno != EINTR) {
            return -1;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            timed_out = true;
            ::kill(pid, SIGKILL);
            while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
            break;
        }
        ::usleep(5000);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// Starts @p path with @p arguments, stdin from /dev/null and stdout and stderr into
// @p output_fd; 0 or the errno-style code posix_spawn returned.
int spawn(const std::string& path, const std::vector<std::string>& arguments, int output_fd,
          pid_t& pid)
{
    std::vector<std::string> words;
    words.push_back(path);
    words.insert(words.end(), arguments.begin(), arguments.end());
    std::vector<char*> argv;
    for (std::string& word : words) {
        argv.push_back(word.data());
    }
    argv.push_back(nullptr);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, output_fd, STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, output_fd, STDERR_FILENO);
    const int spawned = ::posix_spawn(&pid, path.c_str(), &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    return spawned;
}

// Appends what arrives on @p fd to @p text until the writer closes it or @p deadline passes.
void read_until(int fd, std::chrono::steady_clock::time_point deadline, std::string& text)
{
    char buffer[4096];
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
            deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) {
            return; // wait_for kills it
        }
        pollfd poll_fd{fd, POLLIN, 0};
        const int ready = ::poll(&poll_fd, 1, static_cast<int>(left.count()));
        if (ready <= 0) {
            continue; // interrupted, or the deadline check above ends it
        }
        const ssize_t got = ::read(fd, buffer, sizeof buffer);
        if (got < 0 && errno == EINTR) {
            continue;
        }
        if (got <= 0) {
            return; // end of output: the tool closed its side (normally by exiting)
        }
        text.append(buffer, static_cast<std::size_t>(got));
    }
}

} // namespace

tool_output run_tool(const std::string& path, const std::vector<std::string>& arguments,
                     std::chrono::milliseconds timeout)
{
    tool_output result;
    int fds[2] = {-1, -1};
    if (::pipe2(fds, O_CLOEXEC) != 0) {
        result.spawn_error = std::strerror(errno);
        return result;
    }
    descriptor read_end{fds[0]};
    descriptor write_end{fds[1]};
    pid_t pid = 0;
    const int spawned = spawn(path, arguments, write_end.fd, pid);
    ::close(write_end.fd);
    write_end.fd = -1;
    if (spawned != 0) {
        result.spawn_error = std::strerror(spawned);
        return result;
    }
    result.started = true;
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    read_until(read_end.fd, deadline, result.text);
    result.exit_code = wait_for(pid, deadline, result.timed_out);
    return result;
}

std::vector<std::string> glob_paths(const std::string& pattern)
{
    glob_t matches{};
    std::vector<std::string> paths;
    if (::glob(pattern.c_str(), 0, nullptr, &matches) == 0) {
        for (std::size_t i = 0; i < matches.gl_pathc; ++i) {
            paths.emplace_back(matches.gl_pathv[i]);
        }
    }
    ::globfree(&matches);
    return paths;
}

std::vector<std::string> loaded_objects()
{
    std::vector<std::string> paths;
    ::dl_iterate_phdr(
        [](dl_phdr_info* info, std::size_t, void* data) {
            if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0') {
                static_cast<std::vector<std::string>*>(data)->emplace_back(info->dlpi_name);
            }
            return 0;
        },
        &paths);
    return paths;
}

} // namespace gpu::tools::detail
