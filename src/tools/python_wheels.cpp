// The library folders of NVIDIA's pip wheels (python_wheels.hpp): python3 says where the
// `nvidia` namespace package is; the wheels' .dist-info RECORD files say whose each file is.
#include "python_wheels.hpp"

#include "checks.hpp"
#include "system_tools.hpp"
#include "tool_parsers.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>

namespace gpu::tools::detail {

namespace {

namespace fs = std::filesystem;

// Prints each folder of the `nvidia` namespace package (one per site-packages that has NVIDIA
// wheels); nothing when there is none. Python 3.3 and later.
// The current folder is dropped from the search first: a folder called nvidia where the doctor
// runs is no wheel.
constexpr const char* where_is_nvidia = "import sys\n"
                                        "sys.path = [p for p in sys.path if p not in ('', '.')]\n"
                                        "try:\n"
                                        "    import nvidia\n"
                                        "except Exception:\n"
                                        "    sys.exit(0)\n"
                                        "for folder in getattr(nvidia, '__path__', []):\n"
                                        "    print(folder)\n";

constexpr std::chrono::seconds python_timeout{5};

// What python3 said, by the interpreter and the variables that change its answer: asked once.
std::vector<std::string> ask_python(const std::string& python)
{
    static std::mutex lock;
    static std::map<std::string, std::vector<std::string>> answers;
    std::string key = python;
    for (const char* variable : {"PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "VIRTUAL_ENV"}) {
        key += '\n' + environment(variable);
    }
    const std::lock_guard<std::mutex> guard(lock);
    if (const auto known = answers.find(key); known != answers.end()) {
        return known->second;
    }
    const tool_output out = run_tool(python, {"-c", where_is_nvidia}, python_timeout);
    std::vector<std::string> folders;
    if (out.started && !out.timed_out && out.exit_code == 0) {
        for (std::string line : split(out.text, '\n')) {
            line = trim(line);
            std::error_code ec;
            if (!line.empty() && line.front() == '/' && fs::is_directory(line, ec)) {
                folders.push_back(line);
            }
        }
    }
    return answers[key] = folders;
}

// "nvidia_cudnn_cu13-9.13.0.50.dist-info" as a wheel's name and version:
// "nvidia-cudnn-cu13 9.13.0.50".
std::string wheel_name(const std::string& dist_info)
{
    std::string stem = dist_info.substr(0, dist_info.size() - std::string(".dist-info").size());
    const std::size_t dash = stem.find('-');
    std::string name = stem.substr(0, dash);
    for (char& c : name) {
        c = c == '_' ? '-' : c;
    }
    return dash == std::string::npos ? name : name + " " + stem.substr(dash + 1);
}

// The shared libraries one RECORD lists (paths relative to the site-packages folder @p site),
// each by its canonical path, into @p wheel_of.
void read_record(const fs::path& site, const fs::path& record, const std::string& wheel,
                 std::map<std::string, std::string>& wheel_of)
{
    std::ifstream in(record);
    for (std::string line; std::getline(in, line);) {
        std::string file = line.substr(0, line.find(','));
        if (file.size() >= 2 && file.front() == '"' && file.back() == '"') {
            file = file.substr(1, file.size() - 2);
        }
        if (file.find(".so") == std::string::npos) {
            continue;
        }
        std::error_code ec;
        const fs::path path = fs::weakly_canonical(site / file, ec);
        if (!ec) {
            wheel_of.emplace(path.string(), wheel);
        }
    }
}

// The NVIDIA wheels of the site-packages folder @p site: every nvidia_*.dist-info's RECORD.
void read_records(const fs::path& site, std::map<std::string, std::string>& wheel_of)
{
    std::error_code ec;
    for (const fs::directory_entry& entry : fs::directory_iterator(site, ec)) {
        const std::string name = entry.path().filename().string();
        const bool nvidia = name.rfind("nvidia_", 0) == 0 || name.rfind("NVIDIA_", 0) == 0;
        if (nvidia && name.size() > 10 && name.ends_with(".dist-info")) {
            read_record(site, entry.path() / "RECORD", wheel_name(name), wheel_of);
        }
    }
}

} // namespace

wheel_folders wheel_folders_in(const std::vector<std::string>& nvidia_folders)
{
    wheel_folders result;
    std::set<std::string> sites;
    for (const std::string& nvidia : nvidia_folders) {
        const std::size_t first = result.folders.size();
        std::error_code ec;
        // nvidia/<package>/lib: nvidia/cudnn/lib, and nvidia/cu13/lib of the CUDA 13 wheels.
        for (const fs::directory_entry& package : fs::directory_iterator(nvidia, ec)) {
            for (const char* lib : {"lib", "lib64"}) {
                std::error_code is_dir_error;
                if (fs::is_directory(package.path() / lib, is_dir_error)) {
                    result.folders.push_back((package.path() / lib).string());
                }
            }
        }
        std::sort(result.folders.begin() + static_cast<std::ptrdiff_t>(first),
                  result.folders.end());
        const fs::path site = fs::path(nvidia).parent_path();
        if (sites.insert(site.string()).second) {
            read_records(site, result.wheel_of);
        }
    }
    return result;
}

wheel_folders python_wheel_folders(const std::string& search_path)
{
    const std::optional<std::string> python = find_tool("python3", search_path);
    if (!python) {
        return {};
    }
    return wheel_folders_in(ask_python(*python));
}

} // namespace gpu::tools::detail
