// gpu/tools/json.hpp: the tools' reports as JSON, dumped to text and parsed back with
// nlohmann-json.
#include <gpu/tools/json.hpp>

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

TEST_CASE("a diagnosis becomes JSON with every check and the recommendations", "[json]")
{
    gpu::tools::diagnosis report;
    report.checks = {
        {"NVIDIA driver", gpu::tools::diagnostic_status::error, "no driver", "install one", ""},
        {"GPUs", gpu::tools::diagnostic_status::error, "none", "install one", "NVIDIA driver"},
        {"ROCm", gpu::tools::diagnostic_status::info, "not installed", "", ""}};
    const nlohmann::json j = round_trip(report);
    CHECK(j.at("healthy") == false);
    CHECK(j.at("errors") == 2);
    CHECK(j.at("warnings") == 0);
    CHECK(j.at("cudagap_version") == gpu::library_version().to_string());
    REQUIRE(j.at("checks").size() == 3);
    CHECK(j.at("checks")[0].at("name") == "NVIDIA driver");
    CHECK(j.at("checks")[0].at("status") == "error");
    CHECK(j.at("checks")[0].at("caused_by").is_null());
    CHECK(j.at("checks")[1].at("caused_by") == "NVIDIA driver");
    CHECK(j.at("checks")[2].at("status") == "info");
    CHECK(j.at("checks")[2].at("fix").is_null());
    CHECK(j.at("recommendations") == nlohmann::json::array({"install one"}));
}

TEST_CASE("the real diagnosis of this machine serialises and parses back", "[json]")
{
    const gpu::tools::diagnosis report = gpu::tools::diagnose();
    const nlohmann::json j = round_trip(report);
    REQUIRE(j.at("checks").size() == report.checks.size());
    for (std::size_t i = 0; i < report.checks.size(); ++i) {
        CHECK(j.at("checks")[i].at("detail") == report.checks[i].detail);
        CHECK(j.at("checks")[i].at("status") ==
              std::string(gpu::tools::to_string(report.checks[i].status)));
    }
    CHECK(j.at("healthy") == report.healthy());
}

TEST_CASE("advice and usage become JSON objects with nulls for unknowns", "[json]")
{
    const nlohmann::json advice =
        round_trip(gpu::tools::advise_vram(std::size_t{6} << 30, gpu::compute_capability{8, 6}));
    CHECK(advice.at("tier") == "under 8 GB");
    CHECK(advice.at("precision") == "bf16");
    CHECK(advice.at("batch_size") == 1);
    CHECK(advice.at("gradient_checkpointing") == true);
    CHECK(advice.at("compute_capability") == "8.6");
    CHECK(round_trip(gpu::tools::advise_vram(std::size_t{6} << 30))
              .at("compute_capability")
              .is_null());

    gpu::tools::vram_usage usage;
    usage.device_id = 0;
    usage.device_memory = {std::size_t{5} << 30, std::size_t{100} << 30};
    usage.pool = {true, std::size_t{60} << 30, std::size_t{40} << 30, 0, 0};
    const nlohmann::json u = round_trip(usage);
    CHECK(u.at("high") == true);
    CHECK(u.at("warning").is_string());
    CHECK(u.at("pool").at("cached_bytes") == (std::size_t{20} << 30));
    CHECK(u.at("device_memory").at("used_bytes") == (std::size_t{95} << 30));
    usage.device_memory = {std::size_t{50} << 30, std::size_t{100} << 30};
    CHECK(round_trip(usage).at("warning").is_null());
}

TEST_CASE("JSON text stays valid when a report quotes bytes that are not UTF-8", "[json]")
{
    // A library folder or CUDA_VISIBLE_DEVICES in Latin-1 or Shift-JIS reaches a check's detail.
    gpu::tools::diagnosis report;
    report.checks = {{"GPUs", gpu::tools::diagnostic_status::error,
                      "CUDA_VISIBLE_DEVICES='\xff\x81'", "fix", ""}};
    const nlohmann::json j = report;
    CHECK_THROWS(j.dump(2)); // what the programs did before: no report at all
    const std::string text = gpu::to_json_text(j);
    const nlohmann::json back = nlohmann::json::parse(text);
    CHECK(back.at("checks")[0].at("detail") == "CUDA_VISIBLE_DEVICES='\xEF\xBF\xBD\xEF\xBF\xBD'");
    CHECK(gpu::to_json_text(nlohmann::json{{"a", 1}}, -1) == "{\"a\":1}");
}

TEST_CASE("gpu::to_json, the old name of the tools' conversions, is the same functions", "[json]")
{
    // Function pointers through a function: compared directly, GCC calls the test tautological.
    constexpr auto same = [](auto* old_name, decltype(old_name) new_name) {
        return old_name == new_name;
    };
    using diagnosis_to_json = void(nlohmann::json&, const gpu::tools::diagnosis&);
    using advice_to_json = void(nlohmann::json&, const gpu::tools::vram_advice&);
    static_assert(same(static_cast<diagnosis_to_json*>(&gpu::to_json), &gpu::tools::to_json));
    static_assert(same(static_cast<advice_to_json*>(&gpu::to_json), &gpu::tools::to_json));
    const gpu::tools::vram_advice advice = gpu::tools::advise_vram(std::size_t{24} << 30);
    nlohmann::json old_name;
    gpu::to_json(old_name, advice);
    CHECK(old_name == nlohmann::json(advice));
    CHECK(old_name.at("tier") == "24 GB class");
}
