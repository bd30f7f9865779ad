// Device discovery, properties and the current-device guard: the parts with more than one
// CUDA call (the one-call wrappers are inline in device.hpp).
#include <gpu/detail/expects.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>

#include <cstdio>
#include <stdexcept>
#include <string>

namespace gpu {

namespace {

/// Reads an integer attribute of a device, throwing on failure.
int attribute(cudaDeviceAttr which, int device, const char* name)
{
    int value = 0;
    detail::check(cudaDeviceGetAttribute(&value, which, device), name,
                  std::source_location::current());
    return value;
}

} // namespace

std::string unavailable_reason()
{
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status == cudaSuccess && count > 0) {
        return {};
    }
    if (status == cudaSuccess) {
        return "CUDA works but sees no device: " + hint_for(cudaErrorNoDevice);
    }
    static_cast<void>(cudaGetLastError());
    std::string reason = "cudaGetDeviceCount failed with " + cuda_status_name(status) + " (" +
                         std::to_string(static_cast<int>(status)) +
                         "): " + cuda_status_message(status);
    const std::string hint = hint_for(status);
    if (!hint.empty()) {
        reason += "; " + hint;
    } else {
        reason += "; run cudagap-doctor for a full diagnosis";
    }
    return reason;
}

std::string_view compute_capability::architecture_name() const noexcept
{
    switch (major) {
    case 3: return "Kepler";
    case 5: return "Maxwell";
    case 6: return "Pascal";
    case 7: return minor >= 5 ? "Turing" : "Volta";
    case 8: return minor >= 9 ? "Ada" : "Ampere";
    case 9: return "Hopper";
    case 10:
    case 11:
    case 12: return "Blackwell";
    default: return "unknown";
    }
}

std::string compute_capability::to_string() const
{
    return std::to_string(major) + "." + std::to_string(minor);
}

kernel_image kernel_image_for(compute_capability capability)
{
    return kernel_image_for(capability, built_cuda_architectures());
}

kernel_image kernel_image_for(compute_capability capability,
                              const std::vector<cuda_architecture>& built)
{
    if (built.empty()) {
        return kernel_image::not_needed;
    }
    bool ptx_fits = false;
    for (const auto& arch : built) {
        const compute_capability target = compute_capability::from_int(arch.sm);
        // Architecture-specific code (sm_90a) runs only on exactly that capability.
        const bool exact_only = !arch.suffix.empty();
        if (arch.has_sass) {
            const bool fits =
                exact_only ? target == capability
                           : target.major == capability.major && target.minor <= capability.minor;
            if (fits) {
                return kernel_image::native;
            }
        }
        if (arch.has_ptx && (exact_only ? target == capability : target <= capability)) {
            ptx_fits = true;
        }
    }
    return ptx_fits ? kernel_image::ptx_jit : kernel_image::missing;
}

double device_properties::peak_memory_bandwidth_gbps() const noexcept
{
    // Double data rate: two transfers per memory clock, bus width in bits.
    return 2.0 * static_cast<double>(memory_clock_rate_khz) * 1e3 *
           (static_cast<double>(memory_bus_width_bits) / 8.0) / 1e9;
}

device::device(int id) : id_(id)
{
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    if (status != cudaSuccess) {
        detail::throw_error(status, "cudaGetDeviceCount(&count)", std::source_location::current());
    }
    GPU_EXPECTS(id >= 0 && id < count, std::invalid_argument, "gpu::device: ordinal ", id,
                " is out of range: ", count, " device(s) visible, valid ordinals are 0 to ",
                count - 1);
}

