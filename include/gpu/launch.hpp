/// @file launch.hpp
/// @brief Launching your own kernels from plain C++: `gpu::launch_config` (grid, block, dynamic
/// shared memory), the device's limits it is checked against, and `gpu::launch(stream, config,
/// kernel, args...)` over `cudaLaunchKernel`, with the arguments checked against the kernel's
/// parameter types at compile time.
///
/// The kernel itself lives in a `.cu` file that nvcc compiles; that file hands out a pointer to
/// it, and the C++ side launches through the pointer, so no triple-chevron launch (and no nvcc)
/// is needed where the launch is written (examples/custom_kernel is the whole pattern):
/// @code
/// // kernels.hpp, shared by both sides
/// using scale_kernel = void (*)(float factor, float* data, std::size_t n);
/// scale_kernel scale_entry(); // kernels.cu (nvcc) returns its global function `scale`
/// // main.cpp (any C++20 compiler)
/// const gpu::launch_config config = gpu::filling_config(dev, scale_entry(), n);
/// gpu::launch(stream, config, scale_entry(), 2.0f, data.data(), n);
/// @endcode
#pragma once

#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace gpu {

/// @brief Three extents, as CUDA's `dim3`, for grids and blocks. Unset extents are 1.
struct dims3 {
    std::uint32_t x = 1; ///< the fastest-varying extent
    std::uint32_t y = 1; ///< the second extent
    std::uint32_t z = 1; ///< the slowest extent

    /// @brief `x * y * z`, without overflow (each extent fits 32 bits).
    [[nodiscard]] constexpr std::uint64_t volume() const noexcept
    {
        return std::uint64_t{x} * y * z;
    }

    /// @brief Extents are equal one by one.
    friend constexpr bool operator==(const dims3&, const dims3&) = default;

    /// @brief `(x, y, z)`, for messages.
    [[nodiscard]] std::string to_string() const;
};

/// @brief How a kernel is launched: the grid of blocks, the threads of each block, and the
/// dynamic shared memory each block gets (the third value of a triple-chevron launch). Plain data.
struct launch_config {
    dims3 grid{};                         ///< blocks in the grid
    dims3 block{};                        ///< threads in each block
    std::size_t dynamic_shared_bytes = 0; ///< `extern __shared__` bytes per block

    /// @brief Fields compare equal one by one.
    friend constexpr bool operator==(const launch_config&, const launch_config&) = default;

    /// @brief e.g. `grid (264, 1, 1) x block (256, 1, 1), 0 B dynamic shared memory`.
    [[nodiscard]] std::string to_string() const;
};

/// @brief What a device allows a launch: the values `check` compares a `launch_config` with.
struct launch_limits {
    int device = -1;                              ///< the device they were read from
    std::uint32_t max_threads_per_block = 0;      ///< `cudaDevAttrMaxThreadsPerBlock`
    dims3 max_block{0, 0, 0};                     ///< `cudaDevAttrMaxBlockDim{X,Y,Z}`
    dims3 max_grid{0, 0, 0};                      ///< `cudaDevAttrMaxGridDim{X,Y,Z}`
    std::size_t shared_bytes_per_block = 0;       ///< without opt-in (48 KiB on every GPU)
    std::size_t shared_bytes_per_block_optin = 0; ///< the most a kernel may opt in to

    /// @brief Reads @p device's limits (six attribute queries; `gpu::launch` reads them once
    /// per device and keeps them).
    /// @throws gpu::cuda_error when CUDA is unavailable or @p device does not exist
    [[nodiscard]] static launch_limits of(int device);
};

/// @brief Checks @p config against @p limits: no extent is 0, the block's threads and each of
/// its extents, each grid extent and the dynamic shared memory are within the device's limits.
/// @throws std::invalid_argument naming the value, the limit, the device and what to do
void check(const launch_config& config, const launch_limits& limits);

/// @brief Lets @p kernel use up to @p bytes of dynamic shared memory per block
/// (`cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize)`): needed beyond 48 KiB,
/// up to `launch_limits::shared_bytes_per_block_optin`. Set on the current device's context.
/// @throws gpu::cuda_error when CUDA refuses (e.g. beyond the opt-in limit)
template <class... Params>
void allow_dynamic_shared_memory(void (*kernel)(Params...), std::size_t bytes)
{
    GPU_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void*>(kernel),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize,
                                        static_cast<int>(bytes)));
}

namespace detail {
/// @brief Checks @p config against the limits of @p stream's device (`stream_ref::device()`;
/// the limits read once per device), launches @p kernel with @p arguments (`cudaLaunchKernel`)
/// and, when that fails, throws with the configuration and the kernel's own limits (threads,
/// shared memory, registers) named.
/// @param arguments one pointer per kernel parameter, to a value of exactly its type (null
/// for a kernel without parameters)
void launch_kernel(stream_ref stream, const launch_config& config, const void* kernel,
                   void** arguments);

/// @brief Takes the address of each converted argument and launches.
template <class Tuple, std::size_t... Index>
void launch_converted(stream_ref stream, const launch_config& config, const void* kernel,
                      Tuple& converted, std::index_sequence<Index...> /*indices*/)
{
    void* pointers[] = {static_cast<void*>(&std::get<Index>(converted))...};
    launch_kernel(stream, config, kernel, pointers);
}
} // namespace detail

/// @brief Whether `gpu::launch` takes @p Args for a kernel of parameters @p Params: as many
/// arguments as parameters, each convertible to its parameter's type.
template <class Kernel, class... Args>
inline constexpr bool kernel_accepts = false;

/// @brief The case of a kernel pointer: the counts match and each argument converts.
template <class... Params, class... Args>
inline constexpr bool kernel_accepts<void (*)(Params...), Args...> = [] {
    if constexpr (sizeof...(Params) != sizeof...(Args)) {
        return false;
    } else {
        return (std::is_convertible_v<Args&&, std::decay_t<Params>> && ...);
    }
}();

/// @brief Launches @p kernel on @p stream with @p config, as a triple-chevron launch of it
/// would, from plain C++.
///
/// The arguments are checked at compile time against the kernel's parameters (the same number,
/// each convertible), then converted to the parameter types before their addresses are taken,
/// so that `cudaLaunchKernel` copies values of exactly the kernel's types: an `int` given for a
/// `std::size_t` parameter is widened here, never read as 8 bytes of a 4-byte int. The
/// configuration is checked against the stream's device (`stream_ref::device()`) first.
/// Stream-ordered and asynchronous; usable inside a stream capture (the launch becomes a kernel
/// node).
/// @throws std::invalid_argument when @p config exceeds the device's limits (naming them)
/// @throws gpu::cuda_error when the launch fails; the hint names the configuration and the
/// kernel's own limits
template <class... Params, class... Args>
void launch(stream_ref stream, const launch_config& config, void (*kernel)(Params...),
            Args&&... args)
{
    static_assert(sizeof...(Params) == sizeof...(Args),
                  "gpu::launch: the kernel takes a different number of arguments");
    static_assert(kernel_accepts<void (*)(Params...), Args...>,
                  "gpu::launch: an argument does not convert to the kernel's parameter type");
    const void* entry = reinterpret_cast<const void*>(kernel);
    if constexpr (sizeof...(Params) == 0) {
        detail::launch_kernel(stream, config, entry, nullptr);
    } else {
        std::tuple<std::decay_t<Params>...> converted(std::forward<Args>(args)...);
        detail::launch_converted(stream, config, entry, converted,
                                 std::index_sequence_for<Params...>{});
    }
}

} // namespace gpu
