// A stand-in for libnvidia-ml.so.1 with the few entry points bench/harness/clocks.cpp loads, so
// that the monitor's run-time loading, its readings and its shutdown are tested where no driver
// is. Each call reads its answer from the environment, so a test changes the clocks between
// two readings:
//   FAKE_NVML_INIT_FAIL=1   nvmlInit_v2 fails
//   FAKE_NVML_PCI           the one PCI bus id it knows (default 0000:3B:00.0)
//   FAKE_NVML_SM_MHZ, FAKE_NVML_MEM_MHZ   the clocks (default 1980 and 2619; "fail": an error)
//   FAKE_NVML_REASONS       the throttle reasons, a number (default 0; "fail": an error)
// Only the older nvmlDeviceGetCurrentClocksThrottleReasons is exported: the monitor must fall
// back to it. fake_nvml_shutdowns() counts nvmlShutdown calls, for the test.
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int shutdowns = 0;
int dummy_device = 0;
constexpr int success = 0;
constexpr int error_unknown = 999;
constexpr int error_not_found = 6;

const char* setting(const char* name, const char* fallback)
{
    const char* value = std::getenv(name);
    return value != nullptr && *value != '\0' ? value : fallback;
}

// The value of `name` as a number into `out`; an error when it says "fail".
int number(const char* name, const char* fallback, unsigned long long* out)
{
    const char* text = setting(name, fallback);
    if (std::strcmp(text, "fail") == 0) {
        return error_unknown;
    }
    *out = std::strtoull(text, nullptr, 0);
    return success;
}

} // namespace

extern "C" {

int nvmlInit_v2()
{
    return std::strcmp(setting("FAKE_NVML_INIT_FAIL", "0"), "1") == 0 ? error_unknown : success;
}

int nvmlShutdown()
{
    ++shutdowns;
    return success;
}

int fake_nvml_shutdowns()
{
    return shutdowns;
}

int nvmlSystemGetDriverVersion(char* text, unsigned length)
{
    std::strncpy(text, "999.88.77-fake", length);
    text[length - 1] = '\0';
    return success;
}

int nvmlDeviceGetHandleByPciBusId_v2(const char* pci, void** device)
{
    if (std::strcmp(pci, setting("FAKE_NVML_PCI", "0000:3B:00.0")) != 0) {
        return error_not_found;
    }
    *device = &dummy_device;
    return success;
}

int nvmlDeviceGetClockInfo(void* device, int type, unsigned* mhz)
{
    if (device != &dummy_device || (type != 1 && type != 2)) {
        return error_unknown;
    }
    unsigned long long value = 0;
    const int status = type == 1 ? number("FAKE_NVML_SM_MHZ", "1980", &value)
                                 : number("FAKE_NVML_MEM_MHZ", "2619", &value);
    *mhz = static_cast<unsigned>(value);
    return status;
}

int nvmlDeviceGetCurrentClocksThrottleReasons(void* device, unsigned long long* reasons)
{
    if (device != &dummy_device) {
        return error_unknown;
    }
    return number("FAKE_NVML_REASONS", "0", reasons);
}

} // extern "C"
