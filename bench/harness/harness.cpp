// The report every benchmark prints and writes, the common command line and `run`.
#include "harness.hpp"

#include <gpu/error.hpp>

#include <algorithm>
#include <array>
#include <charconv>
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

void check_side(const side_timing& t, const measurement& row, const char* which)
{
    check_time(which, t.median_ms, row);
    check_time(which, t.min_ms, row);
    check_time(which, t.max_ms, row);
    if (!(t.min_ms <= t.median_ms && t.median_ms <= t.max_ms) || t.samples < 1 ||
        t.calls_per_sample < 1) {
        throw std::invalid_argument(
            "gpu::bench::report::add: the " + std::string(which) + " timing of '" + row.case_name +
            "' / '" + row.variant + "' has min " + std::to_string(t.min_ms) + ", median " +
            std::to_string(t.median_ms) + ", max " + std::to_string(t.max_ms) + " ms over " +
            std::to_string(t.samples) + " samples of " + std::to_string(t.calls_per_sample) +
            " calls; out of order or empty");
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

namespace {

// The value of a flag that takes one: the next argument, or what follows its '='.
std::string_view flag_value(std::span<const std::string_view> args, std::size_t& i,
                            std::string_view flag, const char* what, const char* example)
{
    const std::string_view arg = args[i];
    if (arg.size() > flag.size() && arg[flag.size()] == '=') {
        const std::string_view value = arg.substr(flag.size() + 1);
        if (!value.empty()) {
            return value;
        }
    } else if (i + 1 < args.size() && !args[i + 1].empty() && !args[i + 1].starts_with("--")) {
        return args[++i];
    }
    throw std::invalid_argument(std::string(flag) + " needs " + what + ", e.g. " + example);
}

bool is_flag(std::string_view arg, std::string_view flag)
{
    return arg == flag ||
           (arg.starts_with(flag) && arg.size() > flag.size() && arg[flag.size()] == '=');
}

double positive_number(std::string_view flag, std::string_view text)
{
    double value = 0.0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || !std::isfinite(value) ||
        value <= 0.0) {
        throw std::invalid_argument(std::string(flag) + " is '" + std::string(text) +
                                    "'; it must be a positive number");
    }
    return value;
}

// A sample count: at least 1, at most the rule's sample cap.
int sample_count(std::string_view flag, std::string_view text)
{
    int value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    const int cap = stopping_rule{}.max_samples;
    if (error != std::errc() || end != text.data() + text.size() || value < 1 || value > cap) {
        throw std::invalid_argument(std::string(flag) + " is '" + std::string(text) +
                                    "'; it must be a whole number from 1 to " +
                                    std::to_string(cap));
    }
    return value;
}

// A flag that takes a value, read into `parsed`; false when `arg` is none of them.
bool parse_valued(std::span<const std::string_view> args, std::size_t& i, options& parsed)
{
    const std::string_view arg = args[i];
    if (is_flag(arg, "--json")) {
        parsed.json_path =
            std::string(flag_value(args, i, "--json", "a file name", "--json alloc.json"));
    } else if (is_flag(arg, "--max-noise")) {
        parsed.max_noise =
            positive_number("--max-noise",
                            flag_value(args, i, "--max-noise", "a percentage", "--max-noise 0.5")) /
            100.0;
    } else if (is_flag(arg, "--min-samples")) {
        parsed.min_samples = sample_count(
            "--min-samples", flag_value(args, i, "--min-samples", "a count", "--min-samples 10"));
    } else if (is_flag(arg, "--time-limit")) {
        parsed.time_limit_s = positive_number(
            "--time-limit", flag_value(args, i, "--time-limit", "seconds", "--time-limit 0.5"));
    } else {
        return false;
    }
    return true;
}

} // namespace

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
        } else if (!parse_valued(args, i, parsed)) {
            throw std::invalid_argument("unknown argument '" + std::string(arg) + "' (see --help)");
        }
    }
    return parsed;
}

stopping_rule options::rule() const
{
    stopping_rule r;
    r.time_limit_s = quick ? 0.2 : 0.5;
    r.max_noise = max_noise.value_or(r.max_noise);
    r.min_samples = min_samples.value_or(r.min_samples);
    r.time_limit_s = time_limit_s.value_or(r.time_limit_s);
    return r;
}

