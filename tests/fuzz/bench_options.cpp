// Fuzzes the bench harness's command-line parsing (gpu::bench::parse_options): any arguments
// (the input split at NUL bytes). Only std::invalid_argument may be thrown, and what is
// accepted must be exactly what a reference reading of the flags gives.
#include "harness.hpp"

#include "fuzz_support.hpp"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view all(reinterpret_cast<const char*>(data), size);
    std::vector<std::string_view> args;
    for (std::size_t begin = 0; begin < all.size();) {
        const std::size_t end = std::min(all.find('\0', begin), all.size());
        args.push_back(all.substr(begin, end - begin));
        begin = end + 1;
    }
    gpu::bench::options parsed;
    const bool ok =
        fuzz::accepted([&] { parsed = gpu::bench::parse_options(args); }, "parse_options");

    gpu::bench::options expected;
    bool valid = true;
    for (std::size_t i = 0; i < args.size() && valid; ++i) {
        const std::string_view arg = args[i];
        if (arg == "--quick") {
            expected.quick = true;
        } else if (arg == "--no-torch") {
            expected.torch = false;
        } else if (arg == "--cpu-only") {
            expected.cpu_only = true;
        } else if (arg == "--help" || arg == "-h") {
            expected.help = true;
        } else if (arg == "--json") {
            valid = i + 1 < args.size() && !args[i + 1].empty() && args[i + 1].substr(0, 2) != "--";
            if (valid) {
                expected.json_path = std::string(args[++i]);
            }
        } else if (arg.substr(0, 7) == "--json=") {
            expected.json_path = std::string(arg.substr(7));
            valid = !expected.json_path.empty();
        } else {
            valid = false;
        }
    }
    fuzz::require(ok == valid, "parse_options disagrees with the reference on what is valid");
    if (ok) {
        fuzz::require(parsed.quick == expected.quick && parsed.torch == expected.torch &&
                          parsed.cpu_only == expected.cpu_only && parsed.help == expected.help &&
                          parsed.json_path == expected.json_path,
                      "parse_options read the flags differently from the reference");
    }
    return 0;
}
