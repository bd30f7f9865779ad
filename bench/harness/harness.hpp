/// @file harness.hpp
/// @brief The common harness of cudagap's benchmarks (`cudagap_bench_harness`): one way to
/// measure, one report (a plain-text table on stdout, a JSON file), one set of flags and exit
/// codes, so that every benchmark in bench/ reads the same and scripts/gpu-check can merge them.
///
/// A benchmark is a `suite` (its name, its targets, a CPU part and a GPU part) handed to `run`:
///
/// @code
/// int main(int argc, char** argv)
/// {
///     gpu::bench::suite s;
///     s.name = "gemm";
///     s.description = "cudagap GEMM vs raw cuBLAS vs torch.mm vs OpenBLAS";
///     s.targets = {{"cudagap within 2% of raw cuBLAS", "time ratio <= 1.02 at 4096 FP32"}};
///     s.cpu = [](gpu::bench::report& r) { ... r.add(row); };           // always runs
///     s.gpu = [](gpu::bench::report& r) {                                 // only with a GPU
///         r.run_case("4096 FP32", [&] {
///             gpu::bench::measurement m = gpu::bench::measurement::from(stats);
///             m.case_name = "4096 fp32"; m.variant = "cudagap"; m.math = gpu::bench::math_mode::fp32;
///             m.set_flops(2.0 * n * n * n, peak_tflops);
///             r.add(m);
///         });
///         r.add_ratio("4096 fp32", "cudagap", "raw cuBLAS");
///         r.set_target("cudagap within 2% of raw cuBLAS", ratio <= 1.02, "1.004");
///     };
///     return gpu::bench::run(argc, argv, s);
/// }
/// @endcode
///
/// Exit codes of `run`: 0 when the benchmark ran (targets are reported, never asserted), 77 when
/// the GPU part was skipped for lack of a usable GPU (the CPU part still ran and printed), 1 when
/// a case failed or the command line was wrong.
///
/// nvbench's conventions (bench/README.md, "How they measure"): sampling stops on noise within
/// a time limit (sampling.hpp), device work is timed warm or cold, in batches, one call at a
/// time and replayed from a CUDA graph (device_timing.hpp), and the clocks are read around
/// every case (clocks.hpp); each row carries its sample count, noise, cache state and clocks.
#pragma once

#include "clocks.hpp"
#include "device_timing.hpp"
#include "host_timing.hpp"
#include "sampling.hpp"

#include <gpu/timing.hpp>

#include <nlohmann/json.hpp>

#include <functional>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::bench {

/// @brief Exit code of a benchmark whose GPU part was skipped (ctest's and automake's "skip").
inline constexpr int skipped_exit_code = 77;

/// @brief The arithmetic a measurement ran with, as the report prints it.
enum class math_mode {
    none, ///< no floating-point math to speak of (allocation, launch overhead): printed `-`
    fp32, ///< FP32 data, FP32 math (no TF32)
    tf32, ///< FP32 data on TF32 tensor cores
    fp16, ///< FP16 data on tensor cores, FP32 accumulation unless a note says otherwise
    bf16, ///< BF16 data on tensor cores, FP32 accumulation
};

/// @brief `-`, `FP32`, `TF32`, `FP16` or `BF16`.
[[nodiscard]] std::string_view to_string(math_mode mode) noexcept;

/// @brief How a target came out.
enum class target_status {
    met,          ///< measured and within the target
    not_met,      ///< measured and outside the target
    not_measured, ///< not measured in this run (no GPU, no PyTorch, a failed case, ...)
};

/// @brief `met`, `not met` or `not measured`.
[[nodiscard]] std::string_view to_string(target_status status) noexcept;

