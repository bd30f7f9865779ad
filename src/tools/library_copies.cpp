// Copies of shared libraries on the loader's search path, and the check that warns about
// duplicates: two versions of one library on the path are how CUDA and cuDNN versions mismatch.
#include <gpu/tools/library_copies.hpp>

#include "checks.hpp"
#include "python_wheels.hpp"
#include "system_tools.hpp"
#include "tool_parsers.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

namespace gpu::tools {

namespace {

namespace fs = std::filesystem;

using detail::environment;
using detail::split;
using detail::trim;

void add_folder(std::vector<std::string>& folders, std::set<std::string>& seen,
                const std::string& folder)
{
    std::error_code ec;
    if (folder.empty() || !fs::is_directory(folder, ec)) {
        return;
    }
    const fs::path canonical = fs::canonical(folder, ec);
    if (!ec && seen.insert(canonical.string()).second) {
        folders.push_back(folder);
    }
}

void add_ld_so_conf(std::vector<std::string>& folders, std::set<std::string>& seen,
                    const std::string& file, int depth)
{
    std::ifstream conf(file);
    std::string line;
    while (depth < 4 && std::getline(conf, line)) {
        line = trim(line.substr(0, line.find('#')));
        if (line.rfind("include", 0) == 0) {
            for (const std::string& included : detail::glob_paths(trim(line.substr(7)))) {
                add_ld_so_conf(folders, seen, included, depth + 1);
            }
        } else if (!line.empty()) {
            add_folder(folders, seen, line);
        }
    }
}

// The loader's search order: LD_LIBRARY_PATH, then ld.so.cache (built from ld.so.conf), then the
// system folders; the toolkit and cuDNN roots come last because builds pick copies there, and
// after them the folders of NVIDIA's pip wheels, which only Python packages load (by path).
std::vector<std::string> library_folders(const std::optional<std::string>& loaded,
                                         const detail::wheel_folders& wheels)
{
    std::vector<std::string> folders;
    std::set<std::string> seen;
    for (const std::string& folder : split(environment("LD_LIBRARY_PATH"), ':')) {
        add_folder(folders, seen, folder);
    }
    add_ld_so_conf(folders, seen, "/etc/ld.so.conf", 0);
    for (const char* pattern : {"/lib/*-linux-gnu", "/usr/lib/*-linux-gnu", "/lib64", "/usr/lib64",
                                "/lib", "/usr/lib", "/usr/local/lib"}) {
        for (const std::string& folder : detail::glob_paths(pattern)) {
            add_folder(folders, seen, folder);
        }
    }
    for (const char* variable : {"CUDA_HOME", "CUDA_PATH", "CUDNN_ROOT"}) {
        if (const std::string root = environment(variable); !root.empty()) {
            add_folder(folders, seen, root + "/lib64");
            add_folder(folders, seen, root + "/lib");
        }
    }
    for (const std::string& folder : wheels.folders) {
        add_folder(folders, seen, folder);
    }
    if (loaded) {
        add_folder(folders, seen, fs::path(*loaded).parent_path().string());
    }
    return folders;
}

// "libcudnn.so" or "libcudnn.so.9.1.0" for library "libcudnn"; the version part, or nullopt.
std::optional<std::string> soname_version(const std::string& file_name, std::string_view library)
{
    const std::string stem = std::string(library) + ".so";
    if (file_name.rfind(stem, 0) != 0) {
        return std::nullopt;
    }
    const std::string rest = file_name.substr(stem.size());
    if (rest.empty()) {
        return std::string();
    }
    if (rest.front() != '.' || rest.size() == 1 ||
        rest.find_first_not_of("0123456789.", 1) != std::string::npos) {
        return std::nullopt;
    }
    return rest.substr(1);
}

std::string major_of(const std::string& version)
{
    return version.substr(0, version.find('.'));
}

// The wheel whose RECORD lists a copy (by the link's path or the file's), or empty.
std::string wheel_of(const fs::path& link, const fs::path& resolved,
                     const detail::wheel_folders& wheels)
{
    std::error_code ec;
    const fs::path link_path = fs::weakly_canonical(link.parent_path(), ec) / link.filename();
    for (const std::string& path : {link_path.string(), resolved.string()}) {
        if (const auto known = wheels.wheel_of.find(path); known != wheels.wheel_of.end()) {
            return known->second;
        }
    }
    return {};
}

} // namespace

std::string library_copy::describe() const
{
    std::string text = path;
    if (from_wheel && wheel.empty()) {
        text.append(" (in a pip wheel's folder)");
    } else if (from_wheel) {
        text.append(" (pip wheel ").append(wheel).append(")");
    }
    if (loaded) {
        text.append(" (loaded)");
    }
    return text;
}

std::optional<std::string> loaded_library_path(std::string_view library)
{
    for (const std::string& path : detail::loaded_objects()) {
        if (soname_version(fs::path(path).filename().string(), library)) {
            return path;
        }
    }
    return std::nullopt;
}

std::vector<library_copy> find_library_copies(std::string_view library)
{
    const std::optional<std::string> loaded = loaded_library_path(library);
    std::error_code ec;
    const std::string loaded_resolved =
        loaded ? fs::canonical(*loaded, ec).string() : std::string();
    const detail::wheel_folders wheels = detail::python_wheel_folders(environment("PATH"));
    std::set<std::string> wheel_folders;
    for (const std::string& folder : wheels.folders) {
        wheel_folders.insert(fs::canonical(folder, ec).string());
    }
    std::vector<library_copy> copies;
    for (const std::string& folder : library_folders(loaded, wheels)) {
        const bool in_wheel_folder = wheel_folders.count(fs::canonical(folder, ec).string()) > 0;
        for (const fs::directory_entry& entry : fs::directory_iterator(folder, ec)) {
            const std::string file_name = entry.path().filename().string();
            if (!soname_version(file_name, library)) {
                continue;
            }
            std::error_code resolve_error;
            const fs::path resolved = fs::canonical(entry.path(), resolve_error);
            if (resolve_error || !fs::is_regular_file(resolved, resolve_error)) {
                continue; // a dangling link is no copy
            }
            // The resolved file's own name carries the fullest version (libcudnn.so.9.1.0).
            std::string version =
                soname_version(resolved.filename().string(), library).value_or("");
            if (version.empty()) {
                version = *soname_version(file_name, library);
            }
            const auto same =
                std::find_if(copies.begin(), copies.end(), [&](const library_copy& c) {
                    return c.resolved_path == resolved.string();
                });
            if (same != copies.end()) {
                // Name the copy by its most specific link (libcublas.so.13 over libcublas.so).
                if (file_name.size() > fs::path(same->path).filename().string().size() &&
                    fs::path(same->path).parent_path() == entry.path().parent_path()) {
                    same->path = entry.path().string();
                }
                continue;
            }
            library_copy copy;
            copy.path = entry.path().string();
            copy.resolved_path = resolved.string();
            copy.soname_version = version;
            copy.loaded = resolved.string() == loaded_resolved;
            copy.from_wheel = in_wheel_folder;
            copy.wheel = in_wheel_folder ? wheel_of(entry.path(), resolved, wheels) : "";
            copies.push_back(std::move(copy));
        }
    }
    return copies;
}

diagnostic check_library_copies(std::string name, const std::vector<std::string>& libraries,
                                std::string_view root_variable)
{
    diagnostic check;
    check.name = std::move(name);
    check.status = diagnostic_status::ok;
    bool from_wheels = false; // a duplicate comes from a pip wheel
    for (const std::string& library : libraries) {
        const std::vector<library_copy> copies = find_library_copies(library);
        if (!check.detail.empty()) {
            check.detail += "; ";
        }
        if (copies.empty()) {
            check.detail += library + ": no copy on the library path";
            continue;
        }
        std::map<std::string, std::vector<const library_copy*>> by_major;
        for (const library_copy& copy : copies) {
            by_major[major_of(copy.soname_version)].push_back(&copy);
        }
        for (const auto& [major, group] : by_major) {
            const std::string soname = library + ".so" + (major.empty() ? "" : "." + major);
            if (group.size() > 1) {
                check.status = diagnostic_status::warning;
                check.detail += std::to_string(group.size()) + " copies of " + soname + ":";
            } else {
                check.detail += soname + ":";
            }
            for (const library_copy* copy : group) {
                check.detail.append(" ").append(copy->describe());
                from_wheels = from_wheels || (group.size() > 1 && copy->from_wheel);
            }
            check.detail += "; ";
        }
        check.detail.erase(check.detail.size() - 2);
    }
    if (check.status == diagnostic_status::warning) {
        check.fix = "the loader takes the first copy it finds, so a program built against one "
                    "copy can load another (a version-mismatch error): "
                    "keep one copy per version on the library path (remove the others, or drop "
                    "their folders from LD_LIBRARY_PATH and run ldconfig)";
        if (!root_variable.empty()) {
            check.fix += ", and set " + std::string(root_variable) +
                         " to the folder of the copy you keep when building";
        }
        if (from_wheels) {
            check.fix += ". A copy from a pip wheel is the one PyTorch and other Python packages "
                         "load by path: leave it installed, and keep its folder out of "
                         "LD_LIBRARY_PATH so that other programs load the copy they were built "
                         "against";
        }
    }
    return check;
}

} // namespace gpu::tools
