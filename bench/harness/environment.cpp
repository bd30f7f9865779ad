// The header of every report: where the benchmark ran. Clocks and the driver's own version come
// from NVML, loaded at run time (dlopen) so that the harness builds and runs where the driver,
// and with it libnvidia-ml, is absent; everything else from the CUDA runtime through cudagap.
#include "harness.hpp"

#include <gpu/device.hpp>
#include <gpu/version.hpp>

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>
#include <exception>
#include <string>
#include <thread>

namespace gpu::bench {

namespace {

// The few NVML entry points used, declared here because the toolkit does not ship nvml.h
// everywhere (it is in the driver's development files). Their C ABI has been stable since the
// _v2 entry points of 2012; the clock-type values are NVML's nvmlClockType_t.
struct nvml_device_opaque;
using nvml_device = nvml_device_opaque*;
using nvml_init_fn = int (*)();
using nvml_shutdown_fn = int (*)();
using nvml_driver_version_fn = int (*)(char*, unsigned);
using nvml_handle_by_pci_fn = int (*)(const char*, nvml_device*);
using nvml_clock_fn = int (*)(nvml_device, int, unsigned*);
constexpr int nvml_success = 0;
constexpr int nvml_clock_sm = 1;
constexpr int nvml_clock_mem = 2;

struct nvml_readings {
    std::string driver_version;
    std::optional<int> sm_clock_mhz;
    std::optional<int> memory_clock_mhz;
};

template <class Fn>
Fn symbol(void* library, const char* name)
{
    return reinterpret_cast<Fn>(dlsym(library, name)); // NOLINT: dlsym's documented use
}

// Reads what NVML offers; every part is optional (no driver, no permission, old driver).
nvml_readings read_nvml(const std::string& pci_bus_id)
{
    nvml_readings out;
    void* library = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
        return out;
    }
    const auto init = symbol<nvml_init_fn>(library, "nvmlInit_v2");
    const auto shutdown = symbol<nvml_shutdown_fn>(library, "nvmlShutdown");
    if (init == nullptr || shutdown == nullptr || init() != nvml_success) {
        dlclose(library);
        return out;
    }
    if (const auto version =
            symbol<nvml_driver_version_fn>(library, "nvmlSystemGetDriverVersion")) {
        std::array<char, 96> text{};
        if (version(text.data(), static_cast<unsigned>(text.size())) == nvml_success) {
            out.driver_version = text.data();
        }
    }
    const auto by_pci = symbol<nvml_handle_by_pci_fn>(library, "nvmlDeviceGetHandleByPciBusId_v2");
    const auto clock = symbol<nvml_clock_fn>(library, "nvmlDeviceGetClockInfo");
    nvml_device device = nullptr;
    if (!pci_bus_id.empty() && by_pci != nullptr && clock != nullptr &&
        by_pci(pci_bus_id.c_str(), &device) == nvml_success) {
        unsigned mhz = 0;
        if (clock(device, nvml_clock_sm, &mhz) == nvml_success) {
            out.sm_clock_mhz = static_cast<int>(mhz);
        }
        if (clock(device, nvml_clock_mem, &mhz) == nvml_success) {
            out.memory_clock_mhz = static_cast<int>(mhz);
        }
    }
    shutdown();
    dlclose(library);
    return out;
}

std::string utc_now()
{
    const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
    std::tm parts{};
    gmtime_r(&now, &parts);
    std::array<char, 32> text{};
    const std::size_t length =
        std::strftime(text.data(), text.size(), "%Y-%m-%dT%H:%M:%SZ", &parts);
    return std::string(text.data(), length);
}

std::string host_name()
{
    std::array<char, 256> text{};
    if (gethostname(text.data(), text.size() - 1) != 0) {
        return "unknown";
    }
    return text.data();
}

} // namespace

environment environment::probe(bool cpu_only)
{
    environment env;
    env.date_utc = utc_now();
    env.host = host_name();
    env.cpu_threads = std::thread::hardware_concurrency();
    env.cudagap_version = library_version().to_string();
    env.cuda_runtime = runtime_version().to_string();
    env.driver_cuda = gpu::driver_version().supported_cuda.to_string();

    std::string pci_bus_id;
    if (cpu_only) {
        env.skip_reason = "--cpu-only was given, so the GPU part was not run";
    } else if (!is_available()) {
        env.skip_reason = unavailable_reason();
    } else {
        try {
            const device_properties props = current_device().properties();
            env.gpu_available = true;
            env.device_name = props.name;
            env.capability = props.capability.to_string();
            env.multiprocessors = props.multiprocessor_count;
            env.memory_bytes = props.total_memory_bytes;
            env.max_sm_clock_mhz = props.clock_rate_khz / 1000;
            env.max_memory_clock_mhz = props.memory_clock_rate_khz / 1000;
            env.peak_memory_bandwidth_gbps = props.peak_memory_bandwidth_gbps();
            env.ecc_enabled = props.ecc_enabled;
            pci_bus_id = props.pci_bus_id;
        } catch (const std::exception& e) {
            env.gpu_available = false;
            env.skip_reason = std::string("the device's properties could not be read: ") + e.what();
        }
    }
    // The driver's version is worth reporting even when the GPU part is skipped.
    const nvml_readings nvml = read_nvml(pci_bus_id);
    env.driver_version = nvml.driver_version;
    env.sm_clock_mhz = nvml.sm_clock_mhz;
    env.memory_clock_mhz = nvml.memory_clock_mhz;
    return env;
}

} // namespace gpu::bench
