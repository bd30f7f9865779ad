// Fuzzes gpu::to_json_text (include/gpu/json.hpp) and the reports it prints: any JSON document
// must print to text that parses back to the same document; any bytes in a string (not UTF-8
// too) must still give valid JSON, the string unchanged when it was valid UTF-8. Timing
// statistics (gpu::summarize) and VRAM advice from any numbers must be consistent and print.
#include <gpu/json.hpp>
#include <gpu/timing.hpp>
#include <gpu/tools/json.hpp>
#include <gpu/tools/vram.hpp>

#include "fuzz_support.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace {

// The reference: well-formed UTF-8 (no overlong forms, surrogates or code points past U+10FFFF).
bool valid_utf8(std::string_view text)
{
    std::size_t i = 0;
    while (i < text.size()) {
        const auto byte = static_cast<unsigned char>(text[i]);
        const std::size_t length = byte < 0x80       ? 1
                                   : byte >> 5 == 6  ? 2
                                   : byte >> 4 == 14 ? 3
                                   : byte >> 3 == 30 ? 4
                                                     : 0;
        if (length == 0 || i + length > text.size()) {
            return false;
        }
        std::uint32_t code = length == 1 ? byte : byte & (0xFFU >> (length + 1));
        for (std::size_t k = 1; k < length; ++k) {
            const auto next = static_cast<unsigned char>(text[i + k]);
            if (next >> 6 != 2) {
                return false;
            }
            code = code << 6 | (next & 0x3FU);
        }
        static constexpr std::uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
        if (code < smallest[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
            return false;
        }
        i += length;
    }
    return true;
}

nlohmann::json print_and_parse(const nlohmann::json& value, int indent)
{
    std::string text;
    fuzz::require(fuzz::accepted([&] { text = gpu::to_json_text(value, indent); }, "to_json_text"),
                  "to_json_text refused a document");
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        fuzz::finding(std::string("to_json_text wrote JSON that does not parse: ") + e.what());
    }
}

void check_strings(const std::string& key, const std::string& value)
{
    const nlohmann::json document = {{key, value}, {"list", {value, key}}};
    const nlohmann::json back = print_and_parse(document, -1);
    if (valid_utf8(value) && valid_utf8(key)) {
        fuzz::require(back == document, "a valid UTF-8 string changed on its way through JSON");
    } else {
        fuzz::require(back.size() == document.size(), "invalid UTF-8 lost a member");
    }
}

void check_statistics(const std::vector<double>& samples)
{
    const bool valid =
        !samples.empty() && std::all_of(samples.begin(), samples.end(),
                                        [](double s) { return std::isfinite(s) && s >= 0.0; });
    gpu::statistics stats;
    const bool ok = fuzz::accepted([&] { stats = gpu::summarize(samples); }, "summarize");
    fuzz::require(ok == valid, "summarize accepted a bad sample or refused good ones");
    if (!ok) {
        return;
    }
    const auto [low, high] = std::minmax_element(samples.begin(), samples.end());
    fuzz::require(stats.count == samples.size() && stats.min_ms == *low && stats.max_ms == *high,
                  "wrong count or range");
    fuzz::require(stats.min_ms <= stats.median_ms && stats.median_ms <= stats.max_ms, [&] {
        return "the median " + std::to_string(stats.median_ms) + " is outside [" +
               std::to_string(stats.min_ms) + ", " + std::to_string(stats.max_ms) + "]";
    });
    fuzz::require(stats.min_ms <= stats.mean_ms && stats.mean_ms <= stats.max_ms, [&] {
        return "the mean " + std::to_string(stats.mean_ms) + " is outside [" +
               std::to_string(stats.min_ms) + ", " + std::to_string(stats.max_ms) + "]";
    });
    // A sample standard deviation of values in [min, max] is at most (max - min) / sqrt(2).
    fuzz::require(std::isfinite(stats.stddev_ms) && stats.stddev_ms >= 0.0 &&
                      stats.stddev_ms <= (stats.max_ms - stats.min_ms) * (1 + 1e-9),
                  [&] {
                      return "the standard deviation " + std::to_string(stats.stddev_ms) +
                             " is not finite or too large";
                  });
    fuzz::require(stats.relative_spread() >= 0.0, "the spread is negative or not a number");
    const nlohmann::json back = print_and_parse(nlohmann::json(stats), 2);
    fuzz::require(back.at("count") == stats.count && back.at("samples_ms").size() == samples.size(),
                  "the statistics lost samples in JSON");
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzz::input in(data, size);
    const std::uint8_t mode = in.take<std::uint8_t>();
    if (mode % 4 == 0) {
        // Samples as raw bits (NaN, infinities, negatives, denormals) or as small counts.
        std::vector<double> samples(in.take<std::uint8_t>() % 16);
        for (double& sample : samples) {
            const auto bits = in.take<std::uint64_t>();
            if (in.take<bool>()) {
                std::memcpy(&sample, &bits, sizeof sample);
            } else {
                sample = static_cast<double>(bits % 1000) * 0.25;
            }
        }
        check_statistics(samples);
        return 0;
    }
    if (mode % 4 == 1) {
        const auto total = static_cast<std::size_t>(in.take_edgy());
        std::optional<gpu::compute_capability> capability;
        if (in.take<bool>()) {
            capability = gpu::compute_capability{in.take<int>(), in.take<int>()};
        }
        const gpu::tools::vram_advice advice = gpu::tools::advise_vram(total, capability);
        static_cast<void>(print_and_parse(nlohmann::json(advice), 2));
        return 0;
    }
    if (mode % 4 == 2) {
        const std::string key = in.take_string(32);
        check_strings(key, std::string(in.rest()));
        return 0;
    }
    // Any document nlohmann accepts prints back to itself.
    const std::string_view text = in.rest();
    nlohmann::json document;
    try {
        document = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception&) {
        return 0;
    }
    fuzz::require(print_and_parse(document, static_cast<int>(mode >> 2) % 4 - 1) == document,
                  "a document did not print back to itself");
    return 0;
}
