// The header of every report: where the benchmark ran. Clocks and the driver's own version come
// from NVML, loaded at run time (clocks.hpp) so that the harness builds and runs where the
// driver, and with it libnvidia-ml, is absent; everything else from the CUDA runtime.
#include "harness.hpp"
#include "clocks.hpp"

#include <gpu/device.hpp>
#include <gpu/version.hpp>

#include <unistd.h>

#include <array>
#include <chrono>
#include <ctime>
#include <exception>
#include <string>
#include <thread>

namespace gpu::bench {

namespace {

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
            env.l2_cache_bytes = props.l2_cache_bytes;
            env.pci_bus_id = props.pci_bus_id;
        } catch (const std::exception& e) {
            env.gpu_available = false;
            env.skip_reason = std::string("the device's properties could not be read: ") + e.what();
        }
    }
    // The driver's version is worth reporting even when the GPU part is skipped.
    const clock_monitor nvml(env.pci_bus_id);
    env.driver_version = nvml.driver_version();
    const clock_reading now = nvml.read();
    env.sm_clock_mhz = now.sm_mhz;
    env.memory_clock_mhz = now.memory_mhz;
    env.clocks_note = nvml.available() ? std::string() : nvml.unavailable_reason();
    return env;
}

} // namespace gpu::bench