/// @brief The command-line settings every benchmark shares.
struct options {
    bool quick = false;      ///< `--quick`: fewer sizes and repetitions (seconds, not minutes)
    std::string json_path{}; ///< `--json FILE`: also write the report as JSON (empty: do not)
    bool torch = true;       ///< `--no-torch` turns it off: skip the PyTorch comparison
    bool cpu_only = false;   ///< `--cpu-only`: skip the GPU part even when a GPU is usable
    bool help = false;       ///< `--help` was given: print the usage and run nothing
    std::optional<double> max_noise{};    ///< `--max-noise PCT` (as a fraction here)
    std::optional<int> min_samples{};     ///< `--min-samples N`
    std::optional<double> time_limit_s{}; ///< `--time-limit SECONDS`, per measurement

    /// @brief The stopping rule these flags ask for: a 0.5% target, 10 samples at least, and a
    /// time limit of 0.5 s per measurement (0.2 s with `--quick`), each flag overriding its part.
    [[nodiscard]] stopping_rule rule() const;
};

/// @brief Parses the common flags (`--quick`, `--json FILE`, `--no-torch`, `--cpu-only`,
/// `--max-noise PCT`, `--min-samples N`, `--time-limit SECONDS`, `--help`; a value may also
/// follow an `=`); @p args excludes the program name.
/// @throws std::invalid_argument naming an unknown flag, a flag without its value, or a value
/// out of range (a noise target or a time limit that is not positive, fewer than 1 sample)
[[nodiscard]] options parse_options(std::span<const std::string_view> args);

/// @brief The usage text of a benchmark called @p name.
[[nodiscard]] std::string usage(std::string_view name, std::string_view description);

/// @brief What a report says about where it ran, read once at the start.
struct environment {
    std::string date_utc{};        ///< ISO 8601, e.g. `2025-01-31T12:00:00Z`
    std::string host{};            ///< the host name
    unsigned cpu_threads = 0;      ///< hardware threads of the host
    std::string cudagap_version{}; ///< e.g. `0.2.0`
    std::string cuda_runtime{};    ///< the loaded CUDA runtime, e.g. `13.0`
    std::string driver_cuda{};     ///< the newest CUDA the driver supports, `none` without one
    std::string
        driver_version{};       ///< the driver's own version (NVML), e.g. `575.57.08`; may be empty
    bool gpu_available = false; ///< a usable GPU was found and the GPU part may run
    std::string skip_reason{};  ///< why the GPU part does not run; empty when it does
    std::string device_name{};  ///< device 0's name; empty without a GPU
    std::string capability{};   ///< e.g. `9.0`
    int multiprocessors = 0;    ///< streaming multiprocessors
    std::size_t memory_bytes = 0;      ///< global memory
    int max_sm_clock_mhz = 0;          ///< peak SM clock (CUDA attribute)
    int max_memory_clock_mhz = 0;      ///< peak memory clock (CUDA attribute)
    std::optional<int> sm_clock_mhz{}; ///< SM clock when the report started (NVML), if readable
    std::optional<int>
        memory_clock_mhz{}; ///< memory clock when the report started (NVML), if readable
    double peak_memory_bandwidth_gbps = 0; ///< theoretical, from clock and bus width
    bool ecc_enabled = false;              ///< error-correcting memory is on
    int l2_cache_bytes = 0;                ///< the L2's size (a cold sample flushes twice that)
    std::string pci_bus_id{};              ///< device 0's PCI bus id, how NVML finds it
    std::string clocks_note{};             ///< why NVML cannot read the clocks; empty when it can

    /// @brief Reads the environment; @p cpu_only skips the GPU (with that as the reason).
    /// Never throws for a missing driver or GPU: that is what `skip_reason` is for.
    [[nodiscard]] static environment probe(bool cpu_only = false);
};

/// @brief A timing beside a row's own, per call: its single calls (beside a batch) or the same
/// calls replayed from a CUDA graph.
struct side_timing {
    double median_ms = 0;                           ///< median time per call
    double min_ms = 0;                              ///< fastest sample, per call
    double max_ms = 0;                              ///< slowest sample, per call
    std::optional<double> noise{};                  ///< relative standard deviation of the samples
    stop_reason stopped = stop_reason::fixed_count; ///< why sampling stopped
    int min_samples = 0;             ///< the rule's minimum sample count (0: fixed count)
    int samples = 0;                 ///< samples taken
    int calls_per_sample = 1;        ///< calls per sample (a graph's calls per replay)
    std::optional<double> host_ms{}; ///< median host time per call issuing the work

