/// @file json.hpp
/// @brief JSON for the tools' reports (the diagnosis, VRAM advice and usage) through
/// nlohmann-json, for scripts: what `cudagap-doctor --json` and `cudagap-vram --json` print.
///
/// Present when cudagap was built with nlohmann-json; `cudagap::tools` then links
/// `cudagap::json`, whose `<gpu/json.hpp>` serialises the core's reports these build on. The
/// functions follow nlohmann's `to_json` convention, found by argument-dependent lookup:
///
/// @code
/// #include <gpu/tools/json.hpp>
/// nlohmann::json report = gpu::tools::diagnose(); // or: gpu::tools::to_json(j, diagnosis);
/// std::cout << gpu::to_json_text(report) << '\n';
/// @endcode
#pragma once

#include <gpu/json.hpp>
#include <gpu/tools/diagnose.hpp>
#include <gpu/tools/vram.hpp>

#include <nlohmann/json.hpp>

#include <string>

namespace gpu::tools {

/// @brief `"ok"`, `"info"`, `"skipped"`, `"warning"` or `"error"`.
inline void to_json(nlohmann::json& j, diagnostic_status status)
{
    j = std::string(to_string(status));
}

/// @brief `{"name", "status", "detail", "fix", "caused_by"}`; empty fix and cause are null.
inline void to_json(nlohmann::json& j, const diagnostic& check)
{
    const auto text_or_null = [](const std::string& text) {
        return text.empty() ? nlohmann::json(nullptr) : nlohmann::json(text);
    };
    j = {{"name", check.name},
         {"status", check.status},
         {"detail", check.detail},
         {"fix", text_or_null(check.fix)},
         {"caused_by", text_or_null(check.caused_by)}};
}

/// @brief `{"healthy", "errors", "warnings", "checks": [...], "recommendations": [...]}`.
inline void to_json(nlohmann::json& j, const diagnosis& report)
{
    j = {{"cudagap_version", library_version()},
         {"healthy", report.healthy()},
         {"errors", report.count(diagnostic_status::error)},
         {"warnings", report.count(diagnostic_status::warning)},
         {"checks", report.checks},
         {"recommendations", report.recommendations()}};
}

/// @brief `"under 8 GB"`, ..., `"80 GB and more"`.
inline void to_json(nlohmann::json& j, vram_tier tier)
{
    j = std::string(to_string(tier));
}

/// @brief The advice as an object; an unknown capability is null.
inline void to_json(nlohmann::json& j, const vram_advice& advice)
{
    j = {{"total_bytes", advice.total_bytes},
         {"compute_capability",
          advice.capability ? nlohmann::json(*advice.capability) : nlohmann::json(nullptr)},
         {"tier", advice.tier},
         {"precision", advice.precision},
         {"batch_size", advice.batch_size},
         {"gradient_checkpointing", advice.gradient_checkpointing},
         {"allow_tf32", advice.allow_tf32},
         {"notes", advice.notes}};
}

/// @brief The three views and the warning (null when usage is not high).
inline void to_json(nlohmann::json& j, const vram_usage& usage)
{
    const std::string warning = usage.warning();
    j = {{"device", usage.device_id},
         {"allocated", usage.allocated},
         {"pool", usage.pool},
         {"device_memory", usage.device_memory},
         {"high", usage.high()},
         {"warning", warning.empty() ? nlohmann::json(nullptr) : nlohmann::json(warning)}};
}

/// @brief `{"before", "after", "released_bytes"}`.
inline void to_json(nlohmann::json& j, const vram_clear_result& result)
{
    j = {{"before", result.before},
         {"after", result.after},
         {"released_bytes", result.released_bytes()}};
}

} // namespace gpu::tools

// The old name of these functions (gpu::to_json), kept for one release. A using-declaration, not
// deprecated wrappers: they take gpu::tools types, so a wrapper here and the function that
// argument-dependent lookup finds in gpu::tools would make every unqualified call from gpu
// ambiguous.
namespace gpu {
using tools::to_json;
} // namespace gpu
