// The CUDA checks of the diagnosis (docs/doctor.md: nvidia-smi, the driver, the runtime, the GPUs,
// kernel images, nvcc), each with a status, a detail and an exact fix, and the other platforms as
// information.
#include "checks.hpp"
#include "system_tools.hpp"
#include "tool_parsers.hpp"

#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/tools/library_copies.hpp>
#include <gpu/version.hpp>

#include <cuda_runtime_api.h>

#include <filesystem>
#include <fstream>
#include <sstream>

namespace gpu::tools {

namespace {

namespace fs = std::filesystem;

using detail::environment;
using detail::gpus_check;
using detail::parse_major_minor;
using detail::parse_smi_rows;
using detail::smi_gpu;
using detail::split;
using detail::trim;

// The names of the CUDA checks: other checks point at them through `caused_by`.
constexpr const char* nvidia_smi_check = "nvidia-smi";
constexpr const char* driver_check = "NVIDIA driver";
constexpr const char* runtime_check = "CUDA runtime";
constexpr const char* kernel_images_check = "kernel images";
constexpr const char* nvcc_check = "nvcc";

// "a driver that supports CUDA 13.0 (branch 580 or newer)": the one phrase every driver fix uses.
std::string driver_needed(cuda_version runtime)
{
    const std::string branch = minimum_driver_for(runtime);
    return "an NVIDIA driver that supports CUDA " + runtime.to_string() +
           (branch.empty() ? std::string() : " (branch " + branch + " or newer)");
}

std::string install_driver_fix(cuda_version runtime)
{
    return "install " + driver_needed(runtime) +
           " from https://www.nvidia.com/drivers (or your distribution's nvidia-driver package), "
           "reboot, and check that `nvidia-smi` lists the GPU";
}

cuda_version effective_runtime()
{
    const cuda_version loaded = runtime_version();
    return loaded.known() ? loaded : compiled_runtime_version();
}

// --- nvidia-smi -------------------------------------------------------------------------

struct smi_result {
    diagnostic check;
    std::vector<smi_gpu> gpus;
};

std::string first_line(const std::string& text)
{
    const std::string line = trim(text.substr(0, text.find('\n')));
    return line.empty() ? std::string("no output") : line;
}

// nvidia-smi is not on the search path: a warning when CUDA works anyway (a container without
// the utility capability), else an error that the missing driver explains.
diagnostic smi_missing(bool driver_loaded, bool cuda_usable)
{
    diagnostic check;
    check.name = nvidia_smi_check;
    check.detail = "nvidia-smi is not on the search path";
    if (cuda_usable) {
        check.status = diagnostic_status::warning;
        check.detail += ", although CUDA works (containers often lack it)";
        check.fix = "add the driver's bin folder to PATH, or in a container enable the "
                    "utility capability (NVIDIA_DRIVER_CAPABILITIES=compute,utility)";
        return check;
    }
    check.status = diagnostic_status::error;
    check.detail += ": the NVIDIA driver, which ships it, is not installed";
    check.fix = install_driver_fix(effective_runtime());
    if (!driver_loaded) {
        check.caused_by = driver_check;
    }
    return check;
}

// nvidia-smi's GPU query. compute_cap needs a 510+ driver; older ones fail the whole query, so
// it asks again without, and says so in @p with_capability.
detail::tool_output query_smi(const std::string& tool, std::chrono::milliseconds timeout,
                              bool& with_capability)
{
    with_capability = true;
    detail::tool_output output = detail::run_tool(
        tool, {"--query-gpu=name,driver_version,memory.total,compute_cap", "--format=csv,noheader"},
        timeout);
    if (output.started && !output.timed_out && output.exit_code != 0) {
        with_capability = false;
        output = detail::run_tool(
            tool, {"--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"},
            timeout);
    }
    return output;
}

smi_result check_nvidia_smi(const std::string& search_path, std::chrono::milliseconds timeout,
                            bool driver_loaded, bool cuda_usable)
{
    smi_result result;
    const std::optional<std::string> tool = detail::find_tool("nvidia-smi", search_path);
    if (!tool) {
        result.check = smi_missing(driver_loaded, cuda_usable);
        return result;
    }
    diagnostic& check = result.check;
    check.name = nvidia_smi_check;
    bool with_capability = true;
    const detail::tool_output output = query_smi(*tool, timeout, with_capability);
    if (!output.started || output.timed_out || output.exit_code != 0) {
        check.status = diagnostic_status::error;
        check.detail = *tool +
                       (output.timed_out ? " did not answer within " +
                                               std::to_string(timeout.count() / 1000) + " s"
                                         : " failed (" + output.describe_failure() + ")") +
                       ": " + first_line(output.text);
        check.fix = "the driver is installed but not working: look at `dmesg | grep -i nvidia`; "
                    "after a driver update reboot (the kernel module and libraries must match); "
                    "otherwise reinstall the driver";
        if (!driver_loaded) {
            check.caused_by = driver_check;
        }
        return result;
    }
    result.gpus = parse_smi_rows(output.text, with_capability);
    check.status = diagnostic_status::ok;
    check.detail = *tool + ": " + std::to_string(result.gpus.size()) + " GPU(s)";
    for (std::size_t i = 0; i < result.gpus.size(); ++i) {
        const smi_gpu& gpu = result.gpus[i];
        check.detail +=
            (i == 0 ? ": " : "; ") + gpu.name + ", driver " + gpu.driver + ", " + gpu.memory;
        if (gpu.capability) {
            check.detail += ", compute capability " + gpu.capability->to_string();
        }
    }
    if (result.gpus.empty()) {
        check.status = diagnostic_status::warning;
        check.detail += " (the query answered but listed none)";
        check.fix = "check that the GPU is seated and powered, and `lspci | grep -i nvidia`";
    }
    return result;
}

// --- the driver, the runtime, the GPUs ---------------------------------------------------

std::string kernel_module_version()
{
    std::ifstream file("/proc/driver/nvidia/version");
    std::string line;
    if (!file || !std::getline(file, line)) {
        return {};
    }
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  570.124.06  Thu Feb ...": the version is
    // the first word after "Kernel Module".
    const std::size_t at = line.find("Kernel Module");
    std::istringstream words(at == std::string::npos ? line : line.substr(at + 13));
    std::string version;
    words >> version;
    return version.empty() ? line : version;
}

diagnostic check_driver(const std::vector<smi_gpu>& smi_gpus)
{
    diagnostic check;
    check.name = driver_check;
    const driver_info driver = driver_version();
    const cuda_version runtime = effective_runtime();
    const std::string module = kernel_module_version();
    const std::string version = !smi_gpus.empty() ? smi_gpus.front().driver : module;
    if (!driver.installed()) {
        check.status = diagnostic_status::error;
        check.detail = "no NVIDIA driver: the CUDA runtime could not load libcuda.so (driver API "
                       "version 0)";
        if (module.empty()) {
            check.detail += " and no NVIDIA kernel module is loaded (/proc/driver/nvidia/version "
                            "does not exist); this program uses the CUDA " +
                            runtime.to_string() + " runtime, which needs " + driver_needed(runtime);
            check.fix = install_driver_fix(runtime);
        } else {
            check.detail += " although the NVIDIA kernel module " + module + " is loaded";
            check.fix = "install the user-space part of driver " + module +
                        " (libcuda.so.1) or put its folder on the library path; in a container, "
                        "run with the NVIDIA Container Toolkit (`docker run --gpus all`)";
        }
        return check;
    }
    check.detail = "driver " + (version.empty() ? std::string("(version unknown)") : version) +
                   " supports CUDA up to " + driver.supported_cuda.to_string() +
                   "; this program uses the CUDA " + runtime.to_string() + " runtime";
    if (driver.supported_cuda.major < runtime.major) {
        check.status = diagnostic_status::error;
        check.detail += ": the driver is too old (cudaErrorInsufficientDriver)";
        check.fix = "update the driver to " + driver_needed(runtime) +
                    " (https://www.nvidia.com/drivers), or build cudagap with a CUDA " +
                    std::to_string(driver.supported_cuda.major) + " toolkit";
    } else if (driver.supported_cuda < runtime) {
        check.status = diagnostic_status::warning;
        check.detail += ": runs through CUDA's minor-version compatibility, but the driver cannot "
                        "JIT-compile PTX from this newer toolkit (GPUs without machine code in "
                        "the build fail with cudaErrorUnsupportedPtxVersion)";
        check.fix = "update the driver to " + driver_needed(runtime);
    } else {
        check.status = diagnostic_status::ok;
        check.detail += ": new enough";
    }
    return check;
}

diagnostic check_runtime()
{
    diagnostic check;
    check.name = runtime_check;
    const cuda_version loaded = runtime_version();
    const cuda_version compiled = compiled_runtime_version();
    const std::optional<std::string> path = loaded_library_path("libcudart");
    check.detail = "CUDA runtime " + loaded.to_string() + " loaded " +
                   (path ? "from " + *path : std::string("(linked statically)")) +
                   ", cudagap compiled against " + compiled.to_string();
    if (!loaded.known()) {
        check.status = diagnostic_status::error;
        check.detail += "; cudaRuntimeGetVersion failed";
        check.fix = "reinstall the CUDA " + compiled.to_string() +
                    " runtime (libcudart) and make sure the loader finds it";
        return check;
    }
    if (loaded.major != compiled.major || loaded < compiled) {
        check.status = diagnostic_status::error;
        check.detail += ": the loaded runtime is older than the one cudagap was built for";
        check.fix = "make the loader find the CUDA " + compiled.to_string() +
                    " runtime first (LD_LIBRARY_PATH), or rebuild cudagap against CUDA " +
                    loaded.to_string();
        return check;
    }
    const diagnostic copies = check_library_copies(runtime_check, {"libcudart"}, "CUDA_HOME");
    check.status = copies.status == diagnostic_status::warning ? diagnostic_status::warning
                                                               : diagnostic_status::ok;
    if (check.status == diagnostic_status::warning) {
        check.detail += "; " + copies.detail;
        check.fix = copies.fix;
    }
    return check;
}

std::string visible_devices_text()
{
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return visible == nullptr ? std::string()
                              : std::string(" (CUDA_VISIBLE_DEVICES='") + visible + "')";
}

struct gpus_result {
    diagnostic check;
    std::vector<std::pair<std::string, compute_capability>> gpus; // label, capability
};

gpus_result check_gpus(const std::vector<smi_gpu>& smi_gpus, bool driver_problem)
{
    gpus_result result;
    diagnostic& check = result.check;
    check.name = gpus_check;
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        check.status = diagnostic_status::error;
        check.detail = "cudaGetDeviceCount: " + cuda_status_name(status) + " (" +
                       std::to_string(static_cast<int>(status)) +
                       "): " + cuda_status_message(status) + visible_devices_text();
        check.fix = hint_for(status);
        if (driver_problem) {
            check.caused_by = driver_check;
        }
    } else if (count == 0) {
        check.status = diagnostic_status::error;
        check.detail = "CUDA works but sees no GPU" + visible_devices_text();
        check.fix = hint_for(cudaErrorNoDevice);
    } else {
        check.status = diagnostic_status::ok;
        check.detail = std::to_string(count) + " GPU(s)" + visible_devices_text();
        for (int id = 0; id < count; ++id) {
            try {
                const device_properties props = device(id).properties();
                check.detail += (id == 0 ? ": " : "; ") + std::to_string(id) + ": " + props.name +
                                ", compute capability " + props.capability.to_string() + " (" +
                                std::string(props.capability.architecture_name()) + "), " +
                                format_bytes(props.total_memory_bytes);
                result.gpus.emplace_back("GPU " + std::to_string(id) + " (" + props.name + ")",
                                         props.capability);
            } catch (const error& e) {
                check.status = diagnostic_status::error;
                check.detail += "; GPU " + std::to_string(id) + " cannot be queried: " + e.what();
                check.fix = e.hint();
            }
        }
    }
    if (!smi_gpus.empty() && static_cast<std::size_t>(count) < smi_gpus.size()) {
        check.detail += "; nvidia-smi lists " + std::to_string(smi_gpus.size()) +
                        " GPU(s), CUDA can use " + std::to_string(count);
        if (check.status == diagnostic_status::ok) {
            check.status = diagnostic_status::info;
        }
    }
    // When CUDA cannot enumerate the GPUs, nvidia-smi's capabilities still predict kernel images.
    if (result.gpus.empty()) {
        for (std::size_t i = 0; i < smi_gpus.size(); ++i) {
            if (smi_gpus[i].capability) {
                result.gpus.emplace_back("nvidia-smi GPU " + std::to_string(i) + " (" +
                                             smi_gpus[i].name + ")",
                                         *smi_gpus[i].capability);
            }
        }
    }
    return result;
}

std::string built_for_text()
{
    const std::string list = built_cuda_architectures_string();
    if (list.empty()) {
        return "this build of cudagap has no kernels";
    }
    std::string sass;
    std::string ptx;
    const auto append = [](std::string& text, const std::string& item) {
        text += text.empty() ? item : ", " + item;
    };
    for (const cuda_architecture& arch : built_cuda_architectures()) {
        const std::string cc = compute_capability::from_int(arch.sm).to_string() + arch.suffix;
        if (arch.has_sass) {
            append(sass, cc);
        }
        if (arch.has_ptx) {
            append(ptx, cc);
        }
    }
    return "this build has machine code for " + (sass.empty() ? std::string("none") : sass) +
           " and PTX for " + (ptx.empty() ? std::string("none") : ptx) +
           " (CMAKE_CUDA_ARCHITECTURES=" + list + ")";
}

diagnostic check_kernel_images(const std::vector<std::pair<std::string, compute_capability>>& gpus)
{
    diagnostic check;
    check.name = kernel_images_check;
    check.detail = built_for_text();
    if (gpus.empty()) {
        check.status = diagnostic_status::skipped;
        check.detail = "no GPU to compare against; " + check.detail;
        return check;
    }
    const std::string built = built_cuda_architectures_string();
    check.status = diagnostic_status::ok;
    for (const auto& [label, cc] : gpus) {
        const std::string sm = std::to_string(cc.as_int());
        check.detail += "; " + label + ", compute capability " + cc.to_string() + ": ";
        switch (kernel_image_for(cc)) {
        case kernel_image::native: check.detail += "machine code fits"; break;
        case kernel_image::not_needed: check.detail += "nothing to load"; break;
        case kernel_image::ptx_jit:
            check.detail += "only PTX fits, so the driver JIT-compiles the kernels at first use "
                            "(a slow first launch, cached afterwards)";
            if (check.status != diagnostic_status::error) {
                check.status = diagnostic_status::warning;
            }
            check.fix = "rebuild with -DCMAKE_CUDA_ARCHITECTURES=\"" + built + ";" + sm +
                        "-real\" for machine code for this GPU";
            break;
        case kernel_image::missing:
            check.detail += "no kernel image fits: kernel launches will fail with "
                            "cudaErrorNoKernelImageForDevice (\"no kernel image is available for "
                            "execution on the device\")";
            check.status = diagnostic_status::error;
            check.fix = "rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + sm + " (or add " + sm +
                        " to the list \"" + built + "\")";
            break;
        }
    }
    return check;
}

// --- the toolkit and other platforms -------------------------------------------------------

std::vector<std::string> toolkit_roots()
{
    std::vector<std::string> roots;
    for (const char* variable : {"CUDA_HOME", "CUDA_PATH", "CUDAToolkit_ROOT"}) {
        if (const std::string root = environment(variable); !root.empty()) {
            roots.push_back(root);
        }
    }
    roots.emplace_back("/usr/local/cuda");
    roots.push_back("/usr/local/cuda-" + compiled_runtime_version().to_string());
    return roots;
}

// nvcc on the search path (@p on_path set), else in the first toolkit folder that has one.
std::optional<std::string> find_nvcc(const std::string& search_path, bool& on_path)
{
    std::optional<std::string> tool = detail::find_tool("nvcc", search_path);
    on_path = tool.has_value();
    if (!tool) {
        for (const std::string& root : toolkit_roots()) {
            if (tool = detail::find_tool("nvcc", root + "/bin"); tool) {
                break;
            }
        }
    }
    return tool;
}

// The last line of `nvcc --version` that names the release, trimmed; empty when none does.
std::string release_line(const std::string& version_text)
{
    std::string release;
    for (const std::string& line : split(version_text, '\n')) {
        if (line.find("release") != std::string::npos) {
            release = trim(line);
        }
    }
    return release;
}

diagnostic check_nvcc(const std::string& search_path, std::chrono::milliseconds timeout)
{
    diagnostic check;
    check.name = nvcc_check;
    bool on_path = false;
    const std::optional<std::string> tool = find_nvcc(search_path, on_path);
    const std::string needed_only = " (needed only to build cudagap or your own CUDA code, not "
                                    "to run cudagap programs)";
    if (!tool) {
        check.status = diagnostic_status::warning;
        check.detail = "nvcc is neither on the search path nor in a CUDA Toolkit folder "
                       "(CUDA_HOME, CUDA_PATH, /usr/local/cuda): the CUDA Toolkit is not installed";
        check.fix = "install the CUDA Toolkit " + compiled_runtime_version().to_string() +
                    " from https://developer.nvidia.com/cuda-downloads" + needed_only;
        return check;
    }
    const detail::tool_output output = detail::run_tool(*tool, {"--version"}, timeout);
    const std::string release = release_line(output.text);
    if (!output.started || output.timed_out || output.exit_code != 0 || release.empty()) {
        check.status = diagnostic_status::warning;
        check.detail = *tool + " --version failed (" + output.describe_failure() +
                       "): " + first_line(output.text);
        check.fix = "reinstall the CUDA Toolkit" + needed_only;
        return check;
    }
    check.detail = release + " at " + *tool;
    // "Cuda compilation tools, release 13.0, V13.0.88": the version follows "release ".
    const std::size_t at = release.find("release ");
    const auto parsed =
        at == std::string::npos
            ? std::nullopt
            : parse_major_minor(release.substr(at + 8, release.find(',', at) - at - 8));
    const cuda_version compiled = compiled_runtime_version();
    if (!on_path) {
        check.status = diagnostic_status::warning;
        check.detail += ", which is not on the search path";
        check.fix = "add " + fs::path(*tool).parent_path().string() + " to PATH" + needed_only;
    } else if (parsed && parsed->first != compiled.major) {
        check.status = diagnostic_status::warning;
        check.detail += "; cudagap was built with CUDA " + compiled.to_string() +
                        ", so code you compile with this nvcc mixes two toolkits";
        check.fix = "put the CUDA " + compiled.to_string() +
                    " toolkit's bin folder first on "
                    "PATH, or rebuild cudagap with -DCUDAToolkit_ROOT=<the toolkit of this nvcc>";
    } else {
        check.status = diagnostic_status::ok;
    }
    return check;
}

diagnostic check_platform(std::string name, const char* tool_name, const std::string& search_path,
                          const std::vector<std::string>& extra_folders, const char* what)
{
    diagnostic check;
    check.name = std::move(name);
    check.status = diagnostic_status::info;
    std::optional<std::string> tool = detail::find_tool(tool_name, search_path);
    for (const std::string& folder : extra_folders) {
        if (!tool) {
            tool = detail::find_tool(tool_name, folder);
        }
    }
    if (tool) {
        check.detail = std::string(what) + " is installed (" + *tool +
                       "); it coexists with "
                       "CUDA, and each platform's programs use only its own GPUs";
    } else {
        check.detail = std::string(tool_name) + " not found: " + what + " is not installed";
    }
    return check;
}

} // namespace

namespace detail {

std::vector<diagnostic> cuda_checks(const std::string& search_path,
                                    std::chrono::milliseconds timeout)
{
    const bool driver_loaded = driver_version().installed();
    std::vector<diagnostic> checks;
    smi_result smi = check_nvidia_smi(search_path, timeout, driver_loaded, is_available());
    checks.push_back(std::move(smi.check));
    checks.push_back(check_driver(smi.gpus));
    const bool driver_problem = checks.back().status == diagnostic_status::error;
    checks.push_back(check_runtime());
    gpus_result gpus = check_gpus(smi.gpus, driver_problem);
    checks.push_back(std::move(gpus.check));
    checks.push_back(check_kernel_images(gpus.gpus));
    checks.push_back(check_nvcc(search_path, timeout));
    return checks;
}

std::vector<diagnostic> platform_checks(const std::string& search_path)
{
    std::vector<std::string> oneapi = {"/opt/intel/oneapi/compiler/latest/bin"};
    if (const std::string root = environment("ONEAPI_ROOT"); !root.empty()) {
        oneapi.insert(oneapi.begin(), root + "/compiler/latest/bin");
    }
    return {check_platform("ROCm", "rocm-smi", search_path, {"/opt/rocm/bin"}, "AMD ROCm"),
            check_platform("Intel oneAPI", "sycl-ls", search_path, oneapi, "Intel oneAPI (SYCL)")};
}

} // namespace detail

} // namespace gpu::tools
