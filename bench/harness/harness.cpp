// The report every benchmark prints and writes, the common command line and `run`.
#include "harness.hpp"

#include <gpu/error.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace gpu::bench {

namespace {

std::string printf_string(const char* format, double value)
{
    std::array<char, 64> text{};
    const int length = std::snprintf(text.data(), text.size(), format, value);
    return std::string(text.data(), static_cast<std::size_t>(std::max(length, 0)));
}

// Columns are padded by characters as a terminal shows them, not bytes (names may be UTF-8).
std::size_t display_width(std::string_view text)
{
    return static_cast<std::size_t>(std::count_if(text.begin(), text.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0U) != 0x80U;
    }));
}

void check_time(const char* field, double value, const measurement& row)
{
    if (!std::isfinite(value) || value < 0.0) {
        throw std::invalid_argument("gpu::bench::report::add: " + std::string(field) + " of '" +
                                    row.case_name + "' / '" + row.variant + "' is " +
                                    std::to_string(value) +
                                    " ms; it must be finite and not negative");
    }
}

std::string format_ratio(double value)
{
    return printf_string(value < 10.0 ? "%.3f" : "%.1f", value);
}

std::string format_throughput(const measurement& row)
{
    if (row.tflops) {
        return printf_string(*row.tflops < 1.0 ? "%.3f TFLOP/s" : "%.1f TFLOP/s", *row.tflops);
    }
    if (row.gbps) {
        return printf_string(*row.gbps < 10.0 ? "%.2f GB/s" : "%.0f GB/s", *row.gbps);
    }
    return "";
}

nlohmann::json optional_json(const std::optional<double>& value)
{
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

nlohmann::json optional_json(const std::optional<int>& value)
{
    return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// One plain-text table: a header row, a rule, then the rows, columns padded to their widest.
void print_table(std::ostream& out, const std::vector<std::string>& header,
                 const std::vector<std::vector<std::string>>& rows)
{
    std::vector<std::size_t> widths(header.size(), 0);
    const auto widen = [&](const std::vector<std::string>& cells) {
        for (std::size_t i = 0; i < cells.size(); ++i) {
            widths[i] = std::max(widths[i], display_width(cells[i]));
        }
    };
    widen(header);
    for (const auto& row : rows) {
        widen(row);
    }
    const auto line = [&](const std::vector<std::string>& cells) {
        std::string text;
        for (std::size_t i = 0; i < cells.size(); ++i) {
            text += cells[i];
            if (i + 1 < cells.size()) {
                text.append(widths[i] - display_width(cells[i]) + 2, ' ');
            }
        }
        while (!text.empty() && text.back() == ' ') {
            text.pop_back();
        }
        out << "  " << text << '\n';
    };
    line(header);
    std::vector<std::string> rule;
    rule.reserve(widths.size());
    for (const std::size_t w : widths) {
        rule.emplace_back(w, '-');
    }
    line(rule);
    for (const auto& row : rows) {
        line(row);
    }
}

} // namespace

std::string_view to_string(math_mode mode) noexcept
{
    switch (mode) {
    case math_mode::none: return "-";
    case math_mode::fp32: return "FP32";
    case math_mode::tf32: return "TF32";
    case math_mode::fp16: return "FP16";
    case math_mode::bf16: return "BF16";
    }
    return "?";
}

std::string_view to_string(target_status status) noexcept
{
    switch (status) {
    case target_status::met: return "met";
    case target_status::not_met: return "not met";
    case target_status::not_measured: return "not measured";
    }
    return "?";
}

options parse_options(std::span<const std::string_view> args)
{
    options parsed;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string_view arg = args[i];
        if (arg == "--quick") {
            parsed.quick = true;
        } else if (arg == "--no-torch") {
            parsed.torch = false;
        } else if (arg == "--cpu-only") {
            parsed.cpu_only = true;
        } else if (arg == "--help" || arg == "-h") {
            parsed.help = true;
        } else if (arg == "--json") {
            if (i + 1 >= args.size() || args[i + 1].empty() || args[i + 1].starts_with("--")) {
                throw std::invalid_argument("--json needs a file name, e.g. --json alloc.json");
            }
            parsed.json_path = std::string(args[++i]);
        } else if (arg.starts_with("--json=")) {
            parsed.json_path = std::string(arg.substr(7));
            if (parsed.json_path.empty()) {
                throw std::invalid_argument("--json= needs a file name, e.g. --json=alloc.json");
            }
        } else {
            throw std::invalid_argument("unknown argument '" + std::string(arg) + "' (see --help)");
        }
    }
    return parsed;
}

