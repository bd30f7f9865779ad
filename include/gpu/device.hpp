/// @file device.hpp
/// @brief Whether CUDA is usable, the devices, their properties and capabilities, the current
/// device and a guard that restores it.
#pragma once

#include <gpu/error.hpp>
#include <gpu/version.hpp>

#include <cuda_runtime_api.h>

#include <compare>
#include <cstddef>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace gpu {

/// @brief The number of visible CUDA devices (`cudaGetDeviceCount`); 0 when CUDA is
/// unavailable. Never throws.
[[nodiscard]] inline int device_count() noexcept
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess) {
        static_cast<void>(cudaGetLastError()); // not sticky: clear it for the next call
        return 0;
    }
    return count;
}

/// @brief Whether at least one CUDA device can be used from this process. Never throws.
[[nodiscard]] inline bool is_available() noexcept
{
    return device_count() > 0;
}

/// @brief Why CUDA cannot be used, with the fix; empty when `is_available()`.
///
/// On a machine with the CUDA toolkit but no NVIDIA driver this names the missing driver, the
/// CUDA runtime version that needs one, and the driver branch to install.
[[nodiscard]] std::string unavailable_reason();

/// @brief A GPU's compute capability (e.g. 9.0 for Hopper), ordered, with derived features.
struct compute_capability {
    int major = 0; ///< e.g. 9
    int minor = 0; ///< e.g. 0

    /// @brief Decodes the integer form used by `CMAKE_CUDA_ARCHITECTURES`: 86 is 8.6.
    /// @throws std::invalid_argument when @p sm is negative
    [[nodiscard]] static constexpr compute_capability from_int(int sm)
    {
        if (sm < 0) {
            throw std::invalid_argument("gpu::compute_capability::from_int: negative compute "
                                        "capability " +
                                        std::to_string(sm));
        }
        return {sm / 10, sm % 10};
    }

    /// @brief Whether the capability has an integer form: `major >= 0`, `minor` in [0, 9] (8.10
    /// would read as 9.0) and `major * 10 + minor` fits an `int`. Every real GPU's does.
    [[nodiscard]] constexpr bool has_int_form() const noexcept
    {
        return major >= 0 && minor >= 0 && minor <= 9 &&
               major <= (std::numeric_limits<int>::max() - minor) / 10;
    }

    /// @brief The integer form, e.g. 86 for 8.6.
    /// @throws std::invalid_argument naming major and minor when `has_int_form()` is false (a
    /// capability read from a tool's garbled output, say), instead of overflowing
    [[nodiscard]] constexpr int as_int() const
    {
        if (!has_int_form()) {
            throw std::invalid_argument("gpu::compute_capability::as_int: " + to_string() +
                                        " (major " + std::to_string(major) + ", minor " +
                                        std::to_string(minor) +
                                        ") has no integer form: minor must be 0 to 9 and "
                                        "neither may be negative or beyond int");
        }
        return major * 10 + minor;
    }

    /// @brief Capabilities order by major, then minor.
    friend constexpr auto operator<=>(const compute_capability&,
                                      const compute_capability&) = default;

    /// @brief Tensor cores (FP16 matrix multiply-accumulate): Volta (7.0) and newer.
    [[nodiscard]] constexpr bool has_tensor_cores() const noexcept { return major >= 7; }

    /// @brief TF32 tensor-core math for FP32 data: Ampere (8.0) and newer.
    [[nodiscard]] constexpr bool has_tf32() const noexcept { return major >= 8; }

    /// @brief BF16 tensor-core math: Ampere (8.0) and newer.
    [[nodiscard]] constexpr bool has_bf16() const noexcept { return major >= 8; }

    /// @brief FP8 tensor-core math: Ada (8.9), Hopper (9.0) and newer.
    [[nodiscard]] constexpr bool has_fp8() const noexcept
    {
        return *this >= compute_capability{8, 9};
    }

    /// @brief The architecture's marketing name: Volta, Turing, Ampere, Ada, Hopper, Blackwell.
    [[nodiscard]] std::string_view architecture_name() const noexcept;

    /// @brief `major.minor`, e.g. `8.6`.
    [[nodiscard]] std::string to_string() const;
};

