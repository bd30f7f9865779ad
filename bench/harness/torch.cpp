// The PyTorch side of the comparisons: runs bench/compare_torch.py in a child process (its
// stderr is the user's progress, its stdout one JSON object) and parses what it measured.
#include "harness.hpp"

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ; // NOLINT: POSIX's process environment, handed to the child unchanged

#ifndef CUDAGAP_BENCH_PYTHON
#define CUDAGAP_BENCH_PYTHON ""
#endif
#ifndef CUDAGAP_BENCH_COMPARE_TORCH
#define CUDAGAP_BENCH_COMPARE_TORCH ""
#endif

namespace gpu::bench {

namespace {

std::string from_environment(const char* name, const char* fallback)
{
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : fallback;
}

struct child_output {
    int exit_status = -1; // the exit code, or -1 when it did not exit normally
    std::string stdout_text;
    std::string failure; // why it could not be run at all
};

// posix_spawn rather than popen: the arguments never pass through a shell, so no quoting.
child_output run_child(const std::vector<std::string>& argv)
{
    child_output out;
    std::array<int, 2> pipe_ends{};
    if (pipe(pipe_ends.data()) != 0) {
        out.failure = std::string("pipe() failed: ") + std::strerror(errno);
        return out;
    }
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addclose(&actions, pipe_ends[0]);
    posix_spawn_file_actions_adddup2(&actions, pipe_ends[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, pipe_ends[1]);

    std::vector<char*> args;
    args.reserve(argv.size() + 1);
    for (const std::string& arg : argv) {
        args.push_back(const_cast<char*>(arg.c_str())); // NOLINT: posix_spawn's signature
    }
    args.push_back(nullptr);
    pid_t pid = 0;
    const int spawned = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    close(pipe_ends[1]);
    if (spawned != 0) {
        close(pipe_ends[0]);
        out.failure = "could not start " + argv[0] + ": " + std::strerror(spawned);
        return out;
    }
    std::array<char, 4096> buffer{};
    for (;;) {
        const ssize_t n = read(pipe_ends[0], buffer.data(), buffer.size());
        if (n > 0) {
            out.stdout_text.append(buffer.data(), static_cast<std::size_t>(n));
        } else if (n == 0 || errno != EINTR) {
            break;
        }
    }
    close(pipe_ends[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR) {
            out.failure = std::string("waitpid() failed: ") + std::strerror(errno);
            return out;
        }
    }
    if (WIFEXITED(status)) {
        out.exit_status = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        out.failure = argv[0] + " was killed by signal " + std::to_string(WTERMSIG(status));
    }
    return out;
}

template <class T>
T required(const nlohmann::json& object, const char* key, const char* where)
{
    if (!object.contains(key)) {
        throw std::invalid_argument(std::string("compare_torch.py output: ") + where +
                                    " has no \"" + key + "\"");
    }
    try {
        return object.at(key).get<T>();
    } catch (const nlohmann::json::exception& e) {
        throw std::invalid_argument(std::string("compare_torch.py output: ") + where + "'s \"" +
                                    key + "\" has the wrong type: " + e.what());
    }
}

// An integer field, read exactly: get<int>() would cast 3e9 or 1e300 to int, which is undefined
// behaviour, and silently truncate 2.5.
int required_int(const nlohmann::json& object, const char* key, const char* where)
{
    const auto value = required<nlohmann::json>(object, key, where);
    constexpr auto max = static_cast<std::int64_t>(std::numeric_limits<int>::max());
    constexpr auto min = static_cast<std::int64_t>(std::numeric_limits<int>::min());
    if (value.is_number_unsigned() &&
        value.get<std::uint64_t>() <= static_cast<std::uint64_t>(max)) {
        return static_cast<int>(value.get<std::uint64_t>());
    }
    if (value.is_number_integer() && !value.is_number_unsigned() &&
        value.get<std::int64_t>() >= min && value.get<std::int64_t>() <= max) {
        return static_cast<int>(value.get<std::int64_t>());
    }
    throw std::invalid_argument(
        std::string("compare_torch.py output: ") + where + "'s \"" + key + "\" is " +
        value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) +
        ", not a whole number in the range of int");
}

stop_reason stop_reason_of(const nlohmann::json& object, const char* where)
{
    if (!object.contains("stopped")) {
        return stop_reason::fixed_count;
    }
    const auto text = required<std::string>(object, "stopped", where);
    for (const stop_reason r : {stop_reason::converged, stop_reason::time_limit,
                                stop_reason::sample_cap, stop_reason::fixed_count}) {
        if (text == to_string(r)) {
            return r;
        }
    }
    throw std::invalid_argument(
        std::string("compare_torch.py output: ") + where + "'s \"stopped\" is '" + text +
        "', not 'noise target', 'time limit', 'sample cap' or 'fixed count'");
}

// A number that may be null or absent.
std::optional<double> optional_number(const nlohmann::json& object, const char* key,
                                      const char* where)
{
    if (!object.contains(key) || object.at(key).is_null()) {
        return std::nullopt;
    }
    return required<double>(object, key, where);
}

// A series beside the main one ("single_call", "graph", "cold"), or nothing.
std::optional<side_timing> side_of(const nlohmann::json& item, const char* key, int min_samples)
{
    if (!item.contains(key) || item.at(key).is_null()) {
        return std::nullopt;
    }
    const nlohmann::json& s = item.at(key);
    if (!s.is_object()) {
        throw std::invalid_argument(std::string("compare_torch.py output: a result's \"") + key +
                                    "\" is not an object");
    }
    side_timing t;
    t.median_ms = required<double>(s, "median_ms", key);
    t.min_ms = required<double>(s, "min_ms", key);
    t.max_ms = required<double>(s, "max_ms", key);
    t.samples = required_int(s, "repetitions", key);
    t.calls_per_sample = required_int(s, "calls_per_repetition", key);
    t.noise = optional_number(s, "noise", key);
    t.stopped = stop_reason_of(s, key);
    t.min_samples = t.stopped == stop_reason::fixed_count ? 0 : min_samples;
    t.host_ms = optional_number(s, "host_ms", key);
    return t;
}

torch_case case_of(const nlohmann::json& item)
{
    torch_case c;
    c.case_name = required<std::string>(item, "case", "a result");
    c.median_ms = required<double>(item, "median_ms", "a result");
    c.min_ms = required<double>(item, "min_ms", "a result");
    c.max_ms = required<double>(item, "max_ms", "a result");
    c.repetitions = required_int(item, "repetitions", "a result");
    c.calls_per_repetition = required_int(item, "calls_per_repetition", "a result");
    c.noise = optional_number(item, "noise", "a result");
    c.stopped = stop_reason_of(item, "a result");
    if (c.stopped != stop_reason::fixed_count) {
        c.max_noise = optional_number(item, "max_noise", "a result");
        c.min_samples =
            item.contains("min_samples") ? required_int(item, "min_samples", "a result") : 0;
    }
    c.single_call = side_of(item, "single_call", c.min_samples);
    c.graph = side_of(item, "graph", c.min_samples);
    c.cold = side_of(item, "cold", c.min_samples);
    c.fields = item;
    return c;
}

} // namespace

measurement torch_case::to_measurement(math_mode math, std::string timing) const
{
    measurement row;
    row.case_name = case_name;
    row.variant = "torch";
    row.math = math;
    row.median_ms = median_ms;
    row.min_ms = min_ms;
    row.max_ms = max_ms;
    row.repetitions = repetitions;
    row.calls_per_repetition = calls_per_repetition;
    row.timing = std::move(timing);
    row.noise = noise;
    row.stopped = stopped;
    row.max_noise = max_noise;
    row.min_samples = min_samples;
    row.single_call = single_call;
    row.graph = graph;
    row.clocks = clocks;
    if (row.timing == "CUDA events") {
        row.cache = cache_state::warm;
    }
    return row;
}

std::optional<measurement> torch_case::cold_measurement(math_mode math) const
{
    if (!cold) {
        return std::nullopt;
    }
    measurement row = to_measurement(math);
    row.variant = "torch cold";
    row.cache = cache_state::cold;
    row.median_ms = cold->median_ms;
    row.min_ms = cold->min_ms;
    row.max_ms = cold->max_ms;
    row.repetitions = cold->samples;
    row.calls_per_repetition = cold->calls_per_sample;
    row.noise = cold->noise;
    row.stopped = cold->stopped;
    row.min_samples = cold->min_samples;
    row.host_ms = cold->host_ms;
    row.single_call.reset();
    row.graph.reset();
    return row;
}

const torch_case* torch_run::find(std::string_view case_name) const noexcept
{
    for (const torch_case& c : cases) {
        if (c.case_name == case_name) {
            return &c;
        }
    }
    return nullptr;
}

torch_run torch_run::parse(std::string_view text)
{
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        // Not only parse_error: a number beyond double is out_of_range (406), for one.
        throw std::invalid_argument(std::string("compare_torch.py output is not JSON: ") +
                                    e.what());
    }
    if (!doc.is_object()) {
        throw std::invalid_argument("compare_torch.py output is not a JSON object");
    }
    torch_run run;
    run.ok = required<bool>(doc, "ok", "the top level");
    if (!run.ok) {
        run.reason = required<std::string>(doc, "reason", "the top level");
        return run;
    }
    run.version = required<std::string>(doc, "torch", "the top level");
    run.device = required<std::string>(doc, "device", "the top level");
    const auto results = required<nlohmann::json>(doc, "results", "the top level");
    if (!results.is_array()) {
        throw std::invalid_argument("compare_torch.py output: \"results\" is not an array");
    }
    for (const nlohmann::json& item : results) {
        run.cases.push_back(case_of(item));
    }
    return run;
}

