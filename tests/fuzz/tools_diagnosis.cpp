// Fuzzes gpu::tools::diagnosis (describe, recommendations, counts) and its JSON, with any statuses
// (numbers outside the enumeration too) and any text, invalid UTF-8 included, as a report read
// back from elsewhere or quoting a tool's output could hold. The text report must have a line
// per check with the right tag; the JSON must be valid and carry every check.
#include <gpu/tools/diagnose.hpp>
#include <gpu/tools/json.hpp>

#include "fuzz_support.hpp"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace {

bool known(gpu::tools::diagnostic_status status)
{
    const int value = static_cast<int>(status);
    return value >= 0 && value <= static_cast<int>(gpu::tools::diagnostic_status::error);
}

std::string expected_tag(gpu::tools::diagnostic_status status)
{
    static const char* const tags[] = {"[ OK ]", "[INFO]", "[SKIP]", "[WARN]", "[FAIL]"};
    return known(status) ? tags[static_cast<int>(status)] : "[ ?? ]";
}

void check_text(const gpu::tools::diagnosis& report)
{
    const std::vector<std::string> lines = report.describe();
    fuzz::require(lines.size() >= report.checks.size() + 2, "describe() has too few lines");
    std::size_t at = 0;
    for (const gpu::tools::diagnostic& check : report.checks) {
        fuzz::require(
            at < lines.size() &&
                lines[at] == expected_tag(check.status) + " " + check.name + ": " + check.detail,
            [&] { return "describe() has no right line for the check '" + check.name + "'"; });
        at += 1 + (!check.caused_by.empty() ||
                   (!check.fix.empty() && check.status != gpu::tools::diagnostic_status::ok));
    }
    std::size_t errors = 0;
    std::size_t warnings = 0;
    auto worst = gpu::tools::diagnostic_status::ok;
    for (const gpu::tools::diagnostic& check : report.checks) {
        errors += check.status == gpu::tools::diagnostic_status::error;
        warnings += check.status == gpu::tools::diagnostic_status::warning;
        worst = std::max(worst, check.status);
    }
    fuzz::require(report.count(gpu::tools::diagnostic_status::error) == errors &&
                      report.count(gpu::tools::diagnostic_status::warning) == warnings &&
                      report.worst() == worst && report.healthy() == (errors == 0) &&
                      report.healthy(true) == (errors + warnings == 0),
                  "the counts disagree with the checks");
    const std::vector<std::string> fixes = report.recommendations();
    for (std::size_t i = 0; i < fixes.size(); ++i) {
        fuzz::require(!fixes[i].empty() &&
                          std::find(fixes.begin(), fixes.begin() + static_cast<std::ptrdiff_t>(i),
                                    fixes[i]) == fixes.begin() + static_cast<std::ptrdiff_t>(i),
                      "a recommendation is empty or repeated");
        fuzz::require(std::any_of(report.checks.begin(), report.checks.end(),
                                  [&](const gpu::tools::diagnostic& c) {
                                      return c.fix == fixes[i] &&
                                             (c.status == gpu::tools::diagnostic_status::error ||
                                              c.status == gpu::tools::diagnostic_status::warning);
                                  }),
                      "a recommendation that no failed check gives");
    }
}

void check_json(const gpu::tools::diagnosis& report)
{
    std::string text;
    const bool ok =
        fuzz::accepted([&] { text = gpu::to_json_text(nlohmann::json(report)); }, "to_json_text");
    fuzz::require(ok, "to_json_text refused a diagnosis");
    nlohmann::json back;
    try {
        back = nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception& e) {
        fuzz::finding(std::string("to_json_text wrote JSON that does not parse: ") + e.what());
    }
    fuzz::require(back.at("checks").size() == report.checks.size(), "the JSON lost checks");
    for (std::size_t i = 0; i < report.checks.size(); ++i) {
        const std::string status = back["checks"][i].at("status").get<std::string>();
        fuzz::require(status == gpu::tools::to_string(report.checks[i].status),
                      "a status changed in the JSON");
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzz::input in(data, size);
    gpu::tools::diagnosis report;
    const std::size_t count = in.take<std::uint8_t>() % 12;
    for (std::size_t i = 0; i < count; ++i) {
        gpu::tools::diagnostic check;
        const std::uint8_t status = in.take<std::uint8_t>();
        // Mostly the enumeration, sometimes any int.
        check.status =
            static_cast<gpu::tools::diagnostic_status>(status < 200 ? status % 5 : in.take<int>());
        check.name = in.take_string(40);
        check.detail = in.take_string(120);
        check.fix = in.take_string(60);
        // Often the name of an earlier check, so that root causes are followed.
        const std::uint8_t cause = in.take<std::uint8_t>();
        check.caused_by = cause < 128 || report.checks.empty()
                              ? in.take_string(40)
                              : report.checks[cause % report.checks.size()].name;
        report.checks.push_back(std::move(check));
    }
    check_text(report);
    check_json(report);
    for (const gpu::tools::diagnostic& check : report.checks) {
        fuzz::require(report.find(check.name) != nullptr, "find() misses a check");
    }
    return 0;
}