std::string usage(std::string_view name, std::string_view description)
{
    std::ostringstream text;
    text << "usage: cudagap-bench-" << name
         << " [--quick] [--json FILE] [--no-torch] [--cpu-only]\n"
         << description << "\n\n"
         << "  --quick      fewer sizes and repetitions (seconds instead of minutes)\n"
         << "  --json FILE  also write the report as JSON to FILE\n"
         << "  --no-torch   do not run the PyTorch side (bench/compare_torch.py)\n"
         << "  --cpu-only   skip the GPU part even when a GPU is usable\n"
         << "\nThe report goes to stdout, progress to stderr. Exit code: 0 when it ran (targets\n"
         << "are reported, not asserted), 77 when the GPU part was skipped for lack of a GPU,\n"
         << "1 when a case failed or the command line was wrong.\n";
    return text.str();
}

measurement measurement::from(const statistics& stats, int calls_per_repetition, std::string timing)
{
    measurement row;
    row.median_ms = stats.median_ms;
    row.min_ms = stats.min_ms;
    row.max_ms = stats.max_ms;
    row.repetitions = static_cast<int>(stats.count);
    row.calls_per_repetition = calls_per_repetition;
    row.timing = std::move(timing);
    return row;
}

void measurement::set_flops(double flops, double peak_tflops)
{
    tflops = gpu::tflops(flops, median_ms);
    peak_fraction = peak_tflops > 0 ? std::optional<double>(*tflops / peak_tflops) : std::nullopt;
}

void measurement::set_bytes(double bytes, double peak_gbps)
{
    gbps = gpu::gbps(bytes, median_ms);
    peak_fraction = peak_gbps > 0 ? std::optional<double>(*gbps / peak_gbps) : std::nullopt;
}

report::report(std::string name, std::string description, options settings, environment env)
    : name_(std::move(name)), description_(std::move(description)), settings_(std::move(settings)),
      env_(std::move(env))
{}

void report::add(measurement row)
{
    if (row.case_name.empty() || row.variant.empty()) {
        throw std::invalid_argument(
            "gpu::bench::report::add: a row needs a case and a variant, got '" + row.case_name +
            "' / '" + row.variant + "'");
    }
    check_time("median_ms", row.median_ms, row);
    check_time("min_ms", row.min_ms, row);
    check_time("max_ms", row.max_ms, row);
    if (!(row.min_ms <= row.median_ms && row.median_ms <= row.max_ms)) {
        throw std::invalid_argument("gpu::bench::report::add: '" + row.case_name + "' / '" +
                                    row.variant + "' has min " + std::to_string(row.min_ms) +
                                    ", median " + std::to_string(row.median_ms) + ", max " +
                                    std::to_string(row.max_ms) + " ms, out of order");
    }
    if (row.repetitions < 1 || row.calls_per_repetition < 1) {
        throw std::invalid_argument("gpu::bench::report::add: '" + row.case_name + "' / '" +
                                    row.variant + "' has " + std::to_string(row.repetitions) +
                                    " repetitions of " + std::to_string(row.calls_per_repetition) +
                                    " calls; both must be at least 1");
    }
    rows_.push_back(std::move(row));
}

const measurement* report::find(std::string_view case_name, std::string_view variant) const noexcept
{
    const auto it = std::find_if(rows_.begin(), rows_.end(), [&](const measurement& row) {
        return row.case_name == case_name && row.variant == variant;
    });
    return it == rows_.end() ? nullptr : &*it;
}

std::optional<double> report::add_ratio(const std::string& case_name, const std::string& numerator,
                                        const std::string& denominator, std::string note)
{
    ratio r{case_name, numerator, denominator, std::nullopt, std::move(note)};
    const measurement* top = find(case_name, numerator);
    const measurement* bottom = find(case_name, denominator);
    if (top == nullptr || bottom == nullptr) {
        std::string missing = top == nullptr ? numerator : denominator;
        if (top == nullptr && bottom == nullptr) {
            missing = numerator + "' and '" + denominator;
        }
        r.note = "not measured: no row for '" + missing + "'";
    } else if (bottom->median_ms <= 0.0) {
        r.note = "not measured: '" + denominator + "' took no measurable time";
    } else {
        r.value = top->median_ms / bottom->median_ms;
    }
    ratios_.push_back(r);
    return r.value;
}

