// Private to cudagap_tools: the few operating-system services the diagnosis needs (finding and
// running a tool with a timeout, globbing, listing the loaded shared objects). Not installed.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace gpu::tools::detail {

/// What a tool printed and how it ended.
struct tool_output {
    bool started = false;    ///< the process could be created
    bool timed_out = false;  ///< killed after the timeout
    int exit_code = -1;      ///< its exit status (-1 when it did not exit normally)
    std::string text;        ///< stdout and stderr together
    std::string spawn_error; ///< why it could not start

    /// "exit 9", "killed by signal 11", "could not start: ...", "timed out".
    [[nodiscard]] std::string describe_failure() const;
};

/// The first executable regular file called @p name in the ':'-separated @p search_path.
[[nodiscard]] std::optional<std::string> find_tool(const std::string& name,
                                                   const std::string& search_path);

/// Runs @p path with @p arguments (no shell), stdin from /dev/null, collecting stdout and stderr;
/// kills it after @p timeout.
[[nodiscard]] tool_output run_tool(const std::string& path,
                                   const std::vector<std::string>& arguments,
                                   std::chrono::milliseconds timeout);

/// The paths matching a glob(3) @p pattern, sorted; empty when none match.
[[nodiscard]] std::vector<std::string> glob_paths(const std::string& pattern);

/// The file paths of the shared objects loaded in this process (dl_iterate_phdr).
[[nodiscard]] std::vector<std::string> loaded_objects();

} // namespace gpu::tools::detail