std::string usage(std::string_view name, std::string_view description)
{
    std::ostringstream text;
    text << "usage: cudagap-bench-" << name
         << " [--quick] [--json FILE] [--no-torch] [--cpu-only] [--max-noise PCT]\n"
         << "       [--min-samples N] [--time-limit SECONDS]\n"
         << description << "\n\n"
         << "  --quick              fewer sizes and repetitions (seconds instead of minutes)\n"
         << "  --json FILE          also write the report as JSON to FILE\n"
         << "  --no-torch           do not run the PyTorch side (bench/compare_torch.py)\n"
         << "  --cpu-only           skip the GPU part even when a GPU is usable\n"
         << "  --max-noise PCT      stop sampling at this relative standard deviation (0.5)\n"
         << "  --min-samples N      ... but not before N samples (10)\n"
         << "  --time-limit SECONDS ... and within this time per measurement (0.5; 0.2 quick)\n"
         << "\nThe report goes to stdout, progress to stderr. Exit code: 0 when it ran (targets\n"
         << "are reported, not asserted), 77 when the GPU part was skipped for lack of a GPU,\n"
         << "1 when a case failed or the command line was wrong.\n";
    return text.str();
}

measurement measurement::from(const statistics& stats, int calls_per_repetition, std::string timing)
{
    return from(series::of(stats, calls_per_repetition), std::move(timing));
}

measurement measurement::from(const series& s, std::string timing, std::optional<cache_state> cache)
{
    measurement row;
    row.median_ms = s.stats.median_ms;
    row.min_ms = s.stats.min_ms;
    row.max_ms = s.stats.max_ms;
    row.repetitions = static_cast<int>(s.stats.count);
    row.calls_per_repetition = s.calls_per_sample;
    row.timing = std::move(timing);
    row.cache = cache;
    row.noise = s.noise;
    row.stopped = s.stopped;
    row.max_noise = s.max_noise;
    row.min_samples = s.min_samples;
    row.host_ms = s.host_ms;
    return row;
}

std::string measurement::noise_text() const
{
    return noise_label(noise, stopped, static_cast<std::size_t>(std::max(repetitions, 0)),
                       min_samples);
}

side_timing side_timing::from(const series& s)
{
    side_timing t;
    t.median_ms = s.stats.median_ms;
    t.min_ms = s.stats.min_ms;
    t.max_ms = s.stats.max_ms;
    t.noise = s.noise;
    t.stopped = s.stopped;
    t.min_samples = s.min_samples;
    t.samples = static_cast<int>(s.stats.count);
    t.calls_per_sample = s.calls_per_sample;
    t.host_ms = s.host_ms;
    return t;
}

std::string side_timing::label() const
{
    std::string text = format_time(median_ms);
    if (stopped == stop_reason::time_limit || stopped == stop_reason::sample_cap) {
        text += " (" +
                noise_label(noise, stopped, static_cast<std::size_t>(std::max(samples, 0)),
                            min_samples) +
                ")";
    }
    return text;
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
      env_(std::move(env)), rule_(settings_.rule())
{}

std::vector<std::string> report::torch_rule_arguments() const
{
    return {"--max-noise",   printf_string("%g", 100.0 * rule_.max_noise),
            "--min-samples", std::to_string(rule_.min_samples),
            "--time-limit",  printf_string("%g", rule_.time_limit_s)};
}

void report::set_clock_source(std::function<clock_reading()> source)
{
    clocks_read_ = clocks_read_ || static_cast<bool>(source);
    clock_source_ = std::move(source);
}

clock_reading report::read_clocks() const
{
    return clock_source_ ? clock_source_() : clock_reading{};
}

report::case_window report::open_case() const
{
    return {rows_.size(), read_clocks()};
}

void report::close_case(const case_window& window)
{
    if (!clock_source_ || window.first_row >= rows_.size()) {
        return;
    }
    const clock_check check = check_clocks(window.before, read_clocks());
    for (std::size_t i = window.first_row; i < rows_.size(); ++i) {
        if (!rows_[i].clocks) {
            rows_[i].clocks = check;
        }
    }
}

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
    if (row.noise && !(std::isfinite(*row.noise) && *row.noise >= 0.0)) {
        throw std::invalid_argument("gpu::bench::report::add: '" + row.case_name + "' / '" +
                                    row.variant + "' has a noise of " + std::to_string(*row.noise) +
                                    "; it must be finite, >= 0");
    }
    for (const auto* side : {&row.single_call, &row.graph}) {
        if (*side) {
            check_side(**side, row, side == &row.graph ? "graph" : "single_call");
        }
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
        const clock_reading before = read_clocks();
        result = run_compare_torch(arguments);
        if (clock_source_) {
            const clock_check check = check_clocks(before, read_clocks());
            for (torch_case& c : result.cases) {
                c.clocks = check;
            }
        }
    }
    if (result.ok) {
        add_note("PyTorch " + result.version + " on " + result.device);
    } else {
        add_note("PyTorch rows missing: " + result.reason);
    }
    return result;
}

