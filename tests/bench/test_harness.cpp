// bench/harness/harness.hpp: flags, rows, ratios, targets, the printed table and the JSON,
// `run` with a small suite (both with and without a GPU), timing helpers, and the PyTorch side
// run through a real child process.
#include "harness.hpp"

#include <gpu/device.hpp>

#include "catch.hpp"
#include <scoped_env.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

using Catch::Matchers::ContainsSubstring;
namespace bench = gpu::bench;

namespace {

bench::options parse(std::vector<std::string_view> args)
{
    return bench::parse_options(args);
}

bench::measurement row(std::string case_name, std::string variant, double median, double min,
                       double max, int repetitions = 5)
{
    bench::measurement m;
    m.case_name = std::move(case_name);
    m.variant = std::move(variant);
    m.median_ms = median;
    m.min_ms = min;
    m.max_ms = max;
    m.repetitions = repetitions;
    m.timing = "host clock";
    return m;
}

bench::report empty_report(bench::options settings = {})
{
    bench::environment env;
    env.date_utc = "2025-01-02T03:04:05Z";
    env.host = "testhost";
    env.cudagap_version = "0.1.0";
    env.cuda_runtime = "13.0";
    env.driver_cuda = "none";
    return bench::report("unit", "a report made by the tests", settings, env);
}

// A temporary folder removed at the end of the test.
struct temp_dir {
    std::filesystem::path path;
    temp_dir()
    {
        std::string pattern =
            (std::filesystem::temp_directory_path() / "cudagap-bench-XXXXXX").string();
        if (mkdtemp(pattern.data()) == nullptr) {
            throw std::runtime_error("mkdtemp failed");
        }
        path = pattern;
    }
    ~temp_dir() { std::filesystem::remove_all(path); }
    temp_dir(const temp_dir&) = delete;
    temp_dir& operator=(const temp_dir&) = delete;
};

using gpu::test::scoped_env;

std::string write_script(const std::filesystem::path& folder, const std::string& body)
{
    const auto path = folder / "fake_compare_torch.py";
    std::ofstream(path) << body;
    return path.string();
}

} // namespace

TEST_CASE("the common flags parse, and bad ones are named", "[bench]")
{
    const bench::options none = parse({});
    CHECK_FALSE(none.quick);
    CHECK(none.torch);
    CHECK_FALSE(none.cpu_only);
    CHECK(none.json_path.empty());

    const bench::options all = parse({"--quick", "--json", "out.json", "--no-torch", "--cpu-only"});
    CHECK(all.quick);
    CHECK(all.json_path == "out.json");
    CHECK_FALSE(all.torch);
    CHECK(all.cpu_only);
    CHECK(parse({"--json=x.json"}).json_path == "x.json");
    CHECK(parse({"-h"}).help);

    CHECK_THROWS_WITH(parse({"--json"}), ContainsSubstring("--json needs a file name"));
    CHECK_THROWS_WITH(parse({"--json", "--quick"}), ContainsSubstring("--json needs a file name"));
    CHECK_THROWS_WITH(parse({"--json="}), ContainsSubstring("needs a file name"));
    CHECK_THROWS_WITH(parse({"--fast"}), ContainsSubstring("unknown argument '--fast'"));
    CHECK_THROWS_WITH(parse({"--jsonx"}), ContainsSubstring("unknown argument '--jsonx'"));
    CHECK_THAT(bench::usage("alloc", "what it does"), ContainsSubstring("cudagap-bench-alloc") &&
                                                          ContainsSubstring("what it does") &&
                                                          ContainsSubstring("77"));
}

TEST_CASE("the stopping rule's flags: defaults for full and quick runs, overrides, bad values",
          "[bench]")
{
    const bench::stopping_rule full = parse({}).rule();
    CHECK(full.max_noise == 0.005);
    CHECK(full.min_samples == 10);
    CHECK(full.time_limit_s == 0.5);
    CHECK(parse({"--quick"}).rule().time_limit_s == 0.2);
    const bench::options set =
        parse({"--max-noise", "1.5", "--min-samples=25", "--time-limit", "3", "--quick"});
    CHECK(set.rule().max_noise == Approx(0.015));
    CHECK(set.rule().min_samples == 25);
    CHECK(set.rule().time_limit_s == 3.0);
    CHECK(parse({"--max-noise=0.25"}).rule().max_noise == Approx(0.0025));
    for (const std::vector<std::string_view>& bad :
         {std::vector<std::string_view>{"--max-noise", "0"},
          {"--max-noise", "-1"},
          {"--max-noise", "x"},
          {"--max-noise", "inf"},
          {"--max-noise", "nan"},
          {"--min-samples", "0"},
          {"--min-samples", "2.5"},
          {"--min-samples", "99999999999"},
          {"--min-samples", "100001"},
          {"--time-limit", "0"},
          {"--time-limit", "1s"},
          {"--time-limit"},
          {"--max-noise", "--quick"},
          {"--min-samples="}}) {
        INFO(bad.front() << " " << (bad.size() > 1 ? bad[1] : ""));
        CHECK_THROWS_AS(parse(bad), std::invalid_argument);
    }
    CHECK_THROWS_WITH(parse({"--time-limit", "0"}),
                      ContainsSubstring("--time-limit is '0'; it must be a positive number"));
    CHECK_THROWS_WITH(parse({"--min-samples"}), ContainsSubstring("--min-samples needs a count"));
    CHECK_THAT(bench::usage("gemm", "x"),
               ContainsSubstring("--max-noise PCT") && ContainsSubstring("--time-limit SECONDS"));

    bench::report r = empty_report(parse({"--max-noise", "1", "--min-samples", "4"}));
    CHECK(r.rule().max_noise == Approx(0.01));
    CHECK(r.torch_rule_arguments() == std::vector<std::string>{"--max-noise", "1", "--min-samples",
                                                               "4", "--time-limit", "0.5"});
}

