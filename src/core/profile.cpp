// The three presets (development, production, testing: docs/profiles.md) and their names.
#include <gpu/profile.hpp>

#include <cctype>
#include <cstdlib>
#include <stdexcept>

namespace gpu {

profile profile::development()
{
    profile p;
    p.name = "development";
    p.synchronous_checks = true;
    p.check_numerics = true;
    p.nvtx_ranges = true;
    return p;
}

profile profile::production()
{
    profile p;
    p.name = "production";
    p.allow_tf32 = true;
    p.precision = preferred_precision::fp16;
    p.benchmark = true;
    return p;
}

profile profile::testing()
{
    profile p;
    p.name = "testing";
    p.deterministic = true;
    p.seed = 42;
    p.nvtx_ranges = true;
    return p;
}

profile profile::defaults()
{
    profile p;
    p.name = "default";
    return p;
}

std::string profile::tag() const
{
    if (name == "development") {
        return "DEV";
    }
    if (name == "production") {
        return "PROD";
    }
    if (name == "testing") {
        return "TEST";
    }
    std::string upper = name;
    for (char& c : upper) {
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    }
    return upper;
}

std::vector<std::string> profile::describe() const
{
    const auto yes_no = [](bool value) { return std::string(value ? "yes" : "no"); };
    return {
        "profile: " + name,
        "synchronous error checks after each launch: " + yes_no(synchronous_checks),
        "NaN/Inf checks of outputs: " + yes_no(check_numerics),
        "TF32 for FP32 data: " + std::string(allow_tf32 ? "allowed" : "off"),
        "preferred precision: " + std::string(to_string(precision)),
        "benchmark algorithms (time the candidates, run the fastest): " + yes_no(benchmark),
        "deterministic results: " + yes_no(deterministic),
        "random seed: " + (seed ? std::to_string(*seed) : std::string("from the clock")),
        "NVTX ranges naming the work: " + yes_no(nvtx_ranges),
    };
}

std::vector<std::string_view> profile_names()
{
    return {"development", "production", "testing"};
}

profile profile_from_name(std::string_view name)
{
    if (name == "development" || name == "dev") {
        return profile::development();
    }
    if (name == "production" || name == "prod") {
        return profile::production();
    }
    if (name == "testing" || name == "test") {
        return profile::testing();
    }
    throw std::invalid_argument("gpu::profile_from_name: unknown profile '" + std::string(name) +
                                "'; the profiles are development, production and testing "
                                "(or dev, prod, test)");
}

std::optional<profile> profile_from_environment()
{
    const char* value = std::getenv("CUDAGAP_PROFILE");
    if (value == nullptr || *value == '\0') {
        return std::nullopt;
    }
    try {
        return profile_from_name(value);
    } catch (const std::invalid_argument& e) {
        throw std::invalid_argument(std::string("CUDAGAP_PROFILE: ") + e.what());
    }
}

profile select_profile(std::string_view command_line)
{
    if (!command_line.empty()) {
        return profile_from_name(command_line);
    }
    return profile_from_environment().value_or(profile::defaults());
}

} // namespace gpu