    /// @brief The timing of @p s.
    [[nodiscard]] static side_timing from(const series& s);

    /// @brief What a table prints: the median, and the noise when the sampling stopped noisy.
    [[nodiscard]] std::string label() const;
};

/// @brief One row of a report: a case measured for one variant (e.g. "4096 fp16", "cudagap").
struct measurement {
    std::string case_name{}; ///< what was measured, e.g. `4096 fp16` or `1 MiB`
    std::string variant{};   ///< who did it: `cudagap`, `raw cuBLAS`, `torch`, `OpenBLAS`, ...
    math_mode math = math_mode::none;      ///< the arithmetic that ran
    double median_ms = 0;                  ///< median time per call, the figure to quote
    double min_ms = 0;                     ///< fastest repetition, per call
    double max_ms = 0;                     ///< slowest repetition, per call
    int repetitions = 0;                   ///< timed samples (the sample count)
    int calls_per_repetition = 1;          ///< back-to-back calls per sample
    std::string timing{};                  ///< `CUDA events` or `host clock`
    std::optional<double> tflops{};        ///< achieved TFLOP/s at the median, when it applies
    std::optional<double> gbps{};          ///< achieved GB/s at the median, when it applies
    std::optional<double> peak_fraction{}; ///< throughput over the device's peak, when known
    std::string note{};                    ///< anything a reader must know about this row
    std::optional<cache_state> cache{};    ///< warm or cold for device work; empty for host work
    std::optional<double> noise{};         ///< relative standard deviation of the samples
    stop_reason stopped = stop_reason::fixed_count; ///< why sampling stopped
    std::optional<double> max_noise{}; ///< the noise target it was judged by (fixed count: none)
    int min_samples = 0;               ///< the rule's minimum sample count (fixed count: 0)
    std::optional<double> host_ms{};   ///< median host time per call issuing device work
    std::optional<side_timing> single_call{}; ///< one call per sample, beside a batch
    std::optional<side_timing> graph{};       ///< the same calls replayed from a CUDA graph
    std::optional<clock_check> clocks{};      ///< the clocks around its case (NVML)

    /// @brief A row with the times of @p stats (per call) and its repetition count: a fixed
    /// count, its noise from the samples.
    [[nodiscard]] static measurement from(const statistics& stats, int calls_per_repetition = 1,
                                          std::string timing = "CUDA events");

    /// @brief A row with the times, noise and stop reason of @p s.
    [[nodiscard]] static measurement from(const series& s, std::string timing,
                                          std::optional<cache_state> cache = std::nullopt);

    /// @brief `(max - min) / median`: how far apart the samples lie (0 for one repetition).
    [[nodiscard]] double spread() const noexcept
    {
        return median_ms > 0 ? (max_ms - min_ms) / median_ms : 0.0;
    }

    /// @brief The noise as the table prints it (`noise_label`): `noisy: 3.1%` when the time
    /// limit came first.
    [[nodiscard]] std::string noise_text() const;

    /// @brief Sets `tflops` from @p flops per call and, when @p peak_tflops > 0, `peak_fraction`.
    /// @throws std::invalid_argument when the median is not positive
    void set_flops(double flops, double peak_tflops = 0);

    /// @brief Sets `gbps` from @p bytes moved per call and, when @p peak_gbps > 0, `peak_fraction`.
    /// @throws std::invalid_argument when the median is not positive
    void set_bytes(double bytes, double peak_gbps = 0);
};

/// @brief A comparison of two rows of one case: the time of @p numerator over the time of
/// @p denominator (1.02 means the numerator takes 2% longer; 25 means it is 25x slower).
struct ratio {
    std::string case_name{};       ///< the case both rows belong to
    std::string numerator{};       ///< variant on top, e.g. `cudagap`
    std::string denominator{};     ///< variant below, e.g. `raw cuBLAS`
    std::optional<double> value{}; ///< empty when a row is missing (see `note`)
    std::string note{};            ///< why the value is missing, or what it means
};