TEST_CASE("sizes are named in the largest unit that divides them, as compare_torch.py names them",
          "[bench]")
{
    CHECK(bench::size_name(std::size_t{64} << 20) == "64 MiB");
    CHECK(bench::size_name(std::size_t{1} << 30) == "1 GiB");
    CHECK(bench::size_name(1536 * std::size_t{1024}) == "1536 KiB");
    CHECK(bench::size_name(4096) == "4 KiB");
    CHECK(bench::size_name(100) == "100 B");
    CHECK(bench::size_name(0) == "0 B");
}

TEST_CASE("times print in a unit that suits them", "[bench]")
{
    CHECK(bench::format_time(0.00085) == "850 ns");
    CHECK(bench::format_time(0.001234) == "1.234 us");
    CHECK(bench::format_time(12.3456) == "12.346 ms");
    CHECK(bench::format_time(1500.0) == "1.500 s");
    CHECK(to_string(bench::math_mode::tf32) == "TF32");
    CHECK(to_string(bench::math_mode::none) == "-");
    CHECK(to_string(bench::target_status::not_met) == "not met");
}

TEST_CASE("a row takes its times from statistics and computes throughput and peak fraction",
          "[bench]")
{
    const std::vector<double> samples{2.0, 1.0, 4.0};
    bench::measurement m = bench::measurement::from(gpu::summarize(samples), 10, "CUDA events");
    CHECK(m.median_ms == 2.0);
    CHECK(m.min_ms == 1.0);
    CHECK(m.max_ms == 4.0);
    CHECK(m.repetitions == 3);
    CHECK(m.calls_per_repetition == 10);
    CHECK(m.spread() == Approx(1.5));
    m.set_flops(4e12, 4000.0); // 4e12 flops in 2 ms: 2000 TFLOP/s, half of a 4000 peak
    CHECK(*m.tflops == Approx(2000.0));
    CHECK(*m.peak_fraction == Approx(0.5));
    m.set_bytes(2e9, 2000.0); // 2 GB in 2 ms: 1000 GB/s, half the peak
    CHECK(*m.gbps == Approx(1000.0));
    CHECK(*m.peak_fraction == Approx(0.5));
    m.set_bytes(2e9); // no peak known: no fraction
    CHECK_FALSE(m.peak_fraction.has_value());
    bench::measurement zero;
    CHECK_THROWS_AS(zero.set_flops(1.0), std::invalid_argument);
}

TEST_CASE("a report rejects rows that cannot be right, naming them", "[bench]")
{
    bench::report r = empty_report();
    CHECK_THROWS_WITH(r.add(row("", "cudagap", 1, 1, 1)),
                      ContainsSubstring("needs a case and a variant"));
    CHECK_THROWS_WITH(r.add(row("1 MiB", "cudagap", 1, 2, 3)), ContainsSubstring("out of order"));
    CHECK_THROWS_WITH(r.add(row("1 MiB", "cudagap", -1, -1, 1)),
                      ContainsSubstring("median_ms of '1 MiB'"));
    CHECK_THROWS_WITH(r.add(row("1 MiB", "cudagap", 1, 1, 1, 0)),
                      ContainsSubstring("0 repetitions"));
    CHECK(r.rows().empty());
    r.add(row("1 MiB", "cudagap", 2, 1, 3));
    REQUIRE(r.find("1 MiB", "cudagap") != nullptr);
    CHECK(r.find("1 MiB", "cudagap")->median_ms == 2.0);
    CHECK(r.find("1 MiB", "torch") == nullptr);
}

TEST_CASE("ratios divide medians, and a missing row is said, not guessed", "[bench]")
{
    bench::report r = empty_report();
    r.add(row("1 MiB", "cudaMalloc", 50, 40, 60));
    r.add(row("1 MiB", "cudagap", 2, 1, 3));
    const auto value = r.add_ratio("1 MiB", "cudaMalloc", "cudagap");
    REQUIRE(value.has_value());
    CHECK(*value == Approx(25.0));
    CHECK_FALSE(r.add_ratio("1 MiB", "torch", "cudagap").has_value());
    CHECK_FALSE(r.add_ratio("4 KiB", "torch", "cudagap").has_value());
    REQUIRE(r.ratios().size() == 3);
    CHECK(r.ratios()[1].note == "not measured: no row for 'torch'");
    CHECK(r.ratios()[2].note == "not measured: no row for 'torch' and 'cudagap'");
}

