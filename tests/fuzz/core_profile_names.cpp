// Fuzzes gpu::profile_from_name and gpu::select_profile: a profile name from a command line or
// CUDAGAP_PROFILE is any text. Exactly the six documented names are accepted; everything else
// is std::invalid_argument.
#include <gpu/profile.hpp>

#include "fuzz_support.hpp"

#include <cstdint>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view name(reinterpret_cast<const char*>(data), size);
    const bool known = name == "development" || name == "dev" || name == "production" ||
                       name == "prod" || name == "testing" || name == "test";
    gpu::profile chosen;
    const bool ok =
        fuzz::accepted([&] { chosen = gpu::profile_from_name(name); }, "profile_from_name");
    fuzz::require(ok == known,
                  [&] { return "profile_from_name('" + std::string(name) + "') is wrong"; });
    if (ok) {
        fuzz::require(name.substr(0, 3) == std::string_view(chosen.name).substr(0, 3), [&] {
            return "'" + std::string(name) + "' chose the profile " + chosen.name;
        });
        static_cast<void>(chosen.describe());
    }
    if (!name.empty()) {
        fuzz::require(
            fuzz::accepted([&] { chosen = gpu::select_profile(name); }, "select_profile") == known,
            "select_profile disagrees with profile_from_name");
    }
    return 0;
}