/// @brief A named goal of a benchmark and how this run did against it.
struct target {
    std::string name{}; ///< short and unique in the benchmark, e.g. `pooled pair <= 2 us @ 1 MiB`
    std::string requirement{}; ///< the rule in words, e.g. `median alloc/free pair at most 2 us`
    target_status status = target_status::not_measured; ///< the outcome
    std::string measured{}; ///< the measured value as text, e.g. `0.84 us`; empty when not measured
    std::string note{};     ///< why not measured, or anything else a reader must know
};

/// @brief What the PyTorch side (bench/compare_torch.py) measured for one case.
struct torch_case {
    std::string case_name{};       ///< as compare_torch.py names it, e.g. `4096 fp16`
    double median_ms = 0;          ///< median time per call
    double min_ms = 0;             ///< fastest repetition, per call
    double max_ms = 0;             ///< slowest repetition, per call
    int repetitions = 0;           ///< timed repetitions
    int calls_per_repetition = 1;  ///< calls per repetition
    std::optional<double> noise{}; ///< relative standard deviation
    stop_reason stopped = stop_reason::fixed_count; ///< why its sampling stopped
    std::optional<double> max_noise{};              ///< its noise target, if it had one
    int min_samples = 0;                            ///< its minimum sample count
    std::optional<side_timing> single_call{};       ///< one call per sample, when asked for
    std::optional<side_timing> graph{};             ///< torch.cuda.CUDAGraph replays
    std::optional<side_timing> cold{};              ///< single calls with the L2 flushed
    std::optional<clock_check> clocks{};            ///< the clocks around the torch run
    nlohmann::json fields{}; ///< the whole result object (size, precision, ... to match on)

    /// @brief This case as a report row of variant `torch` (warm, with its single calls and
    /// graph beside it).
    [[nodiscard]] measurement to_measurement(math_mode math,
                                             std::string timing = "CUDA events") const;

    /// @brief The cold single calls as a row of variant `torch cold`; empty without them.
    [[nodiscard]] std::optional<measurement> cold_measurement(math_mode math) const;
};

/// @brief The outcome of one run of bench/compare_torch.py.
struct torch_run {
    bool ok = false;       ///< PyTorch ran; otherwise `reason` says why not
    std::string reason{};  ///< why there are no PyTorch rows (not importable, no CUDA, ...)
    std::string version{}; ///< torch's version
    std::string device{};  ///< the device torch used
    std::vector<torch_case> cases{}; ///< one per case measured

    /// @brief The case named @p case_name, or null.
    [[nodiscard]] const torch_case* find(std::string_view case_name) const noexcept;

    /// @brief Parses compare_torch.py's JSON output (`{"ok": ...}`).
    /// @throws std::invalid_argument when @p text is not such an object (with what is wrong)
    [[nodiscard]] static torch_run parse(std::string_view text);
};

/// @brief Runs bench/compare_torch.py with @p arguments (a subcommand and its flags, e.g.
/// `{"gemm", "--sizes", "4096", ...}`) and returns what it measured.
///
/// Runs the Python found at configure time (or `$CUDAGAP_PYTHON`); its stderr passes through as
/// progress. Never throws: a missing Python, a missing torch or a crash becomes `ok == false`
/// with the reason.
[[nodiscard]] torch_run run_compare_torch(const std::vector<std::string>& arguments);

/// @brief The results of one benchmark run: rows, ratios, targets, notes and errors, printed as
/// a table and written as JSON.
class report {
public:
    /// @brief Starts an empty report of benchmark @p name.
    report(std::string name, std::string description, options settings, environment env);

    /// @brief The benchmark's name, e.g. `alloc`.
    [[nodiscard]] const std::string& name() const noexcept { return name_; }
    /// @brief The flags it runs with.
    [[nodiscard]] const options& settings() const noexcept { return settings_; }
    /// @brief Where it runs.
    [[nodiscard]] const environment& env() const noexcept { return env_; }
    /// @brief The stopping rule of its measurements (`options::rule`).
    [[nodiscard]] const stopping_rule& rule() const noexcept { return rule_; }

