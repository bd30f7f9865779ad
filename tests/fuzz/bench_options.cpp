// Fuzzes the bench harness's command-line parsing (gpu::bench::parse_options): any arguments
// (the input split at NUL bytes). Only std::invalid_argument may be thrown, and what is
// accepted must be exactly what a reference reading of the flags gives (the flags with a value
// take it from the next argument or after an '=').
#include "harness.hpp"

#include "fuzz_support.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

// The value of flag `name` at args[i] ("--name V" or "--name=V"), or nothing when it has none.
std::optional<std::string_view> value_of(const std::vector<std::string_view>& args, std::size_t& i,
                                         std::string_view name)
{
    const std::string_view arg = args[i];
    if (arg.size() > name.size() && arg.substr(0, name.size()) == name && arg[name.size()] == '=') {
        const std::string_view v = arg.substr(name.size() + 1);
        return v.empty() ? std::nullopt : std::optional<std::string_view>(v);
    }
    if (i + 1 < args.size() && !args[i + 1].empty() && args[i + 1].substr(0, 2) != "--") {
        return args[++i];
    }
    return std::nullopt;
}

bool names(std::string_view arg, std::string_view name)
{
    return arg == name || (arg.size() > name.size() && arg.substr(0, name.size()) == name &&
                           arg[name.size()] == '=');
}

std::optional<double> positive(std::optional<std::string_view> text)
{
    double v = 0;
    if (!text ||
        std::from_chars(text->data(), text->data() + text->size(), v).ptr !=
            text->data() + text->size() ||
        !std::isfinite(v) || v <= 0) {
        return std::nullopt;
    }
    return v;
}

std::optional<int> count(std::optional<std::string_view> text)
{
    int v = 0;
    const auto [end, error] = text ? std::from_chars(text->data(), text->data() + text->size(), v)
                                   : std::from_chars_result{nullptr, std::errc::invalid_argument};
    if (!text || error != std::errc() || end != text->data() + text->size() || v < 1 ||
        v > gpu::bench::stopping_rule{}.max_samples) {
        return std::nullopt;
    }
    return v;
}

// The reference reading of one flag with a value; false when it is invalid.
bool read_valued(const std::vector<std::string_view>& args, std::size_t& i,
                 gpu::bench::options& expected)
{
    const std::string_view arg = args[i];
    if (names(arg, "--json")) {
        const auto v = value_of(args, i, "--json");
        expected.json_path = v ? std::string(*v) : std::string();
        return v.has_value();
    }
    if (names(arg, "--max-noise")) {
        const auto v = positive(value_of(args, i, "--max-noise"));
        expected.max_noise = v ? std::optional<double>(*v / 100.0) : std::nullopt;
        return v.has_value();
    }
    if (names(arg, "--min-samples")) {
        expected.min_samples = count(value_of(args, i, "--min-samples"));
        return expected.min_samples.has_value();
    }
    if (names(arg, "--time-limit")) {
        expected.time_limit_s = positive(value_of(args, i, "--time-limit"));
        return expected.time_limit_s.has_value();
    }
    return false;
}

} // namespace

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
        } else {
            valid = read_valued(args, i, expected);
        }
    }
    fuzz::require(ok == valid, "parse_options disagrees with the reference on what is valid");
    if (ok) {
        fuzz::require(parsed.quick == expected.quick && parsed.torch == expected.torch &&
                          parsed.cpu_only == expected.cpu_only && parsed.help == expected.help &&
                          parsed.json_path == expected.json_path &&
                          parsed.max_noise == expected.max_noise &&
                          parsed.min_samples == expected.min_samples &&
                          parsed.time_limit_s == expected.time_limit_s,
                      "parse_options read the flags differently from the reference");
    }
    return 0;
}
