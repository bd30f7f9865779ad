// The parsers of the tools' answers (see tool_parsers.hpp).
#include "tool_parsers.hpp"

#include "parse.hpp" // the core's parse_decimal

#include <algorithm>
#include <cctype>
#include <sstream>

namespace gpu::tools::detail {

std::string trim(std::string text)
{
    const auto not_space = [](unsigned char c) { return std::isspace(c) == 0; };
    text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
    text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
    return text;
}

std::vector<std::string> split(const std::string& text, char separator)
{
    std::vector<std::string> parts;
    std::string part;
    std::istringstream stream(text);
    while (std::getline(stream, part, separator)) {
        parts.push_back(part);
    }
    return parts;
}

std::optional<std::pair<int, int>> parse_major_minor(std::string_view text) noexcept
{
    const std::size_t dot = text.find('.');
    if (dot == std::string_view::npos) {
        return std::nullopt;
    }
    const std::optional<int> major = gpu::detail::parse_decimal(text.substr(0, dot));
    const std::optional<int> minor = gpu::detail::parse_decimal(text.substr(dot + 1));
    if (!major || !minor) {
        return std::nullopt;
    }
    return std::pair{*major, *minor};
}

std::optional<compute_capability> parse_compute_capability(std::string_view text) noexcept
{
    const auto parsed = parse_major_minor(text);
    if (!parsed) {
        return std::nullopt;
    }
    const compute_capability capability{parsed->first, parsed->second};
    return capability.has_int_form() ? std::optional(capability) : std::nullopt;
}

std::vector<smi_gpu> parse_smi_rows(const std::string& output, bool with_capability)
{
    std::vector<smi_gpu> gpus;
    for (const std::string& line : split(output, '\n')) {
        std::vector<std::string> fields = split(line, ',');
        if (fields.size() < (with_capability ? 4U : 3U)) {
            continue;
        }
        smi_gpu gpu{trim(fields[0]), trim(fields[1]), trim(fields[2]), std::nullopt};
        if (with_capability) {
            gpu.capability = parse_compute_capability(trim(fields[3]));
        }
        gpus.push_back(std::move(gpu));
    }
    return gpus;
}

} // namespace gpu::tools::detail