/// @brief How a device would get the library's kernels.
enum class kernel_image {
    native,     ///< machine code for a compatible architecture is embedded
    ptx_jit,    ///< only PTX fits: the driver compiles it at first use (slow start, works)
    missing,    ///< nothing fits: launches fail with "no kernel image is available"
    not_needed, ///< the library was built without kernels
};

/// @brief Predicts, before any launch, whether this library's kernels run on @p capability.
///
/// Machine code built for `X.y` runs on `X.z` with `z >= y` (same major); PTX built for a
/// capability runs on that capability and every newer one through the driver's JIT compiler.
[[nodiscard]] kernel_image kernel_image_for(compute_capability capability);

/// @brief `kernel_image_for` against an explicit architecture list (see
/// `parse_cuda_architectures`); what the library's own check uses.
[[nodiscard]] kernel_image kernel_image_for(compute_capability capability,
                                            const std::vector<cuda_architecture>& built);

/// @brief A snapshot of a device's properties, read once.
///
/// CUDA 13 removed several fields from `cudaDeviceProp` (clock rates among them), so the
/// clocks and the memory-pool flag are read as device attributes.
struct device_properties {
    int id = -1;                             ///< the device ordinal
    std::string name{};                      ///< e.g. `NVIDIA H200`
    compute_capability capability{};         ///< e.g. 9.0
    std::size_t total_memory_bytes = 0;      ///< global memory
    int multiprocessor_count = 0;            ///< streaming multiprocessors (SMs)
    int clock_rate_khz = 0;                  ///< peak SM clock
    int memory_clock_rate_khz = 0;           ///< peak memory clock
    int memory_bus_width_bits = 0;           ///< global memory bus width
    int l2_cache_bytes = 0;                  ///< L2 cache size
    std::size_t shared_memory_per_block = 0; ///< default shared memory per block
    int max_threads_per_block = 0;           ///< largest block
    bool memory_pools_supported = false;     ///< `cudaMallocAsync` and memory pools work
    bool integrated = false;                 ///< shares memory with the host (Jetson and such)
    bool ecc_enabled = false;                ///< error-correcting memory is on
    std::string pci_bus_id{};                ///< e.g. `0000:3B:00.0`

    /// @brief Theoretical peak memory bandwidth in GB/s (10^9 bytes per second) from the
    /// memory clock and bus width (double data rate); an upper bound, not a measurement.
    [[nodiscard]] double peak_memory_bandwidth_gbps() const noexcept;
};

/// @brief Free and total memory of a device, in bytes.
struct memory_info {
    std::size_t free_bytes = 0;  ///< free now, as the driver reports it
    std::size_t total_bytes = 0; ///< the device's total

    /// @brief `total_bytes - free_bytes`: used by every process and the driver.
    [[nodiscard]] constexpr std::size_t used_bytes() const noexcept
    {
        return total_bytes - free_bytes;
    }

    /// @brief Used share in [0, 1]; 0 when the total is unknown.
    [[nodiscard]] constexpr double used_fraction() const noexcept
    {
        return total_bytes == 0
                   ? 0.0
                   : static_cast<double>(used_bytes()) / static_cast<double>(total_bytes);
    }
};

class device;

namespace detail {
/// @brief The device CUDA itself named (from `cudaGetDevice`, `cudaStreamGetDevice` or a
/// recorded ordinal): no range check, so no `cudaGetDeviceCount` on the hot path.
[[nodiscard]] device device_from_cuda(int id) noexcept;
} // namespace detail

/// @brief A CUDA device, by ordinal. A cheap value type; it owns nothing.
class device {
public:
    /// @brief Names device @p id.
    /// @throws std::invalid_argument when @p id is not in [0, device_count()), with both values
    /// @throws gpu::cuda_error when CUDA is unavailable (with the reason as hint)
    explicit device(int id);

    /// @brief The device current on the calling thread (`cudaGetDevice`).
    [[nodiscard]] static device current()
    {
        int id = 0;
        GPU_CUDA_CHECK(cudaGetDevice(&id));
        return device(id, unchecked{});
    }

    /// @brief The device ordinal.
    [[nodiscard]] int id() const noexcept { return id_; }

    /// @brief Reads the properties (a few dozen driver queries; cache the result when hot).
    [[nodiscard]] device_properties properties() const;

    /// @brief The compute capability alone (two attribute queries).
    [[nodiscard]] compute_capability capability() const;

    /// @brief Free and total memory now (`cudaMemGetInfo` on this device).
    [[nodiscard]] memory_info memory() const;