    /// @brief The flags that give bench/compare_torch.py the same stopping rule:
    /// `--max-noise PCT --min-samples N --time-limit SECONDS`.
    [[nodiscard]] std::vector<std::string> torch_rule_arguments() const;

    /// @brief Where `run_case` and `compare_torch` read the clocks (`run` sets NVML's for the
    /// GPU part); empty: the clocks are not read and later rows carry none. The header says
    /// whether a source was ever set.
    void set_clock_source(std::function<clock_reading()> source);

    /// @brief Adds a row.
    /// @throws std::invalid_argument when the case or variant is empty, a time is negative or
    /// not finite, min <= median <= max does not hold, or repetitions < 1
    void add(measurement row);

    /// @brief The row of @p case_name and @p variant, or null.
    [[nodiscard]] const measurement* find(std::string_view case_name,
                                          std::string_view variant) const noexcept;

    /// @brief The rows, in the order they were added.
    [[nodiscard]] const std::vector<measurement>& rows() const noexcept { return rows_; }

    /// @brief Adds the ratio of two rows' medians of @p case_name (see `ratio`); when a row is
    /// missing the ratio is recorded without a value and says which.
    /// @return the ratio's value, if both rows exist
    std::optional<double> add_ratio(const std::string& case_name, const std::string& numerator,
                                    const std::string& denominator, std::string note = {});

    /// @brief The ratios, in the order they were added.
    [[nodiscard]] const std::vector<ratio>& ratios() const noexcept { return ratios_; }

    /// @brief Declares a target: reported as `not measured` unless `set_target` is called.
    /// @throws std::invalid_argument when a target of that name exists or the name is empty
    void declare_target(std::string name, std::string requirement);

    /// @brief Records the outcome of the declared target @p name.
    /// @throws std::invalid_argument when no target of that name was declared
    void set_target(std::string_view name, bool met, std::string measured, std::string note = {});

    /// @brief Records that the declared target @p name could not be measured, and why.
    /// @throws std::invalid_argument when no target of that name was declared
    void set_target_not_measured(std::string_view name, std::string why);

    /// @brief The targets, in the order they were declared.
    [[nodiscard]] const std::vector<target>& targets() const noexcept { return targets_; }

    /// @brief Adds a line printed under the table (thread counts, settings, torch's version...).
    void add_note(std::string line);

    /// @brief The notes, in order.
    [[nodiscard]] const std::vector<std::string>& notes() const noexcept { return notes_; }

    /// @brief Records that @p case_name failed with @p what; the run goes on and exits 1.
    void add_error(std::string case_name, std::string what);

    /// @brief The errors, in order (`case: what`).
    [[nodiscard]] const std::vector<std::string>& errors() const noexcept { return errors_; }

    /// @brief Runs @p work, printing @p label as progress; an exception it throws becomes an
    /// error of the report instead of ending the run. The clocks are read before and after it,
    /// and the rows it added that carry no clock check of their own get this one.
    /// @return whether @p work finished without throwing
    template <class Work>
    bool run_case(std::string_view label, Work&& work)
    {
        progress(label);
        const case_window window = open_case();
        bool finished = false;
        try {
            work();
            finished = true;
        } catch (const std::exception& e) {
            add_error(std::string(label), e.what());
        } catch (...) {
            add_error(std::string(label), "an exception that is not a std::exception");
        }
        close_case(window);
        return finished;
    }

    /// @brief Prints `[bench <name>] <message>` on stderr.
    void progress(std::string_view message) const;

    /// @brief Records that the GPU part did not run, and why; targets left undecided then say so.
    void mark_gpu_skipped(std::string reason);

    /// @brief Whether the GPU part was skipped.
    [[nodiscard]] bool gpu_skipped() const noexcept { return gpu_skipped_; }

