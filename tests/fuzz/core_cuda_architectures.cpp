// Fuzzes gpu::parse_cuda_architectures (a CMAKE_CUDA_ARCHITECTURES list) and the kernel-image
// prediction over what it returns. The only exception allowed is the documented
// std::invalid_argument; a list that parses must print back to a list that parses the same.
#include <gpu/device.hpp>
#include <gpu/version.hpp>

#include "fuzz_support.hpp"

#include <cstdint>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzz::input in(data, size);
    const gpu::compute_capability device{in.take<std::uint8_t>() % 16,
                                         in.take<std::uint8_t>() % 10};
    const std::string list(in.rest());
    std::vector<gpu::cuda_architecture> parsed;
    if (!fuzz::accepted([&] { parsed = gpu::parse_cuda_architectures(list); },
                        "parse_cuda_architectures")) {
        return 0;
    }
    std::size_t entries = 0;
    std::string printed;
    for (const gpu::cuda_architecture& arch : parsed) {
        fuzz::require(arch.sm >= 0 && (arch.has_sass || arch.has_ptx),
                      [&] { return "'" + list + "' gave an architecture no list names"; });
        printed += std::to_string(arch.sm) + arch.suffix +
                   (arch.has_sass && arch.has_ptx ? ""
                    : arch.has_sass               ? "-real"
                                                  : "-virtual") +
                   ";";
        static_cast<void>(gpu::compute_capability::from_int(arch.sm).as_int());
        ++entries;
    }
    std::size_t non_empty = 0;
    std::size_t begin = 0;
    while (begin <= list.size()) {
        const std::size_t end = std::min(list.find(';', begin), list.size());
        non_empty += end > begin ? 1 : 0;
        begin = end + 1;
    }
    fuzz::require(entries == non_empty,
                  [&] { return "'" + list + "' has a different number of entries"; });
    std::vector<gpu::cuda_architecture> again;
    fuzz::require(
        fuzz::accepted([&] { again = gpu::parse_cuda_architectures(printed); }, "the re-parse") &&
            again == parsed,
        [&] { return "'" + list + "' printed as '" + printed + "' does not parse the same"; });
    static_cast<void>(gpu::kernel_image_for(device, parsed));
    return 0;
}