    /// @brief Makes this the current device of the calling thread (`cudaSetDevice`).
    void make_current() const { GPU_CUDA_CHECK(cudaSetDevice(id_)); }

    /// @brief Waits until all work on this device has finished (`cudaDeviceSynchronize` on it).
    void synchronize() const;

    /// @brief Whether kernels and copies on this device can read and write @p peer's memory
    /// directly (`cudaDeviceCanAccessPeer`); false for the device itself, which needs no peer
    /// access. Asking enables nothing: see `enable_peer_access`.
    /// @throws gpu::cuda_error when CUDA is unavailable
    [[nodiscard]] bool can_access_peer(device peer) const;

    /// @brief Lets this device's kernels and copies reach @p peer's memory directly
    /// (`cudaDeviceEnablePeerAccess`, run with this device current and the caller's device
    /// restored after). Idempotent: a peer already enabled is not an error (CUDA's sticky
    /// `cudaErrorPeerAccessAlreadyEnabled` is cleared). Access is one-way: enable it on both
    /// devices for both directions.
    /// @throws std::invalid_argument when @p peer is this device, or when `can_access_peer` is
    /// false (both devices named)
    /// @throws gpu::cuda_error when CUDA refuses for another reason
    void enable_peer_access(device peer) const;

    /// @brief Devices are equal when their ordinals are.
    friend bool operator==(const device&, const device&) = default;

private:
    friend device detail::device_from_cuda(int id) noexcept;
    struct unchecked {};
    device(int id, unchecked) noexcept : id_(id) {}
    int id_;
};

/// @brief Every visible device; empty when CUDA is unavailable. Never throws for "no driver".
[[nodiscard]] std::vector<device> devices();

/// @brief The current device of the calling thread (same as `device::current()`).
[[nodiscard]] inline device current_device()
{
    return device::current();
}

namespace detail {
inline device device_from_cuda(int id) noexcept
{
    return device(id, device::unchecked{});
}

/// @brief Throws `std::invalid_argument` naming @p operation and both objects' devices.
[[noreturn]] void throw_device_mismatch(const char* operation, const char* first, int first_device,
                                        const char* second, int second_device);

/// @brief Refuses two objects that must be on one device and are not (`throw_device_mismatch`).
inline void require_same_device(const char* operation, const char* first, int first_device,
                                const char* second, int second_device)
{
    if (first_device != second_device) {
        throw_device_mismatch(operation, first, first_device, second, second_device);
    }
}
} // namespace detail

/// @brief Makes @p dev the current device for the lifetime of the guard, then restores the
/// device that was current before.
///
/// The one way cudagap changes the current device (never a bare `cudaSetDevice`): every
/// operation that CUDA ties to a device (creating a stream, event or library handle, recording,
/// allocating, freeing, trimming, memsets) runs inside one, on the device its object recorded,
/// so that the caller's current device is the same after the call as before. It costs one
/// `cudaGetDevice` when the device is already current (bench/overhead measures the round trip).
class scoped_device {
public:
    /// @brief Saves the current device and switches to @p dev.
    /// @throws gpu::cuda_error when CUDA is unavailable or @p dev cannot be made current
    explicit scoped_device(device dev);
    /// @brief The same without throwing, for destructors and error paths: a failure to read or
    /// switch the device is kept in `status()` and nothing is restored at the end.
    scoped_device(device dev, std::nothrow_t) noexcept;
    /// @brief Switches back to the device saved at construction (errors are reported, not thrown).
    ~scoped_device();
    scoped_device(const scoped_device&) = delete;
    scoped_device& operator=(const scoped_device&) = delete;

    /// @brief `cudaSuccess` when @p dev is current; otherwise why the guard could not switch
    /// (always `cudaSuccess` for the throwing constructor).
    [[nodiscard]] cudaError_t status() const noexcept { return status_; }

private:
    int previous_ = -1; ///< -1: nothing to restore
    cudaError_t status_ = cudaSuccess;
};

inline memory_info device::memory() const
{
    const scoped_device guard(*this);
    memory_info info;
    GPU_CUDA_CHECK(cudaMemGetInfo(&info.free_bytes, &info.total_bytes));
    return info;
}

inline void device::synchronize() const
{
    const scoped_device guard(*this);
    GPU_CUDA_CHECK(cudaDeviceSynchronize());
}

} // namespace gpu
