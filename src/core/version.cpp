// Versions of cudagap, the CUDA runtime and driver, and the GPU architectures of this build.
#include <gpu/version.hpp>

#include "parse.hpp"

#include <algorithm>
#include <cctype>
#include <optional>
#include <stdexcept>
#include <string>

#ifndef GPU_BUILT_CUDA_ARCHITECTURES
#error "the build must define GPU_BUILT_CUDA_ARCHITECTURES (CMAKE_CUDA_ARCHITECTURES, or empty)"
#endif

namespace gpu {

std::string semantic_version::to_string() const
{
    return std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

std::string cuda_version::to_string() const
{
    if (!known()) {
        return "none";
    }
    return std::to_string(major) + "." + std::to_string(minor);
}

cuda_version runtime_version() noexcept
{
    int encoded = 0;
    if (cudaRuntimeGetVersion(&encoded) != cudaSuccess || encoded < 0) {
        static_cast<void>(cudaGetLastError());
        return {};
    }
    return cuda_version::from_int(encoded);
}

driver_info driver_version()
{
    int encoded = 0;
    const cudaError_t status = cudaDriverGetVersion(&encoded);
    if (status != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        return {{}, std::string("cudaDriverGetVersion failed: ") + cudaGetErrorName(status)};
    }
    if (encoded <= 0) {
        // The runtime reports 0 when it cannot load libcuda.so, the driver's user-space part.
        return {{},
                "no NVIDIA driver found: the CUDA runtime could not load libcuda.so (install the "
                "NVIDIA driver; `nvidia-smi` should then list the GPU)"};
    }
    return {cuda_version::from_int(encoded), {}};
}

std::string minimum_driver_for(cuda_version version)
{
    // Linux driver branches that first ran each CUDA major version (minor-version compatibility
    // covers the rest of the major), from NVIDIA's CUDA compatibility tables.
    switch (version.major) {
    case 13: return "580";
    case 12: return "525";
    case 11: return "450";
    default: return {};
    }
}

std::vector<cuda_architecture> parse_cuda_architectures(const std::string& list)
{
    std::vector<cuda_architecture> parsed;
    std::size_t begin = 0;
    while (begin <= list.size()) {
        const std::size_t end = std::min(list.find(';', begin), list.size());
        const std::string entry = list.substr(begin, end - begin);
        begin = end + 1;
        if (entry.empty()) {
            continue;
        }
        std::size_t digits = 0;
        while (digits < entry.size() &&
               std::isdigit(static_cast<unsigned char>(entry[digits])) != 0) {
            ++digits;
        }
        if (digits == 0) {
            throw std::invalid_argument(
                "parse_cuda_architectures: entry '" + entry + "' of '" + list +
                "' does not start with a compute capability (expected e.g. 86, 90a-real, "
                "75-virtual; 'all', 'all-major' and 'native' cannot be resolved here)");
        }
        // std::stoi would throw std::out_of_range for more digits than an int holds.
        const std::optional<int> sm =
            detail::parse_decimal(std::string_view(entry).substr(0, digits));
        if (!sm) {
            throw std::invalid_argument("parse_cuda_architectures: entry '" + entry + "' of '" +
                                        list + "' has a compute capability beyond int");
        }
        cuda_architecture arch;
        arch.sm = *sm;
        std::size_t letters = digits;
        while (letters < entry.size() &&
               std::isalpha(static_cast<unsigned char>(entry[letters])) != 0) {
            ++letters;
        }
        arch.suffix = entry.substr(digits, letters - digits);
        const std::string rest = entry.substr(letters);
        if (rest.empty()) {
            arch.has_sass = true;
            arch.has_ptx = true;
        } else if (rest == "-real") {
            arch.has_sass = true;
        } else if (rest == "-virtual") {
            arch.has_ptx = true;
        } else {
            throw std::invalid_argument("parse_cuda_architectures: entry '" + entry + "' of '" +
                                        list + "' has an unknown suffix '" + rest +
                                        "' (expected -real, -virtual or nothing)");
        }
        parsed.push_back(arch);
    }
    return parsed;
}

std::string built_cuda_architectures_string()
{
    // CMake passes the list with commas (a semicolon would split the compile definition).
    std::string list = GPU_BUILT_CUDA_ARCHITECTURES;
    std::replace(list.begin(), list.end(), ',', ';');
    return list;
}

std::vector<cuda_architecture> built_cuda_architectures()
{
    return parse_cuda_architectures(built_cuda_architectures_string());
}

} // namespace gpu