    /// @brief Gives every target still `not measured` without a note the reason: the GPU part
    /// was skipped, a case failed, or the run did not reach it. `run` calls this before printing.
    void settle_targets();

    /// @brief Runs compare_torch.py with @p arguments unless `--no-torch` was given (then the
    /// result says so), and adds a note with torch's version or why it did not run. The clocks
    /// read before and after it are every case's `clocks`.
    [[nodiscard]] torch_run compare_torch(const std::vector<std::string>& arguments);

    /// @brief Prints the header, the table of rows, the ratios, the targets, the notes and the
    /// errors as plain text.
    void print(std::ostream& out) const;

    /// @brief The report as JSON (schema `cudagap-bench/2`, described in bench/README.md).
    [[nodiscard]] nlohmann::json to_json() const;

    /// @brief 1 when a case failed, else 77 when the GPU part was skipped, else 0.
    [[nodiscard]] int exit_code() const noexcept;

private:
    struct case_window {
        std::size_t first_row = 0;
        clock_reading before{};
    };
    [[nodiscard]] case_window open_case() const;
    void close_case(const case_window& window);
    [[nodiscard]] clock_reading read_clocks() const;
    void print_header(std::ostream& out) const;
    void print_rows(std::ostream& out) const;
    [[nodiscard]] nlohmann::json rows_json() const;
    target& find_target(std::string_view name);

    std::string name_{};
    std::string description_{};
    options settings_;
    environment env_;
    stopping_rule rule_;
    std::function<clock_reading()> clock_source_;
    bool clocks_read_ = false; // a clock source was set at some point of the run
    std::vector<measurement> rows_;
    std::vector<ratio> ratios_;
    std::vector<target> targets_;
    std::vector<std::string> notes_;
    std::vector<std::string> errors_;
    bool gpu_skipped_ = false;
};

/// @brief A benchmark program: what `run` needs to know.
struct suite {
    /// @brief A target as a suite declares it: its name and its rule in words.
    struct target_spec {
        std::string name{};        ///< see `target::name`
        std::string requirement{}; ///< see `target::requirement`
    };

    std::string name{};                 ///< short name, e.g. `alloc` (also the JSON's `benchmark`)
    std::string description{};          ///< one line for `--help` and the report's header
    std::vector<target_spec> targets{}; ///< the targets, declared up front (so never forgotten)
    std::function<void(report&)> cpu{}; ///< the part that needs no GPU; may be empty
    std::function<void(report&)> gpu{}; ///< the part that needs a GPU; may be empty
};

/// @brief Runs @p benchmark with the given command line: parses the flags, probes the
/// environment, runs the CPU part, then the GPU part when a GPU is usable, prints the report
/// on @p out and writes the JSON file when asked.
/// @return the exit code (see `report::exit_code`; 1 for a bad command line, 0 for `--help`)
[[nodiscard]] int run(std::span<const std::string_view> args, const suite& benchmark,
                      std::ostream& out);

/// @brief `run` for `main`: the arguments after the program name, printing on stdout.
[[nodiscard]] int run(int argc, char** argv, const suite& benchmark);

/// @brief Formats a time in milliseconds for a table: `850 ns`, `1.234 us`, `12.35 ms`, `1.500 s`.
[[nodiscard]] std::string format_time(double milliseconds);

/// @brief The case name of a size in bytes, as bench/compare_torch.py's `size_name` writes it (the
/// two sides of a comparison must name a case alike): the largest of GiB, MiB, KiB that divides it
/// exactly (`64 MiB`, `1536 KiB`), else bytes (`100 B`).
[[nodiscard]] std::string size_name(std::size_t bytes);

/// @brief Numbers joined by commas, `1000,2000,4096`: how compare_torch.py's list flags
/// (`--sizes` and the like) take them.
template <class Range>
[[nodiscard]] std::string comma_list(const Range& values)
{
    std::string text;
    for (const auto& value : values) {
        if (!text.empty()) {
            text += ',';
        }
        text += std::to_string(value);
    }
    return text;
}

} // namespace gpu::bench
