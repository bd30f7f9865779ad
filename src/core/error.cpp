// The messages and hints of cudagap's CUDA errors: the common errors (docs/doctor.md's table),
// turned into fixes that name the values involved.
#include "capture_hints.hpp"

#include <gpu/allocation_stats.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/version.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

namespace gpu {

namespace {

std::string compose_what(const std::string& api, const std::string& status_name, long long code,
                         const std::string& message, const std::string& hint)
{
    std::string text = api + ": " + status_name + " (" + std::to_string(code) + "): " + message;
    if (!hint.empty()) {
        text += "\nhint: " + hint;
    }
    return text;
}

std::string visible_devices_note()
{
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    if (visible == nullptr) {
        return "CUDA_VISIBLE_DEVICES is not set";
    }
    return std::string("CUDA_VISIBLE_DEVICES is '") + visible + "'";
}

std::string driver_hint()
{
    const cuda_version runtime = runtime_version();
    const driver_info driver = driver_version();
    const std::string branch = minimum_driver_for(runtime);
    const std::string needed =
        "a driver that supports CUDA " + runtime.to_string() +
        (branch.empty() ? std::string() : " (branch " + branch + " or newer)");
    if (!driver.installed()) {
        return "no NVIDIA driver is loaded (the CUDA driver API reports version 0) but this "
               "program uses the CUDA " +
               runtime.to_string() + " runtime: install " + needed +
               " from https://www.nvidia.com/drivers, check that `nvidia-smi` lists the GPU, "
               "then run cudagap-doctor";
    }
    return "the installed NVIDIA driver supports CUDA up to " + driver.supported_cuda.to_string() +
           " but this program uses the CUDA " + runtime.to_string() + " runtime: update to " +
           needed +
           " (https://www.nvidia.com/drivers), or build cudagap with a CUDA toolkit no "
           "newer than " +
           driver.supported_cuda.to_string();
}

std::string architectures_text(const std::vector<cuda_architecture>& built)
{
    std::string sass;
    std::string ptx;
    for (const auto& arch : built) {
        const std::string name = std::to_string(arch.sm) + arch.suffix;
        if (arch.has_sass) {
            sass += (sass.empty() ? "sm_" : ", sm_") + name;
        }
        if (arch.has_ptx) {
            ptx += (ptx.empty() ? "compute_" : ", compute_") + name;
        }
    }
    std::string text = sass.empty() ? std::string("no machine code") : sass;
    if (!ptx.empty()) {
        text += " and PTX " + ptx;
    }
    return text;
}

std::string no_kernel_image_hint(int device)
{
    const std::string built = built_cuda_architectures_string();
    std::string text = "this build of cudagap has kernels for " +
                       architectures_text(built_cuda_architectures()) +
                       " (CMAKE_CUDA_ARCHITECTURES=" + (built.empty() ? "none" : built) + ")";
    int major = 0;
    int minor = 0;
    if (device >= 0 &&
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess) {
        const compute_capability cc{major, minor};
        return text + " but device " + std::to_string(device) + " is compute capability " +
               cc.to_string() +
               ": rebuild with -DCMAKE_CUDA_ARCHITECTURES=" + std::to_string(cc.as_int()) +
               " (or add it to the list)";
    }
    static_cast<void>(cudaGetLastError());
    return text + ", which does not include this GPU: rebuild with "
                  "-DCMAKE_CUDA_ARCHITECTURES=<its compute capability without the dot, e.g. 86>; "
                  "`nvidia-smi --query-gpu=compute_cap --format=csv` prints it";
}

// The advice when no holder's own fix applies.
constexpr std::string_view generic_oom_fix =
    ": reduce the batch or problem size, use FP16/BF16 where precision allows, free buffers you "
    "no longer need; memory held by other processes shows in nvidia-smi";

// requested == 0 means "not known" (an allocation failure seen only by its status).
std::string oom_hint_with_numbers(std::size_t requested, std::size_t free_bytes,
                                  std::size_t total_bytes, int device)
{
    std::string text = requested == 0 ? std::string("the device is out of memory")
                                      : "requested " + format_bytes(requested);
    if (device >= 0) {
        text += " on device " + std::to_string(device);
    }
    if (total_bytes != 0) {
        text += " with " + format_bytes(free_bytes) + " free of " + format_bytes(total_bytes);
    }
    if (device >= 0) {
        // Who holds the device's memory, by tag, with the fix for the largest holder.
        const std::string holders = out_of_memory_holders(device, requested);
        if (!holders.empty() && holders.find("; fix") != std::string::npos) {
            return text + "; " + holders + "; memory held by other processes shows in nvidia-smi";
        }
        if (!holders.empty()) { // nothing tracked holds memory: no holder's fix to give
            return text + "; " + holders + std::string(generic_oom_fix);
        }
    }
    // No device to read (or no memory to format the ledger with): the process's totals.
    const allocation_stats stats = allocation_statistics();
    text += "; cudagap holds " + format_bytes(stats.current_bytes) + " in " +
            std::to_string(stats.live_allocations) + " buffers (peak " +
            format_bytes(stats.peak_bytes) + ")";
    return text + std::string(generic_oom_fix);
}

// An out-of-memory status seen without the request (a library's allocation failed): the
// numbers of @p device, which need not be the current one (cudaMemGetInfo alone reads the
// current device's).
std::string out_of_memory_hint(int device)
{
    memory_info memory;
    if (device >= 0) {
        try {
            memory = gpu::device(device).memory();
        } catch (const std::exception&) {
            memory = {}; // the numbers are a courtesy; the hint must still be given
        }
    }
    return oom_hint_with_numbers(0, memory.free_bytes, memory.total_bytes, device);
}

constexpr std::string_view sticky_hint =
    "the CUDA context is now unusable: every later CUDA call in this process fails the same "
    "way, so the process must restart; to find the faulting kernel, run with "
    "CUDA_LAUNCH_BLOCKING=1 or under `compute-sanitizer --tool memcheck`";

// The hints that read nothing from the machine: one row per status.
struct status_hint {
    cudaError_t status;
    std::string_view hint;
};

constexpr status_hint fixed_hints[] = {
    {cudaErrorUnsupportedPtxVersion,
     "the driver is older than the compiler that produced this PTX: update the NVIDIA driver, "
     "or build machine code for this GPU with -DCMAKE_CUDA_ARCHITECTURES=<compute "
     "capability>-real"},
    {cudaErrorInitializationError,
     "CUDA could not initialise the driver: check `nvidia-smi` and the kernel log "
     "(`dmesg | grep -i nvidia`), then run cudagap-doctor"},
    {cudaErrorStubLibrary,
     "a stub libcuda.so is loaded instead of the driver's: remove the toolkit's lib64/stubs "
     "folder from LD_LIBRARY_PATH"},
    {cudaErrorDevicesUnavailable,
     "the GPU is busy or in exclusive-process mode: see `nvidia-smi -q -d COMPUTE` and the "
     "processes nvidia-smi lists"},
    {cudaErrorSystemDriverMismatch,
     "the NVIDIA kernel module and the user-space driver have different versions: reboot after "
     "a driver update, or reinstall the driver"},
    {cudaErrorCompatNotSupportedOnDevice,
     "the CUDA forward-compatibility package in use does not support this GPU: remove it from "
     "LD_LIBRARY_PATH or update the driver instead"},
    {cudaErrorLaunchOutOfResources,
     "the kernel asks for more registers or threads per block than the device has: launch with "
     "smaller blocks"},
    {cudaErrorInvalidResourceHandle,
     "a stream, event or other handle was already destroyed or belongs to another device: check "
     "object lifetimes (a moved-from owner holds no handle)"},
    {cudaErrorCudartUnloading,
     "the CUDA runtime is shutting down (process exit): destroy CUDA objects before main "
     "returns, not in static destructors"},
};

// The row of fixed_hints for @p status, or nothing.
std::string_view fixed_hint(cudaError_t status) noexcept
{
    for (const status_hint& row : fixed_hints) {
        if (row.status == status) {
            return row.hint;
        }
    }
    return {};
}
} // namespace

error::error(std::string api, std::string status_name, long long code, std::string message,
             std::string hint, int device, std::source_location where)
    : std::runtime_error(compose_what(api, status_name, code, message, hint)),
      details_(std::make_shared<const details>(details{std::move(api), std::move(status_name), code,
                                                       std::move(message), std::move(hint), device,
                                                       where}))
{}

cuda_error::cuda_error(cudaError_t status, std::string api, std::string hint, int device,
                       std::source_location where)
    : status_error(std::move(api), cuda_status_name(status), static_cast<long long>(status),
                   cuda_status_message(status), std::move(hint), device, where)
{}

bool cuda_error::is_sticky() const noexcept
{
    return gpu::is_sticky(status());
}

out_of_memory::out_of_memory(std::string api, std::size_t requested_bytes, std::size_t free_bytes,
                             std::size_t total_bytes, int device, std::source_location where)
    : cuda_error(cudaErrorMemoryAllocation, std::move(api),
                 oom_hint_with_numbers(requested_bytes, free_bytes, total_bytes, device), device,
                 where),
      requested_(requested_bytes), free_(free_bytes), total_(total_bytes)
{}

std::string cuda_status_name(cudaError_t status)
{
    const char* name = cudaGetErrorName(status);
    std::string text = name == nullptr ? std::string() : std::string(name);
    if (text.empty() || text == "unrecognized error code") {
        return "cudaError(" + std::to_string(static_cast<int>(status)) + ")";
    }
    return text;
}

std::string cuda_status_message(cudaError_t status)
{
    const char* message = cudaGetErrorString(status);
    return message == nullptr ? std::string("unknown CUDA status") : std::string(message);
}

bool is_sticky(cudaError_t status) noexcept
{
    switch (static_cast<int>(status)) {
    case 226: // cudaErrorContained
    case 700: // cudaErrorIllegalAddress
    case 702: // cudaErrorLaunchTimeout
    case 710: // cudaErrorAssert
    case 714: // cudaErrorHardwareStackError
    case 715: // cudaErrorIllegalInstruction
    case 716: // cudaErrorMisalignedAddress
    case 717: // cudaErrorInvalidAddressSpace
    case 718: // cudaErrorInvalidPc
    case 719: // cudaErrorLaunchFailure
    case 721: // cudaErrorTensorMemoryLeak
    case 810: // cudaErrorMpsClientTerminated
    case 911: // cudaErrorExternalDevice
        return true;
    default: return false;
    }
}

std::string hint_for(cudaError_t status, int device)
{
    if (is_sticky(status)) {
        return std::string(sticky_hint);
    }
    if (std::string capture = detail::capture_hint(status); !capture.empty()) {
        return capture; // stream capture and graph update: capture.cpp names the calls
    }
    switch (status) {
    case cudaErrorMemoryAllocation: return out_of_memory_hint(device);
    case cudaErrorInsufficientDriver: return driver_hint();
    case cudaErrorNoDevice:
        return "no CUDA-capable GPU is visible to this process (" + visible_devices_note() +
               "): check that `nvidia-smi` lists a GPU, then run cudagap-doctor";
    case cudaErrorInvalidDevice:
        return "device ordinal out of range: " + std::to_string(device_count()) +
               " device(s) visible (" + visible_devices_note() + ")";
    case cudaErrorNoKernelImageForDevice: return no_kernel_image_hint(device);
    default: return std::string(fixed_hint(status));
    }
}

std::string format_bytes(std::size_t bytes)
{
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    double value = static_cast<double>(bytes);
    std::size_t unit = 0;
    while (value >= 1024.0 && unit + 1 < std::size(units)) {
        value /= 1024.0;
        ++unit;
    }
    char text[32];
    if (unit == 0) {
        std::snprintf(text, sizeof text, "%zu B", bytes);
    } else {
        std::snprintf(text, sizeof text, "%.2f %s", value, units[unit]);
    }
    return text;
}

namespace detail {

int current_device_or_unknown() noexcept
{
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        return -1;
    }
    return device;
}

template void throw_error<cudaError_t>(cudaError_t, const char*, std::source_location,
                                       std::string_view);

void throw_out_of_memory(const char* api, std::size_t requested_bytes, std::source_location where)
{
    static_cast<void>(cudaGetLastError());
    const int device = current_device_or_unknown();
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    if (cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        free_bytes = 0;
        total_bytes = 0;
    }
    throw out_of_memory(api, requested_bytes, free_bytes, total_bytes, device, where);
}

void report_destroy_failure(std::string_view what, std::string_view status_name,
                            long long code) noexcept
{
    static std::atomic<bool> reported{false};
    if (reported.exchange(true)) {
        return;
    }
    std::fprintf(stderr,
                 "cudagap: %.*s failed in a destructor: %.*s (%lld); the resource may have "
                 "leaked (reported once per process)\n",
                 static_cast<int>(what.size()), what.data(), static_cast<int>(status_name.size()),
                 status_name.data(), code);
}

} // namespace detail
} // namespace gpu