TEST_CASE("targets are declared once, then met, not met or not measured with a reason", "[bench]")
{
    bench::report r = empty_report();
    r.declare_target("fast", "at most 2 us");
    r.declare_target("faster", "at least 10x");
    r.declare_target("fastest", "at least 100x");
    CHECK_THROWS_WITH(r.declare_target("fast", "again"), ContainsSubstring("declared twice"));
    CHECK_THROWS_WITH(r.declare_target("", "nameless"), ContainsSubstring("name is empty"));
    CHECK_THROWS_WITH(r.set_target("slow", true, "1 us"),
                      ContainsSubstring("no target named 'slow'"));
    r.set_target("fast", true, "0.8 us");
    r.set_target("faster", false, "4x", "cudaMalloc was quick here");
    r.settle_targets();
    REQUIRE(r.targets().size() == 3);
    CHECK(r.targets()[0].status == bench::target_status::met);
    CHECK(r.targets()[1].status == bench::target_status::not_met);
    CHECK(r.targets()[1].note == "cudaMalloc was quick here");
    CHECK(r.targets()[2].status == bench::target_status::not_measured);
    CHECK(r.targets()[2].note == "this run did not measure it");

    bench::report skipped = empty_report();
    skipped.declare_target("fast", "at most 2 us");
    skipped.mark_gpu_skipped("no driver");
    skipped.settle_targets();
    CHECK(skipped.targets()[0].note == "GPU part skipped");
    CHECK(skipped.exit_code() == bench::skipped_exit_code);
}

TEST_CASE("the printed report has the header, an aligned table, ratios, targets, notes, errors",
          "[bench]")
{
    bench::report r = empty_report({.quick = true});
    bench::measurement a = row("4096 fp16", "cudagap", 1.5, 1.25, 2.0);
    a.math = bench::math_mode::fp16;
    a.set_flops(2.0 * 4096.0 * 4096.0 * 4096.0, 989.0);
    r.add(a);
    r.add(row("4096 fp16", "raw cuBLAS", 1.49, 1.2, 1.9));
    r.add_ratio("4096 fp16", "cudagap", "raw cuBLAS");
    r.declare_target("within 2%", "cudagap/raw <= 1.02");
    r.set_target("within 2%", true, "1.007");
    r.add_note("OpenBLAS threads: 2");
    r.add_error("8192 bf16", "out of memory");
    std::ostringstream out;
    r.print(out);
    const std::string text = out.str();
    CHECK_THAT(text, ContainsSubstring("== cudagap benchmark: unit ==") &&
                         ContainsSubstring("mode quick") &&
                         ContainsSubstring("date 2025-01-02T03:04:05Z") &&
                         ContainsSubstring("driver version unknown"));
    CHECK_THAT(text, ContainsSubstring("FP16") && ContainsSubstring("1.500 ms") &&
                         ContainsSubstring("91.6 TFLOP/s") && ContainsSubstring("9%") &&
                         ContainsSubstring("5 x 1"));
    CHECK_THAT(text, ContainsSubstring("cudagap / raw cuBLAS") && ContainsSubstring("1.007"));
    CHECK_THAT(text, ContainsSubstring("cache") && ContainsSubstring("noise") &&
                         ContainsSubstring("samples x calls") && ContainsSubstring("1 call") &&
                         ContainsSubstring("graph") && ContainsSubstring("clocks") &&
                         ContainsSubstring("sampling: until the noise (relative standard "
                                           "deviation) is at most 0.5% after 10 samples, "
                                           "within 0.2 s per measurement"));
    CHECK_THAT(text, ContainsSubstring("met") && ContainsSubstring("within 2%") &&
                         ContainsSubstring("OpenBLAS threads: 2") &&
                         ContainsSubstring("errors (1)") &&
                         ContainsSubstring("8192 bf16: out of memory"));
    // The variant column starts at the same offset in the header and in both rows.
    std::istringstream lines(text);
    std::string line;
    std::vector<std::size_t> offsets;
    while (std::getline(lines, line)) {
        if (!offsets.empty() && line.empty()) {
            break; // the end of the rows table (the ratios table below repeats the case)
        }
        if (line.find("  case") == 0 && line.find("variant") != std::string::npos) {
            offsets.push_back(line.find("variant"));
        } else if (line.find("  4096 fp16") == 0) {
            offsets.push_back(line.find(offsets.size() == 1 ? "cudagap" : "raw cuBLAS"));
        }
    }
    REQUIRE(offsets.size() == 3);
    CHECK(offsets[0] == offsets[1]);
    CHECK(offsets[0] == offsets[2]);
    CHECK(r.exit_code() == 1);
}