void report::declare_target(std::string name, std::string requirement)
{
    if (name.empty()) {
        throw std::invalid_argument("gpu::bench::report::declare_target: the name is empty");
    }
    if (std::any_of(targets_.begin(), targets_.end(),
                    [&](const target& t) { return t.name == name; })) {
        throw std::invalid_argument("gpu::bench::report::declare_target: '" + name +
                                    "' is declared twice");
    }
    targets_.push_back(
        {std::move(name), std::move(requirement), target_status::not_measured, {}, {}});
}

target& report::find_target(std::string_view name)
{
    const auto it = std::find_if(targets_.begin(), targets_.end(),
                                 [&](const target& t) { return t.name == name; });
    if (it == targets_.end()) {
        throw std::invalid_argument("gpu::bench::report: no target named '" + std::string(name) +
                                    "' was declared");
    }
    return *it;
}

void report::set_target(std::string_view name, bool met, std::string measured, std::string note)
{
    target& t = find_target(name);
    t.status = met ? target_status::met : target_status::not_met;
    t.measured = std::move(measured);
    t.note = std::move(note);
}

void report::set_target_not_measured(std::string_view name, std::string why)
{
    target& t = find_target(name);
    t.status = target_status::not_measured;
    t.measured.clear();
    t.note = std::move(why);
}

void report::add_note(std::string line)
{
    notes_.push_back(std::move(line));
}

void report::add_error(std::string case_name, std::string what)
{
    progress("FAILED " + case_name + ": " + what);
    errors_.push_back(std::move(case_name) + ": " + std::move(what));
}

void report::progress(std::string_view message) const
{
    std::cerr << "[bench " << name_ << "] " << message << std::endl;
}

void report::mark_gpu_skipped(std::string reason)
{
    gpu_skipped_ = true;
    env_.skip_reason = std::move(reason);
    progress("GPU part skipped: " + env_.skip_reason);
}

void report::settle_targets()
{
    for (target& t : targets_) {
        if (t.status == target_status::not_measured && t.note.empty()) {
            t.note = gpu_skipped_      ? "GPU part skipped"
                     : errors_.empty() ? "this run did not measure it"
                                       : "not measured: a case failed (see the errors)";
        }
    }
}

torch_run report::compare_torch(const std::vector<std::string>& arguments)
{
    torch_run result;
    if (!settings_.torch) {
        result.reason = "--no-torch was given";
    } else {
        progress("running the PyTorch side: compare_torch.py " +
                 (arguments.empty() ? std::string() : arguments.front()));
        result = run_compare_torch(arguments);
    }
    if (result.ok) {
        add_note("PyTorch " + result.version + " on " + result.device);
    } else {
        add_note("PyTorch rows missing: " + result.reason);
    }
    return result;
}