torch_run run_compare_torch(const std::vector<std::string>& arguments)
{
    torch_run run;
    const std::string python = from_environment("CUDAGAP_PYTHON", CUDAGAP_BENCH_PYTHON);
    const std::string script =
        from_environment("CUDAGAP_COMPARE_TORCH", CUDAGAP_BENCH_COMPARE_TORCH);
    if (python.empty()) {
        run.reason =
            "no Python interpreter was found when cudagap was configured (set CUDAGAP_PYTHON)";
        return run;
    }
    if (script.empty() || access(script.c_str(), R_OK) != 0) {
        run.reason =
            "bench/compare_torch.py was not found at '" + script + "' (set CUDAGAP_COMPARE_TORCH)";
        return run;
    }
    std::vector<std::string> argv{python, script};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    const child_output child = run_child(argv);
    if (!child.failure.empty()) {
        run.reason = child.failure;
        return run;
    }
    if (child.exit_status != 0) {
        run.reason = "compare_torch.py exited with code " + std::to_string(child.exit_status) +
                     " (its messages are above, on stderr)";
        return run;
    }
    try {
        return torch_run::parse(child.stdout_text);
    } catch (const std::exception& e) {
        // invalid_argument for output that is not what the script writes; anything else
        // (bad_alloc) must not escape either: this function is documented never to throw.
        run.reason = e.what();
        return run;
    }
}

} // namespace gpu::bench