TEST_CASE("the JSON report carries every part, with nulls for what is unknown", "[bench]")
{
    bench::report r = empty_report();
    r.add(row("1 MiB", "cudagap", 0.002, 0.001, 0.004));
    r.add_ratio("1 MiB", "cudagap", "torch");
    r.declare_target("fast", "at most 2 us");
    r.mark_gpu_skipped("no driver here");
    r.settle_targets();
    const nlohmann::json j = r.to_json();
    CHECK(j.at("schema") == "cudagap-bench/2");
    CHECK(j.at("benchmark") == "unit");
    CHECK(j.at("gpu_skipped") == true);
    CHECK(j.at("skip_reason") == "no driver here");
    CHECK(j.at("exit_code") == 77);
    CHECK(j.at("environment").at("host") == "testhost");
    CHECK(j.at("environment").at("sm_clock_mhz").is_null());
    const auto& first = j.at("rows").at(0);
    CHECK(first.at("median_ms") == 0.002);
    CHECK(first.at("spread") == Approx(1.5));
    CHECK(first.at("tflops").is_null());
    CHECK(first.at("math") == "-");
    // Version 2's fields: the noise and why sampling stopped, the cache, the timings beside it,
    // the clocks; null where this row has none.
    CHECK(first.at("noise").is_null()); // made by hand, without samples
    CHECK(first.at("stopped") == "fixed count");
    CHECK(first.at("max_noise").is_null());
    CHECK(first.at("cache").is_null());
    CHECK(first.at("single_call").is_null());
    CHECK(first.at("graph").is_null());
    CHECK(first.at("clocks").is_null());
    CHECK(first.at("host_ms").is_null());
    CHECK(j.at("sampling").at("max_noise") == 0.005);
    CHECK(j.at("sampling").at("min_samples") == 10);
    CHECK(j.at("sampling").at("time_limit_s") == 0.5);
    CHECK(j.at("sampling").at("flush_bytes").is_null()); // no device, no L2
    CHECK(j.at("environment").at("clocks_checked") == false);
    CHECK(j.at("environment").contains("l2_cache_bytes"));
    CHECK(j.at("ratios").at(0).at("value").is_null());
    CHECK(j.at("targets").at(0).at("status") == "not measured");
    CHECK(j.at("targets").at(0).at("note") == "GPU part skipped");
}

TEST_CASE("a row from a series carries its noise, stop reason and the timings beside it", "[bench]")
{
    const bench::stopping_rule rule{.max_noise = 0.005, .min_samples = 4, .time_limit_s = 1.0};
    double t = 0.0;
    const auto clock = [&t] { return t += 0.3; };
    int n = 0;
    // 10% noise: the time limit ends it after 4 rounds, above the target.
    const bench::series noisy = bench::sample_series(
        rule, [&] { return (n++ % 2 == 0) ? 1.1 : 0.9; }, 8, clock);
    bench::measurement m = bench::measurement::from(noisy, "CUDA events", bench::cache_state::cold);
    CHECK(m.repetitions == static_cast<int>(noisy.stats.count));
    CHECK(m.calls_per_repetition == 8);
    CHECK(m.cache == bench::cache_state::cold);
    CHECK(m.stopped == bench::stop_reason::time_limit);
    CHECK(*m.max_noise == 0.005);
    CHECK_THAT(m.noise_text(), ContainsSubstring("noisy: 1"));
    t = 0.0;
    const bench::series quiet = bench::sample_series(
        rule, [] { return 0.5; }, 100, clock);
    m.single_call = bench::side_timing::from(quiet);
    m.graph = bench::side_timing::from(noisy);
    CHECK(m.single_call->label() == "500.000 us");
    CHECK_THAT(m.graph->label(), ContainsSubstring("(noisy: "));
    CHECK(m.single_call->calls_per_sample == 100);

    bench::report r = empty_report();
    m.case_name = "1000 fp16";
    m.variant = "cudagap cold";
    r.add(m);
    bench::measurement bad = m;
    bad.variant = "broken";
    bad.graph->min_ms = 99.0;
    CHECK_THROWS_WITH(r.add(bad), ContainsSubstring("the graph timing of '1000 fp16' / 'broken'"));
    bad = m;
    bad.noise = -0.1;
    CHECK_THROWS_WITH(r.add(bad), ContainsSubstring("noise of -0.1"));
    const nlohmann::json row = r.to_json().at("rows").at(0);
    CHECK(row.at("cache") == "cold");
    // The header names the flush a cold sample writes, when the report has cold rows.
    bench::environment env;
    env.l2_cache_bytes = 50 << 20;
    bench::report with_l2("unit", "l2", {}, env);
    std::ostringstream warm_only;
    with_l2.print(warm_only);
    CHECK_THAT(warm_only.str(), !ContainsSubstring("cold samples"));
    with_l2.add(m);
    std::ostringstream printed;
    with_l2.print(printed);
    CHECK_THAT(printed.str(), ContainsSubstring("cold samples first write 100") &&
                                  ContainsSubstring("(2x the L2)"));
    CHECK(with_l2.to_json().at("sampling").at("flush_bytes") == 100 << 20);
    CHECK(row.at("stopped") == "time limit");
    CHECK(row.at("noise").get<double>() == Approx(*noisy.noise));
    CHECK(row.at("single_call").at("median_ms") == 0.5);
    CHECK(row.at("single_call").at("stopped") == "noise target");
    CHECK(row.at("single_call").at("calls_per_sample") == 100);
    CHECK(row.at("graph").at("samples") == static_cast<int>(noisy.stats.count));
}