void report::print(std::ostream& out) const
{
    out << "== cudagap benchmark: " << name_ << " ==\n" << description_ << '\n';
    out << "date " << env_.date_utc << "  host " << env_.host << " (" << env_.cpu_threads
        << " CPU threads)  cudagap " << env_.cudagap_version << "  CUDA runtime "
        << env_.cuda_runtime << "  driver "
        << (env_.driver_version.empty() ? std::string("version unknown") : env_.driver_version)
        << " (CUDA " << env_.driver_cuda << ")  mode " << (settings_.quick ? "quick" : "full")
        << '\n';
    if (!env_.device_name.empty()) {
        out << "device " << env_.device_name << ", compute capability " << env_.capability << ", "
            << env_.multiprocessors << " SMs, " << format_bytes(env_.memory_bytes)
            << (env_.ecc_enabled ? " (ECC on)" : "") << ", SM clock max " << env_.max_sm_clock_mhz
            << " MHz";
        if (env_.sm_clock_mhz) {
            out << " (" << *env_.sm_clock_mhz << " MHz at start)";
        }
        out << ", memory clock max " << env_.max_memory_clock_mhz << " MHz";
        if (env_.memory_clock_mhz) {
            out << " (" << *env_.memory_clock_mhz << " MHz at start)";
        }
        out << ", peak memory bandwidth " << printf_string("%.0f", env_.peak_memory_bandwidth_gbps)
            << " GB/s\n";
    }
    if (gpu_skipped_) {
        out << "GPU part skipped: " << env_.skip_reason << '\n';
    }

    out << '\n';
    if (rows_.empty()) {
        out << "  (no measurements)\n";
    } else {
        std::vector<std::vector<std::string>> cells;
        cells.reserve(rows_.size());
        for (const measurement& row : rows_) {
            cells.push_back(
                {row.case_name, row.variant, std::string(to_string(row.math)),
                 format_time(row.median_ms), format_time(row.min_ms), format_time(row.max_ms),
                 printf_string("%.1f%%", 100.0 * row.spread()),
                 std::to_string(row.repetitions) + " x " + std::to_string(row.calls_per_repetition),
                 format_throughput(row),
                 row.peak_fraction ? printf_string("%.0f%%", 100.0 * *row.peak_fraction) : "",
                 row.timing, row.note});
        }
        print_table(out,
                    {"case", "variant", "math", "median", "min", "max", "spread", "reps x calls",
                     "throughput", "of peak", "timing", "note"},
                    cells);
    }

    if (!ratios_.empty()) {
        out << "\nratios (time of the first over time of the second; above 1: the second is "
               "faster)\n";
        std::vector<std::vector<std::string>> cells;
        for (const ratio& r : ratios_) {
            cells.push_back({r.case_name, r.numerator + " / " + r.denominator,
                             r.value ? format_ratio(*r.value) : "-", r.note});
        }
        print_table(out, {"case", "ratio", "value", "note"}, cells);
    }

    if (!targets_.empty()) {
        out << "\ntargets (reported, not asserted)\n";
        std::vector<std::vector<std::string>> cells;
        for (const target& t : targets_) {
            cells.push_back({std::string(to_string(t.status)), t.name,
                             t.measured.empty() ? "-" : t.measured, t.requirement, t.note});
        }
        print_table(out, {"status", "target", "measured", "requirement", "note"}, cells);
    }

    if (!notes_.empty()) {
        out << "\nnotes\n";
        for (const std::string& note : notes_) {
            out << "  " << note << '\n';
        }
    }
    if (!errors_.empty()) {
        out << "\nerrors (" << errors_.size() << ")\n";
        for (const std::string& e : errors_) {
            out << "  " << e << '\n';
        }
    }
    out.flush();
}

nlohmann::json report::to_json() const
{
    nlohmann::json env{
        {"date_utc", env_.date_utc},
        {"host", env_.host},
        {"cpu_threads", env_.cpu_threads},
        {"cudagap", env_.cudagap_version},
        {"cuda_runtime", env_.cuda_runtime},
        {"driver_cuda", env_.driver_cuda},
        {"driver_version", env_.driver_version},
        {"gpu_available", env_.gpu_available},
        {"device", env_.device_name},
        {"capability", env_.capability},
        {"multiprocessors", env_.multiprocessors},
        {"memory_bytes", env_.memory_bytes},
        {"max_sm_clock_mhz", env_.max_sm_clock_mhz},
        {"max_memory_clock_mhz", env_.max_memory_clock_mhz},
        {"sm_clock_mhz", optional_json(env_.sm_clock_mhz)},
        {"memory_clock_mhz", optional_json(env_.memory_clock_mhz)},
        {"peak_memory_bandwidth_gbps", env_.peak_memory_bandwidth_gbps},
        {"ecc_enabled", env_.ecc_enabled},
    };
    nlohmann::json rows = nlohmann::json::array();
    for (const measurement& row : rows_) {
        rows.push_back({{"case", row.case_name},
                        {"variant", row.variant},
                        {"math", to_string(row.math)},
                        {"median_ms", row.median_ms},
                        {"min_ms", row.min_ms},
                        {"max_ms", row.max_ms},
                        {"spread", row.spread()},
                        {"repetitions", row.repetitions},
                        {"calls_per_repetition", row.calls_per_repetition},
                        {"timing", row.timing},
                        {"tflops", optional_json(row.tflops)},
                        {"gbps", optional_json(row.gbps)},
                        {"peak_fraction", optional_json(row.peak_fraction)},
                        {"note", row.note}});
    }
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
    return {{"schema", "cudagap-bench/1"},
            {"benchmark", name_},
            {"description", description_},
            {"quick", settings_.quick},
            {"environment", env},
            {"gpu_skipped", gpu_skipped_},
            {"skip_reason", gpu_skipped_ ? env_.skip_reason : std::string()},
            {"rows", rows},
            {"ratios", ratios},
            {"targets", targets},
            {"notes", notes_},
            {"errors", errors_},
            {"exit_code", exit_code()}};
}

