// Fuzzes the bench harness's reading of compare_torch.py's JSON (gpu::bench::torch_run::parse)
// and what a report does with the rows it gives: the script's output is text from another
// process, so anything may arrive. parse() may only throw std::invalid_argument (as documented);
// the integers it reads must be exactly the ones in the document; a report of the rows must
// print, as text and as JSON, without throwing anything but std::invalid_argument for bad rows.
#include "harness.hpp"

#include "fuzz_support.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <sstream>
#include <string>

namespace {

namespace bench = gpu::bench;

// The integer the document holds under results[i][key], when it is one that fits an int.
std::optional<int> document_int(const nlohmann::json& item, const char* key)
{
    const nlohmann::json& value = item.at(key);
    if (value.is_number_unsigned()) {
        const auto v = value.get<std::uint64_t>();
        return v <= static_cast<std::uint64_t>(std::numeric_limits<int>::max())
                   ? std::optional(static_cast<int>(v))
                   : std::nullopt;
    }
    if (value.is_number_integer()) {
        const auto v = value.get<std::int64_t>();
        return v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max()
                   ? std::optional(static_cast<int>(v))
                   : std::nullopt;
    }
    return std::nullopt;
}

void check_against_document(const bench::torch_run& run, std::string_view text)
{
    const nlohmann::json doc = nlohmann::json::parse(text); // parse() accepted it, so this does too
    fuzz::require(run.ok == doc.at("ok").get<bool>(), "ok differs from the document");
    if (!run.ok) {
        return;
    }
    const nlohmann::json& results = doc.at("results");
    fuzz::require(run.cases.size() == results.size(),
                  "the number of cases differs from the document");
    for (std::size_t i = 0; i < run.cases.size(); ++i) {
        fuzz::require(
            document_int(results[i], "repetitions") == run.cases[i].repetitions &&
                document_int(results[i], "calls_per_repetition") ==
                    run.cases[i].calls_per_repetition,
            [&] { return "case " + std::to_string(i) + "'s integers differ from the document"; });
        fuzz::require(results[i].at("median_ms").get<double>() == run.cases[i].median_ms ||
                          std::isnan(run.cases[i].median_ms),
                      "a median differs from the document");
    }
}

void check_report(const bench::torch_run& run)
{
    bench::environment env;
    env.skip_reason = "fuzzing";
    bench::report report("fuzz", "torch rows from fuzzed JSON", {}, env);
    for (const bench::torch_case& c : run.cases) {
        const bool added = fuzz::accepted(
            [&] { report.add(c.to_measurement(bench::math_mode::fp16)); }, "report::add");
        static_cast<void>(added);
        static_cast<void>(report.add_ratio(c.case_name, "torch", "torch"));
    }
    std::ostringstream out;
    fuzz::require(fuzz::accepted([&] { report.print(out); }, "report::print"), "print refused");
    std::string json;
    fuzz::require(fuzz::accepted(
                      [&] {
                          json = report.to_json().dump(2, ' ', false,
                                                       nlohmann::json::error_handler_t::replace);
                      },
                      "report::to_json"),
                  "to_json refused");
    static_cast<void>(nlohmann::json::parse(json));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    bench::torch_run run;
    if (!fuzz::accepted([&] { run = bench::torch_run::parse(text); }, "torch_run::parse")) {
        return 0;
    }
    check_against_document(run, text);
    for (const bench::torch_case& c : run.cases) {
        fuzz::require(run.find(c.case_name) != nullptr, "find() misses a case");
    }
    check_report(run);
    return 0;
}