TEST_CASE("each case's rows get the clocks read around it, and a throttled one is flagged",
          "[bench]")
{
    bench::report r = empty_report();
    std::vector<bench::clock_reading> readings{
        {1980, 2619, 0x1}, {1980, 2619, 0x0}, {1980, 2619, 0x0}, {1650, 2619, 0x4}};
    std::size_t next = 0;
    r.set_clock_source([&] { return readings.at(next++); });
    r.run_case("steady", [&] { r.add(row("a", "cudagap", 1, 1, 1)); });
    r.run_case("throttled", [&] {
        r.add(row("b", "cudagap", 1, 1, 1));
        r.add(row("b", "raw", 1, 1, 1));
    });
    CHECK(next == 4);
    REQUIRE(r.rows().size() == 3);
    REQUIRE(r.rows()[0].clocks.has_value());
    CHECK_FALSE(r.rows()[0].clocks->flagged());
    CHECK(r.rows()[1].clocks->flagged());
    CHECK(r.rows()[2].clocks->summary() == "FLAGGED: SM 1980->1650 MHz, SW power cap");
    // A case that throws still reads its clocks; the error is recorded.
    readings = {{1980, 2619, 0}, {1980, 2619, 0}};
    next = 0;
    CHECK_FALSE(r.run_case("failing", [&] {
        r.add(row("c", "cudagap", 1, 1, 1));
        throw std::runtime_error("boom");
    }));
    CHECK(next == 2);
    CHECK(r.rows()[3].clocks.has_value());
    std::ostringstream out;
    r.print(out);
    CHECK_THAT(out.str(), ContainsSubstring("FLAGGED: SM 1980->1650 MHz, SW power cap") &&
                              ContainsSubstring("clocks read by NVML around each case"));
    const nlohmann::json j = r.to_json();
    CHECK(j.at("environment").at("clocks_checked") == true);
    const nlohmann::json& clocks = j.at("rows").at(1).at("clocks");
    CHECK(clocks.at("flagged") == true);
    CHECK(clocks.at("clock_fell") == true);
    CHECK(clocks.at("sm_mhz_before") == 1980);
    CHECK(clocks.at("sm_mhz_after") == 1650);
    CHECK(clocks.at("throttle_reasons_after") == nlohmann::json::array({"SW power cap"}));

    // Without a source no row carries clocks, and the header says they were not checked.
    bench::report plain = empty_report();
    plain.run_case("x", [&] { plain.add(row("x", "cudagap", 1, 1, 1)); });
    CHECK_FALSE(plain.rows()[0].clocks.has_value());
    std::ostringstream text;
    plain.print(text);
    CHECK_THAT(text.str(), ContainsSubstring("; clocks not checked"));
}

TEST_CASE("run: the CPU part always runs, the GPU part only with a GPU, failures go on", "[bench]")
{
    temp_dir dir;
    const std::string json_path = (dir.path / "unit.json").string();
    int gpu_calls = 0;
    bench::suite s;
    s.name = "unit";
    s.description = "a suite made by the tests";
    s.targets = {{"cpu target", "at most 1 ms"}, {"gpu target", "at most 1 ms"}};
    s.cpu = [](bench::report& r) {
        r.add(row("cpu case", "naive", 0.5, 0.4, 0.6));
        r.set_target("cpu target", true, "0.5 ms");
        r.run_case("failing case", [] { throw std::runtime_error("boom"); });
        r.add(row("after the failure", "naive", 0.5, 0.4, 0.6));
    };
    s.gpu = [&](bench::report& r) {
        ++gpu_calls;
        r.add(row("gpu case", "cudagap", 0.5, 0.4, 0.6));
        r.set_target("gpu target", true, "0.5 ms");
    };
    std::ostringstream out;
    const std::vector<std::string_view> args{"--quick", "--json", json_path};
    const int code = bench::run(args, s, out);
    CHECK(code == 1); // the failing case
    const std::string text = out.str();
    CHECK_THAT(text,
               ContainsSubstring("failing case: boom") && ContainsSubstring("after the failure"));
    std::ifstream file(json_path);
    const nlohmann::json j = nlohmann::json::parse(file);
    CHECK(j.at("exit_code") == 1);
    if (gpu::is_available()) {
        CHECK(gpu_calls == 1);
        CHECK_THAT(text, ContainsSubstring("gpu case"));
        CHECK(j.at("targets").at(1).at("status") == "met");
    } else {
        CHECK(gpu_calls == 0);
        CHECK_THAT(text, ContainsSubstring("GPU part skipped: " + gpu::unavailable_reason()));
        CHECK(j.at("targets").at(1).at("status") == "not measured");
        CHECK(j.at("targets").at(1).at("note") == "GPU part skipped");
    }
    CHECK(j.at("targets").at(0).at("status") == "met");

    // Without the failing case, --cpu-only always skips the GPU part: exit 77.
    s.cpu = [](bench::report& r) { r.add(row("cpu case", "naive", 0.5, 0.4, 0.6)); };
    gpu_calls = 0;
    std::ostringstream skipped;
    const std::vector<std::string_view> cpu_only{"--cpu-only"};
    CHECK(bench::run(cpu_only, s, skipped) == bench::skipped_exit_code);
    CHECK(gpu_calls == 0);
    CHECK_THAT(skipped.str(), ContainsSubstring("GPU part skipped: --cpu-only was given"));

    std::ostringstream help;
    const std::vector<std::string_view> help_args{"--help"};
    CHECK(bench::run(help_args, s, help) == 0);
    CHECK_THAT(help.str(), ContainsSubstring("usage: cudagap-bench-unit"));
    const std::vector<std::string_view> bad{"--bogus"};
    CHECK(bench::run(bad, s, help) == 1);

    std::ostringstream unwritable;
    const std::vector<std::string_view> bad_json{"--cpu-only", "--json", "/nonexistent-dir/x.json"};
    CHECK(bench::run(bad_json, s, unwritable) == 1);
}