int report::exit_code() const noexcept
{
    if (!errors_.empty()) {
        return 1;
    }
    return gpu_skipped_ ? skipped_exit_code : 0;
}

int run(std::span<const std::string_view> args, const suite& benchmark, std::ostream& out)
{
    options settings;
    try {
        settings = parse_options(args);
    } catch (const std::invalid_argument& e) {
        std::cerr << "cudagap-bench-" << benchmark.name << ": " << e.what() << "\n\n"
                  << usage(benchmark.name, benchmark.description);
        return 1;
    }
    if (settings.help) {
        out << usage(benchmark.name, benchmark.description);
        return 0;
    }
    report r(benchmark.name, benchmark.description, settings,
             environment::probe(settings.cpu_only));
    for (const suite::target_spec& t : benchmark.targets) {
        r.declare_target(t.name, t.requirement);
    }
    r.progress(r.env().gpu_available ? "on " + r.env().device_name : "no usable GPU");
    if (benchmark.cpu) {
        r.run_case("CPU part", [&] { benchmark.cpu(r); });
    }
    if (benchmark.gpu) {
        if (r.env().gpu_available) {
            r.run_case("GPU part", [&] { benchmark.gpu(r); });
        } else {
            r.mark_gpu_skipped(r.env().skip_reason);
        }
    }
    r.settle_targets();
    r.print(out);
    if (!settings.json_path.empty()) {
        std::ofstream file(settings.json_path);
        // replace: a case name or an error message quoting bytes that are not UTF-8 (a path, a
        // tool's output) must not make dump() throw and lose the whole report.
        file << r.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        file.close();
        if (!file) {
            std::cerr << "cudagap-bench-" << benchmark.name
                      << ": could not write the JSON report to '" << settings.json_path << "'\n";
            return 1;
        }
        r.progress("JSON report written to " + settings.json_path);
    }
    return r.exit_code();
}

int run(int argc, char** argv, const suite& benchmark)
{
    std::vector<std::string_view> args;
    for (int i = 1; i < argc; ++i) {
        args.emplace_back(argv[i]);
    }
    return run(args, benchmark, std::cout);
}

statistics per_call(const statistics& stats, int calls)
{
    if (calls < 1) {
        throw std::invalid_argument("gpu::bench::per_call: calls is " + std::to_string(calls) +
                                    "; it must be at least 1");
    }
    std::vector<double> samples = stats.samples_ms;
    for (double& s : samples) {
        s /= calls;
    }
    return summarize(samples);
}

std::string format_time(double milliseconds)
{
    const double magnitude = std::fabs(milliseconds);
    if (magnitude < 1e-3) {
        return printf_string("%.0f ns", milliseconds * 1e6);
    }
    if (magnitude < 1.0) {
        return printf_string("%.3f us", milliseconds * 1e3);
    }
    if (magnitude < 1000.0) {
        return printf_string("%.3f ms", milliseconds);
    }
    return printf_string("%.3f s", milliseconds * 1e-3);
}

std::string size_name(std::size_t bytes)
{
    const std::array<std::pair<const char*, std::size_t>, 3> units{{{"GiB", std::size_t{1} << 30},
                                                                    {"MiB", std::size_t{1} << 20},
                                                                    {"KiB", std::size_t{1} << 10}}};
    for (const auto& [unit, scale] : units) {
        if (bytes >= scale && bytes % scale == 0) {
            return std::to_string(bytes / scale) + " " + unit;
        }
    }
    return std::to_string(bytes) + " B";
}

} // namespace gpu::bench
