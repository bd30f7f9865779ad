// gpu/json.hpp: the core's reports as JSON, dumped to text and parsed back with nlohmann-json.
#include <gpu/json.hpp>

#include "catch.hpp"

#include <limits>
#include <string>

namespace {
// Dump and parse again, as a script reading the programs' --json output would.
nlohmann::json round_trip(const nlohmann::json& value)
{
    return nlohmann::json::parse(value.dump(2));
}
} // namespace

TEST_CASE("profiles become JSON objects with a null for an unset seed", "[json]")
{
    const nlohmann::json testing = round_trip(gpu::profile::testing());
    CHECK(testing.at("name") == "testing");
    CHECK(testing.at("deterministic") == true);
    CHECK(testing.at("benchmark") == false);
    CHECK(testing.at("precision") == "fp32");
    CHECK(testing.at("seed") == 42);
    CHECK(testing.at("nvtx_ranges") == true);
    CHECK(round_trip(gpu::profile::production()).at("seed").is_null());
    CHECK(round_trip(gpu::profile::production()).at("allow_tf32") == true);
    CHECK(round_trip(gpu::profile::production()).at("benchmark") == true);
}

TEST_CASE("versions, statistics and driver facts become JSON", "[json]")
{
    CHECK(round_trip(gpu::cuda_version{13, 0}) == "13.0");
    CHECK(round_trip(gpu::cuda_version{}).is_null());
    CHECK(round_trip(gpu::semantic_version{9, 19, 0}) == "9.19.0");
    const std::vector<double> samples = {1.0, 2.0, 4.0};
    const nlohmann::json stats = round_trip(gpu::summarize(samples));
    CHECK(stats.at("median_ms") == 2.0);
    CHECK(stats.at("count") == 3);
    CHECK(stats.at("relative_spread") == 1.5);
    const nlohmann::json driver = round_trip(gpu::driver_version());
    CHECK(driver.at("installed") == gpu::driver_version().installed());
    CHECK(driver.at("reason").is_null() == gpu::driver_version().reason.empty());
}

TEST_CASE("JSON text stays valid when a report holds bytes that are not UTF-8", "[json]")
{
    gpu::profile named = gpu::profile::testing();
    named.name = "\xff\x81"; // a profile name is the caller's text, in any encoding
    const nlohmann::json j = named;
    CHECK_THROWS(j.dump(2));
    CHECK(nlohmann::json::parse(gpu::to_json_text(j)).at("name") == "\xEF\xBF\xBD\xEF\xBF\xBD");
    CHECK(gpu::to_json_text(nlohmann::json{{"a", 1}}, -1) == "{\"a\":1}");
}

TEST_CASE("a ledger snapshot becomes JSON, with nulls for what the device did not say", "[json]")
{
    gpu::memory_ledger ledger;
    int a = 0;
    ledger.record_allocation(0, &a, 4096,
                             gpu::memory_tag::standard(gpu::memory_category::gradients));
    gpu::device_memory_reading read;
    read.known = true;
    read.total_bytes = 100000;
    read.free_bytes = 60000;
    read.pool_reserved_bytes = 10000;
    read.pool_used_bytes = 4096;
    const nlohmann::json j = round_trip(ledger.snapshot(0, read));
    CHECK(j.at("device") == 0);
    REQUIRE(j.at("rows").size() == 1);
    CHECK(j.at("rows")[0].at("tag") == "gradients");
    CHECK(j.at("rows")[0].at("category") == "gradients");
    CHECK(j.at("rows")[0].at("current_bytes") == 4096);
    CHECK(j.at("rows")[0].at("total_allocations") == 1);
    CHECK(j.at("tracked_bytes") == 4096);
    CHECK(j.at("used_bytes") == 40000);
    CHECK(j.at("pool_unused_bytes") == 5904);
    CHECK(j.at("untracked_bytes") == 40000 - 4096 - 5904);
    CHECK(j.at("reason").is_null());

    const nlohmann::json unread = round_trip(ledger.snapshot(0, {}));
    CHECK(unread.at("device_read") == false);
    CHECK(unread.at("untracked_bytes").is_null());
    CHECK(unread.at("total_bytes").is_null());
}