TEST_CASE("host timing runs warm-up, repetitions of calls, and the untimed step between", "[bench]")
{
    int calls = 0;
    int between = 0;
    const gpu::statistics s = bench::time_host(
        {.warmup = 2, .repetitions = 4, .calls_per_repetition = 5}, [&] { ++calls; },
        [&] { ++between; });
    CHECK(calls == 2 + 4 * 5);
    CHECK(between == 1 + 4);
    CHECK(s.count == 4);

    std::string order;
    const bench::paired_statistics p = bench::time_host_paired(
        {.warmup = 1, .repetitions = 4, .calls_per_repetition = 1}, [&] { order += 'a'; },
        [&] { order += 'b'; }, [] {});
    CHECK(order == "ab"
                   "ab"
                   "ba"
                   "ab"
                   "ba");
    CHECK(p.a.count == 4);
    CHECK(p.b.count == 4);

    const std::vector<double> samples{10.0, 20.0};
    const gpu::statistics per = bench::per_call(gpu::summarize(samples), 10);
    CHECK(per.median_ms == Approx(1.5));
    CHECK(per.max_ms == Approx(2.0));
    CHECK_THROWS_WITH(bench::per_call(gpu::summarize(samples), 0), ContainsSubstring("calls is 0"));

    CHECK(bench::calibrate_calls([] {}, 1e9, 1, 500) == 500);
    CHECK(bench::calibrate_calls([] {}, 0.0, 7, 500) == 7);
}

TEST_CASE("compare_torch.py's output parses, and malformed output is named", "[bench]")
{
    const bench::torch_run skipped =
        bench::torch_run::parse(R"({"ok": false, "reason": "no torch"})");
    CHECK_FALSE(skipped.ok);
    CHECK(skipped.reason == "no torch");

    const bench::torch_run ok =
        bench::torch_run::parse(R"({"ok": true, "torch": "2.9.0", "device": "H200",
        "results": [{"case": "4096 fp16", "median_ms": 1.5, "min_ms": 1.4, "max_ms": 1.7,
                     "repetitions": 10, "calls_per_repetition": 3, "n": 4096}], "errors": []})");
    CHECK(ok.ok);
    CHECK(ok.version == "2.9.0");
    REQUIRE(ok.cases.size() == 1);
    REQUIRE(ok.find("4096 fp16") != nullptr);
    CHECK(ok.find("4096 fp32") == nullptr);
    CHECK(ok.cases[0].fields.at("n") == 4096);
    const bench::measurement m = ok.cases[0].to_measurement(bench::math_mode::fp16);
    CHECK(m.variant == "torch");
    CHECK(m.median_ms == 1.5);
    CHECK(m.calls_per_repetition == 3);
    CHECK(m.timing == "CUDA events");

    CHECK_THROWS_WITH(bench::torch_run::parse("not json"), ContainsSubstring("not JSON"));
    CHECK_THROWS_WITH(bench::torch_run::parse("[1]"), ContainsSubstring("not a JSON object"));
    CHECK_THROWS_WITH(bench::torch_run::parse(R"({"ok": false})"),
                      ContainsSubstring("no \"reason\""));
    CHECK_THROWS_WITH(bench::torch_run::parse(R"({"ok": true, "torch": "2", "device": "d",
        "results": [{"case": "x", "median_ms": "fast"}]})"),
                      ContainsSubstring("\"median_ms\" has the wrong type"));
}

