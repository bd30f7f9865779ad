/// @file json.hpp
/// @brief JSON for the core's reports (versions, device properties, profiles, memory and its
/// ledger, timing statistics) through nlohmann-json, for scripts and plots. The tools' reports
/// (diagnosis, VRAM advice and usage) have theirs in `<gpu/tools/json.hpp>`.
///
/// A component of its own (`cudagap::json`, `find_package(cudagap COMPONENTS json)`), header
/// only: the JSON library is a dependency of the programs that print JSON, not of everyone who
/// links `cudagap::core`, so the core's headers and binaries never mention it. The functions
/// follow nlohmann's `to_json` convention, found by argument-dependent lookup:
///
/// @code
/// #include <gpu/json.hpp>
/// nlohmann::json props = gpu::current_device().properties();   // or: gpu::to_json(j, props);
/// std::cout << gpu::to_json_text(props) << '\n';
/// @endcode
#pragma once

#include <gpu/allocation_stats.hpp>
#include <gpu/device.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_pool.hpp>
#include <gpu/profile.hpp>
#include <gpu/timing.hpp>
#include <gpu/version.hpp>

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace gpu {

/// @brief `"0.2.0"`.
inline void to_json(nlohmann::json& j, const semantic_version& version)
{
    j = version.to_string();
}

/// @brief `"13.0"`, or null for the 0.0 that means "none" (no driver).
inline void to_json(nlohmann::json& j, const cuda_version& version)
{
    j = version.known() ? nlohmann::json(version.to_string()) : nlohmann::json(nullptr);
}

/// @brief `"9.0"`.
inline void to_json(nlohmann::json& j, const compute_capability& capability)
{
    j = capability.to_string();
}

/// @brief `{"supported_cuda": "13.0" or null, "installed": bool, "reason": string or null}`.
inline void to_json(nlohmann::json& j, const driver_info& driver)
{
    j = {{"supported_cuda", driver.supported_cuda},
         {"installed", driver.installed()},
         {"reason",
          driver.reason.empty() ? nlohmann::json(nullptr) : nlohmann::json(driver.reason)}};
}

/// @brief The properties as an object (memory in bytes, clocks in kHz, bandwidth in GB/s).
inline void to_json(nlohmann::json& j, const device_properties& props)
{
    j = {{"id", props.id},
         {"name", props.name},
         {"compute_capability", props.capability},
         {"architecture", std::string(props.capability.architecture_name())},
         {"total_memory_bytes", props.total_memory_bytes},
         {"multiprocessors", props.multiprocessor_count},
         {"clock_rate_khz", props.clock_rate_khz},
         {"memory_clock_rate_khz", props.memory_clock_rate_khz},
         {"memory_bus_width_bits", props.memory_bus_width_bits},
         {"peak_memory_bandwidth_gbps", props.peak_memory_bandwidth_gbps()},
         {"l2_cache_bytes", props.l2_cache_bytes},
         {"memory_pools_supported", props.memory_pools_supported},
         {"integrated", props.integrated},
         {"ecc_enabled", props.ecc_enabled},
         {"pci_bus_id", props.pci_bus_id},
         {"tensor_cores", props.capability.has_tensor_cores()},
         {"tf32", props.capability.has_tf32()},
         {"bf16", props.capability.has_bf16()}};
}

/// @brief `"fp32"`, `"fp16"` or `"bf16"`.
inline void to_json(nlohmann::json& j, preferred_precision precision)
{
    j = std::string(to_string(precision));
}

/// @brief Every setting of the profile; an unset seed is null.
inline void to_json(nlohmann::json& j, const profile& p)
{
    j = {{"name", p.name},
         {"synchronous_checks", p.synchronous_checks},
         {"check_numerics", p.check_numerics},
         {"allow_tf32", p.allow_tf32},
         {"precision", p.precision},
         {"benchmark", p.benchmark},
         {"deterministic", p.deterministic},
         {"seed", p.seed ? nlohmann::json(*p.seed) : nlohmann::json(nullptr)},
         {"nvtx_ranges", p.nvtx_ranges}};
}

/// @brief `{"current_bytes", "peak_bytes", "live_allocations", "total_allocations"}`.
inline void to_json(nlohmann::json& j, const allocation_stats& stats)
{
    j = {{"current_bytes", stats.current_bytes},
         {"peak_bytes", stats.peak_bytes},
         {"live_allocations", stats.live_allocations},
         {"total_allocations", stats.total_allocations}};
}

/// @brief The pool's counters, with `cached_bytes` (reserved but unused).
inline void to_json(nlohmann::json& j, const pool_info& pool)
{
    j = {{"supported", pool.supported},
         {"reserved_bytes", pool.reserved_bytes},
         {"used_bytes", pool.used_bytes},
         {"cached_bytes", pool.cached_bytes()},
         {"reserved_peak_bytes", pool.reserved_peak_bytes},
         {"release_threshold_bytes", pool.release_threshold_bytes}};
}

/// @brief `{"free_bytes", "total_bytes", "used_bytes", "used_fraction"}`.
inline void to_json(nlohmann::json& j, const memory_info& memory)
{
    j = {{"free_bytes", memory.free_bytes},
         {"total_bytes", memory.total_bytes},
         {"used_bytes", memory.used_bytes()},
         {"used_fraction", memory.used_fraction()}};
}

/// @brief `{"tag", "category", "current_bytes", "peak_bytes", "live_allocations",
/// "total_allocations", "measured_bytes"}`.
inline void to_json(nlohmann::json& j, const memory_ledger_row& row)
{
    j = {{"tag", row.name},
         {"category", std::string(to_string(row.category))},
         {"current_bytes", row.current_bytes},
         {"peak_bytes", row.peak_bytes},
         {"live_allocations", row.live_allocations},
         {"total_allocations", row.total_allocations},
         {"measured_bytes", row.measured_bytes}};
}

/// @brief The ledger's table of a device: its rows, the tracked totals, and the device's lines
/// (`device_read` false, with the `reason`, and nulls, where the device was not read).
inline void to_json(nlohmann::json& j, const memory_ledger_snapshot& snapshot)
{
    const device_memory_reading& r = snapshot.reading;
    const auto when_read = [&](auto value) {
        return r.known ? nlohmann::json(value) : nlohmann::json(nullptr);
    };
    const std::optional<long long> untracked = snapshot.untracked_bytes();
    j = {{"device", snapshot.device},
         {"rows", snapshot.rows},
         {"tracked_bytes", snapshot.tracked_bytes},
         {"tracked_peak_bytes", snapshot.tracked_peak_bytes},
         {"refused_frees", snapshot.refused_frees},
         {"device_read", r.known},
         {"reason", r.known ? nlohmann::json(nullptr) : nlohmann::json(r.reason)},
         {"total_bytes", when_read(r.total_bytes)},
         {"used_bytes", when_read(r.total_bytes - r.free_bytes)},
         {"pool_unused_bytes", when_read(snapshot.pool_unused_bytes())},
         {"untracked_bytes", untracked ? nlohmann::json(*untracked) : nlohmann::json(nullptr)}};
}

/// @brief The statistics in milliseconds, with `relative_spread` and the samples.
inline void to_json(nlohmann::json& j, const statistics& stats)
{
    j = {{"count", stats.count},
         {"min_ms", stats.min_ms},
         {"median_ms", stats.median_ms},
         {"mean_ms", stats.mean_ms},
         {"max_ms", stats.max_ms},
         {"stddev_ms", stats.stddev_ms},
         {"relative_spread", stats.relative_spread()},
         {"samples_ms", stats.samples_ms}};
}

/// @brief @p value as JSON text that is always valid: bytes that are not UTF-8 (a path, an
/// environment variable or a tool's output in another encoding, which a diagnosis quotes) become
/// U+FFFD, where `nlohmann::json::dump()` would throw and leave a script with no report at all.
/// @param value the document
/// @param indent spaces per level; a negative value prints one line
[[nodiscard]] inline std::string to_json_text(const nlohmann::json& value, int indent = 2)
{
    return value.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

} // namespace gpu