device_properties device::properties() const
{
    cudaDeviceProp raw{};
    GPU_CUDA_CHECK(cudaGetDeviceProperties(&raw, id_));
    device_properties props;
    props.id = id_;
    props.name = raw.name;
    props.capability = {raw.major, raw.minor};
    props.total_memory_bytes = raw.totalGlobalMem;
    props.multiprocessor_count = raw.multiProcessorCount;
    props.memory_bus_width_bits = raw.memoryBusWidth;
    props.l2_cache_bytes = raw.l2CacheSize;
    props.shared_memory_per_block = raw.sharedMemPerBlock;
    props.max_threads_per_block = raw.maxThreadsPerBlock;
    props.integrated = raw.integrated != 0;
    props.ecc_enabled = raw.ECCEnabled != 0;
    props.clock_rate_khz =
        attribute(cudaDevAttrClockRate, id_, "cudaDeviceGetAttribute(cudaDevAttrClockRate)");
    props.memory_clock_rate_khz = attribute(cudaDevAttrMemoryClockRate, id_,
                                            "cudaDeviceGetAttribute(cudaDevAttrMemoryClockRate)");
    props.memory_pools_supported =
        attribute(cudaDevAttrMemoryPoolsSupported, id_,
                  "cudaDeviceGetAttribute(cudaDevAttrMemoryPoolsSupported)") != 0;
    char bus_id[32] = {};
    GPU_CUDA_CHECK(cudaDeviceGetPCIBusId(bus_id, static_cast<int>(sizeof bus_id), id_));
    props.pci_bus_id = bus_id;
    return props;
}

compute_capability device::capability() const
{
    return {attribute(cudaDevAttrComputeCapabilityMajor, id_,
                      "cudaDeviceGetAttribute(cudaDevAttrComputeCapabilityMajor)"),
            attribute(cudaDevAttrComputeCapabilityMinor, id_,
                      "cudaDeviceGetAttribute(cudaDevAttrComputeCapabilityMinor)")};
}

bool device::can_access_peer(device peer) const
{
    if (peer == *this) {
        return false;
    }
    int can = 0;
    GPU_CUDA_CHECK(cudaDeviceCanAccessPeer(&can, id_, peer.id()));
    return can != 0;
}

void device::enable_peer_access(device peer) const
{
    GPU_EXPECTS(peer != *this, std::invalid_argument, "gpu::device::enable_peer_access: device ",
                id_, " is its own peer; a device reaches its own memory without peer access");
    GPU_EXPECTS(can_access_peer(peer), std::invalid_argument,
                "gpu::device::enable_peer_access: device ", id_, " cannot reach device ", peer.id(),
                " directly (cudaDeviceCanAccessPeer says no: no NVLink or PCIe peer path); copy "
                "through the host, or with cudaMemcpyPeerAsync, which stages when it must");
    const scoped_device on(*this);
    const cudaError_t status = cudaDeviceEnablePeerAccess(peer.id(), 0);
    if (status == cudaErrorPeerAccessAlreadyEnabled) {
        static_cast<void>(cudaGetLastError()); // CUDA keeps it as the last error: not ours
        return;
    }
    GPU_CUDA_CHECK(status);
}

namespace detail {
void throw_device_mismatch(const char* operation, const char* first, int first_device,
                           const char* second, int second_device)
{
    throw std::invalid_argument(std::string(operation) + ": " + first + " belongs to device " +
                                std::to_string(first_device) + " and " + second + " to device " +
                                std::to_string(second_device) +
                                "; CUDA needs both on one device here: make them on the same "
                                "device (gpu::stream(device), gpu::event(device))");
}
} // namespace detail

std::vector<device> devices()
{
    std::vector<device> all;
    const int count = device_count();
    all.reserve(static_cast<std::size_t>(count));
    for (int id = 0; id < count; ++id) {
        all.emplace_back(id);
    }
    return all;
}

scoped_device::scoped_device(device dev) : previous_(device::current().id())
{
    if (dev.id() != previous_) {
        dev.make_current();
    }
}

scoped_device::scoped_device(device dev, std::nothrow_t) noexcept
{
    int previous = -1;
    status_ = cudaGetDevice(&previous);
    if (status_ == cudaSuccess && previous != dev.id()) {
        status_ = cudaSetDevice(dev.id());
    }
    if (status_ != cudaSuccess) {
        static_cast<void>(cudaGetLastError()); // the caller decides; no error left behind
        return;
    }
    previous_ = previous;
}

scoped_device::~scoped_device()
{
    if (previous_ < 0) {
        return;
    }
    int now = -1;
    if (cudaGetDevice(&now) == cudaSuccess && now == previous_) {
        return;
    }
    detail::report_destroy_failure("scoped_device: cudaSetDevice (restoring the previous device)",
                                   cudaSetDevice(previous_));
}

} // namespace gpu