TEST_CASE("compare_torch.py's noise, single calls, graph and cold series parse into rows",
          "[bench]")
{
    const bench::torch_run run = bench::torch_run::parse(R"({"ok": true, "torch": "2.9", "device":
        "H200", "results": [{"case": "1000 fp16", "median_ms": 0.02, "min_ms": 0.019,
        "max_ms": 0.03, "repetitions": 40, "calls_per_repetition": 100, "noise": 0.004,
        "stopped": "noise target", "max_noise": 0.005, "min_samples": 10,
        "single_call": {"median_ms": 0.05, "min_ms": 0.04, "max_ms": 0.09, "repetitions": 200,
                        "calls_per_repetition": 1, "noise": 0.031, "stopped": "time limit",
                        "host_ms": 0.012},
        "graph": {"median_ms": 0.018, "min_ms": 0.017, "max_ms": 0.02, "repetitions": 30,
                  "calls_per_repetition": 100, "noise": 0.002, "stopped": "noise target"},
        "cold": {"median_ms": 0.07, "min_ms": 0.06, "max_ms": 0.08, "repetitions": 25,
                 "calls_per_repetition": 1, "noise": 0.01, "stopped": "time limit"}},
        {"case": "4096 fp16", "median_ms": 1, "min_ms": 1, "max_ms": 1, "repetitions": 3,
         "calls_per_repetition": 1}]})");
    const bench::torch_case& c = run.cases.at(0);
    CHECK(c.stopped == bench::stop_reason::converged);
    CHECK(*c.noise == 0.004);
    CHECK(c.min_samples == 10);
    REQUIRE(c.single_call.has_value());
    CHECK(c.single_call->stopped == bench::stop_reason::time_limit);
    CHECK(*c.single_call->host_ms == 0.012);
    CHECK(c.single_call->label() == "50.000 us (noisy: 3.10%)");
    const bench::measurement warm = c.to_measurement(bench::math_mode::fp16);
    CHECK(warm.cache == bench::cache_state::warm);
    CHECK(warm.graph->calls_per_sample == 100);
    CHECK(warm.noise_text() == "0.40%");
    const std::optional<bench::measurement> cold = c.cold_measurement(bench::math_mode::fp16);
    REQUIRE(cold.has_value());
    CHECK(cold->variant == "torch cold");
    CHECK(cold->cache == bench::cache_state::cold);
    CHECK(cold->repetitions == 25);
    CHECK(cold->noise_text() == "noisy: 1.00%");
    // An older result without these fields: a fixed count, its noise unknown, no extra rows.
    const bench::torch_case& old = run.cases.at(1);
    CHECK(old.stopped == bench::stop_reason::fixed_count);
    CHECK_FALSE(old.noise.has_value());
    CHECK_FALSE(old.cold_measurement(bench::math_mode::fp16).has_value());
    CHECK_FALSE(old.to_measurement(bench::math_mode::fp16).single_call.has_value());
    bench::report r = empty_report();
    r.add(warm);
    r.add(*cold);
    CHECK_NOTHROW(r.to_json());

    CHECK_THROWS_WITH(bench::torch_run::parse(R"({"ok": true, "torch": "2", "device": "d",
        "results": [{"case": "x", "median_ms": 1, "min_ms": 1, "max_ms": 1, "repetitions": 1,
        "calls_per_repetition": 1, "stopped": "bored"}]})"),
                      ContainsSubstring("'bored'"));
    CHECK_THROWS_WITH(bench::torch_run::parse(R"({"ok": true, "torch": "2", "device": "d",
        "results": [{"case": "x", "median_ms": 1, "min_ms": 1, "max_ms": 1, "repetitions": 1,
        "calls_per_repetition": 1, "graph": [1]}]})"),
                      ContainsSubstring("\"graph\" is not an object"));
    CHECK_THROWS_WITH(bench::torch_run::parse(R"({"ok": true, "torch": "2", "device": "d",
        "results": [{"case": "x", "median_ms": 1, "min_ms": 1, "max_ms": 1, "repetitions": 1,
        "calls_per_repetition": 1, "cold": {"median_ms": 1}}]})"),
                      ContainsSubstring("cold has no \"min_ms\""));
}

TEST_CASE("compare_torch.py's numbers are read exactly: out-of-range is invalid_argument",
          "[bench]")
{
    // get<int>() cast 3e9 or 1e300 to int (undefined behaviour); a number beyond double threw
    // nlohmann's out_of_range, which escaped parse() and run_compare_torch().
    const auto result_with = [](const std::string& repetitions) {
        return R"({"ok": true, "torch": "2", "device": "d", "results": [{"case": "x", "median_ms": 1,
            "min_ms": 1, "max_ms": 1, "calls_per_repetition": 1, "repetitions": )" +
               repetitions + "}]}";
    };
    CHECK(bench::torch_run::parse(result_with("2147483647")).cases[0].repetitions == 2147483647);
    CHECK(bench::torch_run::parse(result_with("-2147483648")).cases[0].repetitions ==
          -2147483647 - 1);
    for (const char* bad : {"2147483648", "-2147483649", "3e9", "1e300", "2.5",
                            "18446744073709551615", "true", "\"7\""}) {
        INFO(bad);
        CHECK_THROWS_WITH(bench::torch_run::parse(result_with(bad)),
                          ContainsSubstring("\"repetitions\"") && ContainsSubstring("a result"));
        CHECK_THROWS_AS(bench::torch_run::parse(result_with(bad)), std::invalid_argument);
    }
    CHECK_THROWS_AS(bench::torch_run::parse(R"({"ok": true, "torch": "2", "device": "d",
        "results": [{"case": "x", "median_ms": 1e999}]})"),
                    std::invalid_argument);
    CHECK_THROWS_WITH(bench::torch_run::parse("[1e999]"), ContainsSubstring("not JSON"));
}

