/// @file version.hpp
/// @brief Versions: cudagap's own, the CUDA runtime's and driver's, and what the library was
/// built for (the CUDA version it was compiled against and its GPU architectures).
#pragma once

#include <gpu/detail/config.hpp>

#include <cuda_runtime_api.h>

#include <compare>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpu {

/// @brief A `major.minor.patch` version, ordered.
struct semantic_version {
    int major = 0; ///< incompatible changes
    int minor = 0; ///< compatible additions
    int patch = 0; ///< fixes

    /// @brief Versions order by major, then minor, then patch.
    friend constexpr auto operator<=>(const semantic_version&, const semantic_version&) = default;

    /// @brief `major.minor.patch`.
    [[nodiscard]] std::string to_string() const;
};

/// @brief This copy of cudagap's version (the CMake project version).
[[nodiscard]] constexpr semantic_version library_version() noexcept
{
    return {GPU_VERSION_MAJOR, GPU_VERSION_MINOR, GPU_VERSION_PATCH};
}

/// @brief A CUDA version such as 13.0, as CUDA encodes it (`1000 * major + 10 * minor`).
struct cuda_version {
    int major = 0; ///< e.g. 13
    int minor = 0; ///< e.g. 0

    /// @brief Decodes CUDA's integer form: 13000 is 13.0, 12040 is 12.4.
    /// @throws std::invalid_argument when @p encoded is negative
    [[nodiscard]] static constexpr cuda_version from_int(int encoded)
    {
        if (encoded < 0) {
            throw std::invalid_argument("gpu::cuda_version::from_int: negative CUDA version " +
                                        std::to_string(encoded));
        }
        return {encoded / 1000, (encoded % 1000) / 10};
    }

    /// @brief Whether the version has CUDA's integer form: `major >= 0`, `minor` in [0, 99]
    /// and `1000 * major + 10 * minor` fits an `int`.
    [[nodiscard]] constexpr bool has_int_form() const noexcept
    {
        return major >= 0 && minor >= 0 && minor <= 99 &&
               major <= (std::numeric_limits<int>::max() - 10 * minor) / 1000;
    }

    /// @brief CUDA's integer form, e.g. 13000.
    /// @throws std::invalid_argument naming major and minor when `has_int_form()` is false,
    /// instead of overflowing
    [[nodiscard]] constexpr int as_int() const
    {
        if (!has_int_form()) {
            throw std::invalid_argument("gpu::cuda_version::as_int: major " +
                                        std::to_string(major) + ", minor " + std::to_string(minor) +
                                        " has no integer form: minor must be 0 to 99 and "
                                        "neither may be negative or beyond int");
        }
        return major * 1000 + minor * 10;
    }

    /// @brief False for the 0.0 that stands for "none" (no driver).
    [[nodiscard]] constexpr bool known() const noexcept { return major != 0 || minor != 0; }

    /// @brief Versions order by major, then minor.
    friend constexpr auto operator<=>(const cuda_version&, const cuda_version&) = default;

    /// @brief `major.minor`, or `none` for 0.0.
    [[nodiscard]] std::string to_string() const;
};

/// @brief The CUDA runtime version this library was compiled against (`CUDART_VERSION`).
[[nodiscard]] constexpr cuda_version compiled_runtime_version() noexcept
{
    return cuda_version::from_int(CUDART_VERSION);
}

/// @brief The version of the CUDA runtime loaded in this process (`cudaRuntimeGetVersion`).
/// @return 0.0 when it cannot be read (never throws)
[[nodiscard]] cuda_version runtime_version() noexcept;

/// @brief What the installed NVIDIA driver supports, or why nothing is known.
struct driver_info {
    /// The newest CUDA version the driver supports, 0.0 when no driver is installed.
    cuda_version supported_cuda{};
    /// Empty when a driver was found; otherwise why there is none and what to do.
    std::string reason{};

    /// @brief Whether a driver was found.
    [[nodiscard]] bool installed() const noexcept { return supported_cuda.known(); }

    /// @brief Whether the driver can run the loaded CUDA runtime: same or newer major version.
    ///
    /// CUDA's minor-version compatibility lets a 12.2 driver run a 12.4 runtime (without PTX
    /// newer than the driver), so only the major versions are compared here.
    [[nodiscard]] bool supports_runtime() const noexcept
    {
        return installed() && supported_cuda.major >= runtime_version().major;
    }
};

/// @brief Asks the CUDA runtime which CUDA version the installed driver supports.
/// Never throws; on a machine without a driver the version is 0.0 and the reason says so.
[[nodiscard]] driver_info driver_version();

/// @brief The oldest Linux driver branch that runs a CUDA major version under CUDA's
/// minor-version compatibility, e.g. "580" for 13.x and "525" for 12.x.
/// @return the branch number as text, or an empty string for versions this table does not know
[[nodiscard]] std::string minimum_driver_for(cuda_version version);

/// @brief One GPU architecture that the library's kernels were compiled for.
struct cuda_architecture {
    int sm = 0;            ///< compute capability as an integer, e.g. 90 for 9.0
    bool has_sass = false; ///< machine code for this architecture is embedded (`-real`)
    bool has_ptx = false;  ///< PTX for this architecture is embedded (`-virtual`), JIT-able
    std::string suffix{};  ///< architecture-specific feature suffix such as `a`, else empty

    /// @brief Architectures compare equal when every field does.
    friend bool operator==(const cuda_architecture&, const cuda_architecture&) = default;
};

/// @brief Parses a CMake `CMAKE_CUDA_ARCHITECTURES` list such as `75-real;80-real;90`.
///
/// A bare entry (`90`) embeds both machine code and PTX, `-real` only machine code, `-virtual`
/// only PTX. The special values `all`, `all-major` and `native` cannot be resolved here and are
/// rejected.
/// @throws std::invalid_argument for an entry that is not of that form, with the entry
[[nodiscard]] std::vector<cuda_architecture> parse_cuda_architectures(const std::string& list);

/// @brief The architectures this build of cudagap embeds kernels for, as CMake was given them
/// (e.g. `75-real;80-real;86-real;89-real;90`), or an empty string when it has no kernels.
[[nodiscard]] std::string built_cuda_architectures_string();

/// @brief `built_cuda_architectures_string()` parsed; empty when the library has no kernels.
[[nodiscard]] std::vector<cuda_architecture> built_cuda_architectures();

} // namespace gpu
