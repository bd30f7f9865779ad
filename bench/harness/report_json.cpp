// The report as JSON (schema cudagap-bench/2, bench/README.md).
#include "harness.hpp"

#include <algorithm>
#include <string>

namespace gpu::bench {

namespace {

template <class T>
nlohmann::json optional_json(const std::optional<T>& value)
{
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json side_json(const std::optional<side_timing>& t)
{
    if (!t) {
        return nullptr;
    }
    return {{"median_ms", t->median_ms},
            {"min_ms", t->min_ms},
            {"max_ms", t->max_ms},
            {"noise", optional_json(t->noise)},
            {"stopped", to_string(t->stopped)},
            {"samples", t->samples},
            {"calls_per_sample", t->calls_per_sample},
            {"host_ms", optional_json(t->host_ms)}};
}

nlohmann::json clocks_json(const std::optional<clock_check>& c)
{
    if (!c) {
        return nullptr;
    }
    return {{"sm_mhz_before", optional_json(c->before.sm_mhz)},
            {"sm_mhz_after", optional_json(c->after.sm_mhz)},
            {"memory_mhz_before", optional_json(c->before.memory_mhz)},
            {"memory_mhz_after", optional_json(c->after.memory_mhz)},
            {"throttle_reasons_after",
             c->after.throttle_reasons
                 ? nlohmann::json(throttle_reason_names(*c->after.throttle_reasons))
                 : nlohmann::json(nullptr)},
            {"clock_fell", c->clock_fell},
            {"throttled_by", c->throttled_by},
            {"flagged", c->flagged()},
            {"summary", c->summary()}};
}

nlohmann::json row_json(const measurement& row)
{
    return {{"case", row.case_name},
            {"variant", row.variant},
            {"math", to_string(row.math)},
            {"cache", row.cache ? nlohmann::json(to_string(*row.cache)) : nlohmann::json(nullptr)},
            {"median_ms", row.median_ms},
            {"min_ms", row.min_ms},
            {"max_ms", row.max_ms},
            {"spread", row.spread()},
            {"noise", optional_json(row.noise)},
            {"max_noise", optional_json(row.max_noise)},
            {"min_samples", row.min_samples},
            {"stopped", to_string(row.stopped)},
            {"repetitions", row.repetitions},
            {"calls_per_repetition", row.calls_per_repetition},
            {"timing", row.timing},
            {"host_ms", optional_json(row.host_ms)},
            {"single_call", side_json(row.single_call)},
            {"graph", side_json(row.graph)},
            {"clocks", clocks_json(row.clocks)},
            {"tflops", optional_json(row.tflops)},
            {"gbps", optional_json(row.gbps)},
            {"peak_fraction", optional_json(row.peak_fraction)},
            {"note", row.note}};
}

nlohmann::json environment_json(const environment& e, bool clocks_checked)
{
    return {
        {"date_utc", e.date_utc},
        {"host", e.host},
        {"cpu_threads", e.cpu_threads},
        {"cudagap", e.cudagap_version},
        {"cuda_runtime", e.cuda_runtime},
        {"driver_cuda", e.driver_cuda},
        {"driver_version", e.driver_version},
        {"gpu_available", e.gpu_available},
        {"device", e.device_name},
        {"capability", e.capability},
        {"multiprocessors", e.multiprocessors},
        {"memory_bytes", e.memory_bytes},
        {"max_sm_clock_mhz", e.max_sm_clock_mhz},
        {"max_memory_clock_mhz", e.max_memory_clock_mhz},
        {"sm_clock_mhz", optional_json(e.sm_clock_mhz)},
        {"memory_clock_mhz", optional_json(e.memory_clock_mhz)},
        {"peak_memory_bandwidth_gbps", e.peak_memory_bandwidth_gbps},
        {"ecc_enabled", e.ecc_enabled},
        {"l2_cache_bytes", e.l2_cache_bytes},
        {"pci_bus_id", e.pci_bus_id},
        {"clocks_checked", clocks_checked},
        {"clocks_note", e.clocks_note},
    };
}

} // namespace

nlohmann::json report::rows_json() const
{
    nlohmann::json rows = nlohmann::json::array();
    for (const measurement& row : rows_) {
        rows.push_back(row_json(row));
    }
    return rows;
}

nlohmann::json report::to_json() const
{
    const nlohmann::json env = environment_json(env_, clocks_read_);
    const nlohmann::json sampling{
        {"max_noise", rule_.max_noise},
        {"min_samples", rule_.min_samples},
        {"time_limit_s", rule_.time_limit_s},
        {"flush_bytes", env_.l2_cache_bytes > 0 ? nlohmann::json(flush_bytes(env_.l2_cache_bytes))
                                                : nlohmann::json(nullptr)},
    };
    nlohmann::json ratios = nlohmann::json::array();
    for (const ratio& r : ratios_) {
        ratios.push_back({{"case", r.case_name},
                          {"numerator", r.numerator},
                          {"denominator", r.denominator},
                          {"value", optional_json(r.value)},
                          {"note", r.note}});
    }
    nlohmann::json targets = nlohmann::json::array();
    for (const target& t : targets_) {
        targets.push_back({{"name", t.name},
                           {"requirement", t.requirement},
                           {"status", to_string(t.status)},
                           {"measured", t.measured},
                           {"note", t.note}});
    }
    return {{"schema", "cudagap-bench/2"},
            {"benchmark", name_},
            {"description", description_},
            {"quick", settings_.quick},
            {"environment", env},
            {"sampling", sampling},
            {"gpu_skipped", gpu_skipped_},
            {"skip_reason", gpu_skipped_ ? env_.skip_reason : std::string()},
            {"rows", rows_json()},
            {"ratios", ratios},
            {"targets", targets},
            {"notes", notes_},
            {"errors", errors_},
            {"exit_code", exit_code()}};
}

} // namespace gpu::bench