TEST_CASE("the PyTorch side runs as a child process, and its failures become reasons", "[bench]")
{
    temp_dir dir;
    SECTION("a script that measured")
    {
        const scoped_env script("CUDAGAP_COMPARE_TORCH", write_script(dir.path, R"(
import json, sys
print("progress on stderr", file=sys.stderr)
json.dump({"ok": True, "torch": "9.9", "device": "fake", "results": [
    {"case": " ".join(sys.argv[1:]), "median_ms": 1.0, "min_ms": 1.0, "max_ms": 1.0,
     "repetitions": 1, "calls_per_repetition": 1}]}, sys.stdout)
)"));
        const bench::torch_run run = bench::run_compare_torch({"gemm", "--sizes", "64 128"});
        INFO(run.reason);
        REQUIRE(run.ok);
        // The arguments arrive one by one, unsplit (no shell in between).
        REQUIRE(run.find("gemm --sizes 64 128") != nullptr);
        CHECK(run.version == "9.9");
    }
    SECTION("a script that fails")
    {
        const scoped_env script("CUDAGAP_COMPARE_TORCH",
                                write_script(dir.path, "import sys\nsys.exit(3)\n"));
        const bench::torch_run run = bench::run_compare_torch({"alloc"});
        CHECK_FALSE(run.ok);
        CHECK_THAT(run.reason, ContainsSubstring("exited with code 3"));
    }
    SECTION("a script that prints no JSON")
    {
        const scoped_env script("CUDAGAP_COMPARE_TORCH",
                                write_script(dir.path, "print('hello')\n"));
        CHECK_THAT(bench::run_compare_torch({"alloc"}).reason, ContainsSubstring("not JSON"));
    }
    SECTION("no script")
    {
        const scoped_env script("CUDAGAP_COMPARE_TORCH", (dir.path / "missing.py").string());
        CHECK_THAT(bench::run_compare_torch({"alloc"}).reason, ContainsSubstring("was not found"));
    }
    SECTION("no interpreter")
    {
        const scoped_env python("CUDAGAP_PYTHON", (dir.path / "no-python").string());
        const scoped_env script("CUDAGAP_COMPARE_TORCH", write_script(dir.path, "print('{}')\n"));
        CHECK_THAT(bench::run_compare_torch({"alloc"}).reason,
                   ContainsSubstring("could not start"));
    }
    SECTION("--no-torch keeps the report from running it, and says so")
    {
        bench::report r = empty_report({.torch = false});
        const bench::torch_run run = r.compare_torch({"alloc"});
        CHECK_FALSE(run.ok);
        CHECK(run.reason == "--no-torch was given");
        REQUIRE(r.notes().size() == 1);
        CHECK(r.notes()[0] == "PyTorch rows missing: --no-torch was given");
    }
}

TEST_CASE("the real compare_torch.py answers with JSON whether or not torch is importable",
          "[bench]")
{
    bench::report r = empty_report();
    const bench::torch_run run =
        r.compare_torch({"alloc", "--sizes", "4096", "--repetitions", "2"});
    REQUIRE(r.notes().size() == 1);
    if (run.ok) {
        REQUIRE(run.find("4 KiB") != nullptr);
        CHECK(run.find("4 KiB")->fields.at("bytes") == 4096);
        CHECK_THAT(r.notes()[0], ContainsSubstring("PyTorch " + run.version));
    } else {
        // Here: no torch, or torch without a usable CUDA device; the reason says which.
        CHECK_THAT(run.reason, ContainsSubstring("torch"));
        CHECK_THAT(r.notes()[0], ContainsSubstring("PyTorch rows missing: "));
    }
}

TEST_CASE("the real compare_torch.py on a stand-in torch: every series it writes becomes rows",
          "[bench]")
{
    // The protocol between the two languages, end to end: the rule's flags the report hands
    // over, the single-call, graph and cold series the script writes, the rows they make.
    const scoped_env path("PYTHONPATH", CUDAGAP_FAKE_TORCH_DIR);
    bench::report r = empty_report(parse({"--time-limit", "0.05", "--min-samples", "3"}));
    std::vector<std::string> arguments{"gemm", "--sizes",       "64", "--precisions",
                                       "fp16", "--calls",       "5",  "--single-call-sizes",
                                       "64",   "--graph-sizes", "64", "--cold-sizes",
                                       "64"};
    const std::vector<std::string> rule = r.torch_rule_arguments();
    arguments.insert(arguments.end(), rule.begin(), rule.end());
    const bench::torch_run run = r.compare_torch(arguments);
    INFO(run.reason);
    REQUIRE(run.ok);
    const bench::torch_case* c = run.find("64 fp16");
    REQUIRE(c != nullptr);
    CHECK(c->min_samples == 3);
    CHECK(c->stopped != bench::stop_reason::fixed_count);
    REQUIRE(c->graph.has_value());
    CHECK(c->graph->calls_per_sample == 5);
    REQUIRE(c->single_call.has_value());
    r.add(c->to_measurement(bench::math_mode::fp16));
    const std::optional<bench::measurement> cold = c->cold_measurement(bench::math_mode::fp16);
    REQUIRE(cold.has_value());
    r.add(*cold);
    CHECK(r.rows().size() == 2);
    CHECK(r.rows()[1].variant == "torch cold");
}

TEST_CASE("on a GPU the environment names the device, its clocks and bandwidth", "[bench][gpu]")
{
    const bench::environment env = bench::environment::probe();
    REQUIRE(env.gpu_available);
    CHECK(env.skip_reason.empty());
    CHECK_FALSE(env.device_name.empty());
    CHECK(env.multiprocessors > 0);
    CHECK(env.max_sm_clock_mhz > 0);
    CHECK(env.peak_memory_bandwidth_gbps > 0.0);
    CHECK(env.driver_cuda != "none");
    // NVML ships with every driver: the driver's own version is readable where a GPU is.
    CHECK_FALSE(env.driver_version.empty());
    const bench::environment cpu_only = bench::environment::probe(true);
    CHECK_FALSE(cpu_only.gpu_available);
    CHECK_THAT(cpu_only.skip_reason, ContainsSubstring("--cpu-only"));
}

TEST_CASE("without a GPU the environment says why and still names the versions", "[bench]")
{
    const bench::environment env = bench::environment::probe();
    CHECK_FALSE(env.date_utc.empty());
    CHECK(env.date_utc.back() == 'Z');
    CHECK(env.cudagap_version == gpu::library_version().to_string());
    CHECK_FALSE(env.cuda_runtime.empty());
    if (!gpu::is_available()) {
        CHECK_FALSE(env.gpu_available);
        CHECK(env.skip_reason == gpu::unavailable_reason());
        CHECK(env.device_name.empty());
    } else {
        CHECK(env.gpu_available);
    }
}
