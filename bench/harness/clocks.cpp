// NVML at run time (clocks.hpp): the clocks and throttle reasons around each case, and the
// driver's own version for the report's header.
#include "clocks.hpp"

#include <dlfcn.h>

#include <array>
#include <cstdio>
#include <string>
#include <utility>

namespace gpu::bench {

namespace {

// The few NVML entry points used, declared here: nvml.h ships with the driver's development
// files, not on every machine that builds cudagap. Their C ABI has been stable since the _v2
// entry points of 2012; the clock-type values are nvmlClockType_t's.
struct nvml_device_opaque;
using nvml_device = nvml_device_opaque*;
using nvml_init_fn = int (*)();
using nvml_shutdown_fn = int (*)();
using nvml_driver_version_fn = int (*)(char*, unsigned);
using nvml_handle_by_pci_fn = int (*)(const char*, nvml_device*);
using nvml_clock_fn = int (*)(nvml_device, int, unsigned*);
using nvml_reasons_fn = int (*)(nvml_device, unsigned long long*);
constexpr int nvml_success = 0;
constexpr int nvml_clock_sm = 1;
constexpr int nvml_clock_mem = 2;

template <class Fn>
Fn symbol(void* library, const char* name)
{
    return reinterpret_cast<Fn>(dlsym(library, name)); // NOLINT: dlsym's documented use
}

std::string hex(std::uint64_t value)
{
    std::array<char, 24> text{};
    std::snprintf(text.data(), text.size(), "0x%llx", static_cast<unsigned long long>(value));
    return text.data();
}

} // namespace

struct clock_monitor::state {
    void* library = nullptr;
    nvml_shutdown_fn shutdown = nullptr;
    nvml_clock_fn clock = nullptr;
    nvml_reasons_fn reasons = nullptr;
    nvml_device device = nullptr;
    std::string why_not;
    std::string driver_version;
};

std::vector<std::string> throttle_reason_names(std::uint64_t mask)
{
    static constexpr std::array<std::pair<std::uint64_t, const char*>, 9> names{{
        {throttle::gpu_idle, "GPU idle"},
        {throttle::applications_clocks, "applications clocks setting"},
        {throttle::sw_power_cap, "SW power cap"},
        {throttle::hw_slowdown, "HW slowdown"},
        {throttle::sync_boost, "sync boost"},
        {throttle::sw_thermal, "SW thermal slowdown"},
        {throttle::hw_thermal, "HW thermal slowdown"},
        {throttle::hw_power_brake, "HW power brake"},
        {throttle::display_clocks, "display clock setting"},
    }};
    std::vector<std::string> out;
    std::uint64_t known = 0;
    for (const auto& [bit, name] : names) {
        known |= bit;
        if ((mask & bit) != 0) {
            out.emplace_back(name);
        }
    }
    for (std::uint64_t bit = 1; bit != 0; bit <<= 1U) {
        if ((mask & bit) != 0 && (known & bit) == 0) {
            out.push_back(hex(bit));
        }
    }
    return out;
}

clock_check check_clocks(const clock_reading& before, const clock_reading& after, double tolerance)
{
    clock_check c{before, after, false, {}};
    if (before.sm_mhz && after.sm_mhz) {
        c.clock_fell = static_cast<double>(*after.sm_mhz) <
                       static_cast<double>(*before.sm_mhz) * (1.0 - tolerance);
    }
    if (after.throttle_reasons) {
        c.throttled_by = throttle_reason_names(*after.throttle_reasons & ~throttle::gpu_idle);
    }
    return c;
}

std::string clock_check::summary() const
{
    if (!before.any() && !after.any()) {
        return "-";
    }
    std::string flags;
    if (clock_fell) {
        flags =
            "SM " + std::to_string(*before.sm_mhz) + "->" + std::to_string(*after.sm_mhz) + " MHz";
    }
    for (const std::string& reason : throttled_by) {
        flags += (flags.empty() ? "" : ", ") + reason;
    }
    if (!flags.empty()) {
        return "FLAGGED: " + flags;
    }
    return after.sm_mhz ? std::to_string(*after.sm_mhz) + " MHz" : std::string("no throttling");
}

clock_monitor::clock_monitor(const std::string& pci_bus_id, const std::string& library)
    : state_(std::make_unique<state>())
{
    state& s = *state_;
    s.library = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (s.library == nullptr) {
        const char* why = dlerror();
        s.why_not = library + " could not be loaded (" + (why != nullptr ? why : "no reason") +
                    "): no NVIDIA driver here";
        return;
    }
    const auto init = symbol<nvml_init_fn>(s.library, "nvmlInit_v2");
    s.shutdown = symbol<nvml_shutdown_fn>(s.library, "nvmlShutdown");
    if (init == nullptr || s.shutdown == nullptr || init() != nvml_success) {
        s.why_not = library + " was loaded but nvmlInit_v2 failed";
        s.shutdown = nullptr;
        dlclose(s.library);
        s.library = nullptr;
        return;
    }
    if (const auto version =
            symbol<nvml_driver_version_fn>(s.library, "nvmlSystemGetDriverVersion")) {
        std::array<char, 96> text{};
        if (version(text.data(), static_cast<unsigned>(text.size())) == nvml_success) {
            s.driver_version = text.data();
        }
    }
    const auto by_pci =
        symbol<nvml_handle_by_pci_fn>(s.library, "nvmlDeviceGetHandleByPciBusId_v2");
    s.clock = symbol<nvml_clock_fn>(s.library, "nvmlDeviceGetClockInfo");
    // The newer name first (drivers from 535 on); the older one stays exported for old tools.
    s.reasons = symbol<nvml_reasons_fn>(s.library, "nvmlDeviceGetCurrentClocksEventReasons");
    if (s.reasons == nullptr) {
        s.reasons = symbol<nvml_reasons_fn>(s.library, "nvmlDeviceGetCurrentClocksThrottleReasons");
    }
    if (pci_bus_id.empty()) {
        s.why_not = "no device to read the clocks of";
    } else if (by_pci == nullptr || s.clock == nullptr) {
        s.why_not = library + " lacks nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetClockInfo";
    } else if (by_pci(pci_bus_id.c_str(), &s.device) != nvml_success) {
        s.device = nullptr;
        s.why_not = "NVML does not know the device at PCI bus id " + pci_bus_id;
    }
}

clock_monitor::~clock_monitor()
{
    if (state_ && state_->library != nullptr) {
        if (state_->shutdown != nullptr) {
            state_->shutdown();
        }
        dlclose(state_->library);
    }
}

bool clock_monitor::available() const noexcept
{
    return state_->device != nullptr;
}

const std::string& clock_monitor::unavailable_reason() const noexcept
{
    return state_->why_not;
}

const std::string& clock_monitor::driver_version() const noexcept
{
    return state_->driver_version;
}

clock_reading clock_monitor::read() const
{
    clock_reading r;
    const state& s = *state_;
    if (s.device == nullptr) {
        return r;
    }
    unsigned mhz = 0;
    if (s.clock(s.device, nvml_clock_sm, &mhz) == nvml_success) {
        r.sm_mhz = static_cast<int>(mhz);
    }
    if (s.clock(s.device, nvml_clock_mem, &mhz) == nvml_success) {
        r.memory_mhz = static_cast<int>(mhz);
    }
    unsigned long long mask = 0;
    if (s.reasons != nullptr && s.reasons(s.device, &mask) == nvml_success) {
        r.throttle_reasons = static_cast<std::uint64_t>(mask);
    }
    return r;
}

} // namespace gpu::bench