void report::print_header(std::ostream& out) const
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
            << (env_.ecc_enabled ? " (ECC on)" : "") << ", L2 "
            << format_bytes(static_cast<std::size_t>(std::max(env_.l2_cache_bytes, 0)))
            << ", SM clock max " << env_.max_sm_clock_mhz << " MHz";
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
    out << "sampling: until the noise (relative standard deviation) is at most "
        << printf_string("%g%%", 100.0 * rule_.max_noise) << " after " << rule_.min_samples
        << " samples, within " << printf_string("%g s", rule_.time_limit_s) << " per measurement";
    const bool cold = std::any_of(rows_.begin(), rows_.end(), [](const measurement& row) {
        return row.cache == cache_state::cold;
    });
    if (cold && env_.l2_cache_bytes > 0) {
        out << "; cold samples first write " << format_bytes(flush_bytes(env_.l2_cache_bytes))
            << " (2x the L2)";
    }
    out << "; clocks "
        << (clocks_read_
                ? std::string("read by NVML around each case, never changed")
                : "not checked" + (env_.clocks_note.empty() ? "" : ": " + env_.clocks_note))
        << '\n';
    if (gpu_skipped_) {
        out << "GPU part skipped: " << env_.skip_reason << '\n';
    }
}

void report::print_rows(std::ostream& out) const
{
    if (rows_.empty()) {
        out << "  (no measurements)\n";
        return;
    }
    std::vector<std::vector<std::string>> cells;
    cells.reserve(rows_.size());
    for (const measurement& row : rows_) {
        cells.push_back(
            {row.case_name, row.variant, std::string(to_string(row.math)),
             row.cache ? std::string(to_string(*row.cache)) : "-", format_time(row.median_ms),
             format_time(row.min_ms), format_time(row.max_ms), row.noise_text(),
             std::to_string(row.repetitions) + " x " + std::to_string(row.calls_per_repetition),
             row.single_call ? row.single_call->label() : "", row.graph ? row.graph->label() : "",
             format_throughput(row),
             row.peak_fraction ? printf_string("%.0f%%", 100.0 * *row.peak_fraction) : "",
             row.clocks ? row.clocks->summary() : "-", row.timing, row.note});
    }
    print_table(out,
                {"case", "variant", "math", "cache", "median", "min", "max", "noise",
                 "samples x calls", "1 call", "graph", "throughput", "of peak", "clocks", "timing",
                 "note"},
                cells);
}

void report::print(std::ostream& out) const
{
    print_header(out);
    out << '\n';
    print_rows(out);

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

int report::exit_code() const noexcept
{
    if (!errors_.empty()) {
        return 1;
    }
    return gpu_skipped_ ? skipped_exit_code : 0;
}

namespace {

// The GPU part, with NVML reading the clocks around each case when it can.
void run_gpu_part(report& r, const suite& benchmark)
{
    const clock_monitor nvml(r.env().pci_bus_id);
    if (nvml.available()) {
        r.set_clock_source([&nvml] { return nvml.read(); });
    } else {
        r.add_note("clocks not checked: " + nvml.unavailable_reason());
    }
    r.run_case("GPU part", [&] { benchmark.gpu(r); });
    r.set_clock_source({});
}

// Writes the report to a temporary name, then renames it: a reader never sees half a report.
bool write_json(const report& r, const std::string& path)
{
    const std::string temporary = path + ".tmp";
    {
        std::ofstream file(temporary);
        // replace: a case name or an error message quoting bytes that are not UTF-8 (a path, a
        // tool's output) must not make dump() throw and lose the whole report.
        file << r.to_json().dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
        file.close();
        if (!file) {
            std::remove(temporary.c_str());
            return false;
        }
    }
    return std::rename(temporary.c_str(), path.c_str()) == 0;
}

} // namespace

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
            run_gpu_part(r, benchmark);
        } else {
            r.mark_gpu_skipped(r.env().skip_reason);
        }
    }
    r.settle_targets();
    r.print(out);
    if (!settings.json_path.empty()) {
        if (!write_json(r, settings.json_path)) {
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
