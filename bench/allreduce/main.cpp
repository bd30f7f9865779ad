// cudagap-bench-allreduce: NCCL's all-reduce per message size, cudagap's gpu::nccl::all_reduce
// against the raw ncclAllReduce it makes, and torch.distributed.all_reduce, in one run.
//
// Ranks: one per visible GPU, all in this process (gpu::nccl::communicator::init_all for
// cudagap, ncclCommInitAll for the raw side, each rank on its own stream; with two or more,
// each step's calls are one NCCL group). Both sides use the same buffers and the same sums of
// FP32 elements; their samples alternate, so that clock drift falls on both alike, and stop when
// their noise reaches the target or the time limit passes (nvbench's rule). Timing: CUDA events
// on every rank's stream around a batch of back-to-back calls; the slowest rank's time is the
// batch's.
//
// Cases, per size: `<size> out-of-place` (input and output apart) and `<size> in-place` (one
// buffer, what torch.distributed.all_reduce does; torch is compared there). Figures, as
// nccl-tests reports them: algbw = bytes / time, busbw = algbw * 2(n-1)/n, the bandwidth each
// link of a ring carries. With one GPU (n = 1), busbw is 0 by that formula: no byte crosses a
// link, and the out-of-place algbw is NCCL's local copy of the input into the output; in place,
// one rank's result is its input, so the time is what the call costs, not a transfer.
//
// Targets (issue 14): cudagap / raw NCCL at most 1.02 at every size from 64 MiB (out of place);
// on hosts with several GPUs, busbw is reported against the interconnect.
#include "harness.hpp"

#include <gpu/device.hpp>
#include <gpu/event.hpp>
#include <gpu/memory.hpp>
#include <gpu/nccl.hpp>
#include <gpu/stream.hpp>
#include <gpu/timing.hpp>

#include <cuda_bf16.h> // first: nccl.h declares ncclBfloat16 only when the bf16 types exist
#include <nccl.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace {

namespace bench = gpu::bench;
namespace nccl = gpu::nccl;

constexpr std::array<std::size_t, 7> full_sizes{
    std::size_t{4} << 10,  std::size_t{64} << 10,  std::size_t{1} << 20, std::size_t{16} << 20,
    std::size_t{64} << 20, std::size_t{256} << 20, std::size_t{1} << 30};
constexpr std::array<std::size_t, 3> quick_sizes{std::size_t{1} << 20, std::size_t{64} << 20,
                                                 std::size_t{256} << 20};
constexpr std::size_t ratio_from_bytes = std::size_t{64} << 20;
constexpr double ratio_limit = 1.02;

const char* const variant_cudagap = "cudagap";
const char* const variant_raw = "raw NCCL";
const char* const variant_torch = "torch";
const char* const target_ratio = "cudagap / raw NCCL <= 1.02 @ >= 64 MiB";
const char* const target_busbw = "busbw >= 80% of the interconnect (2+ GPUs)";

std::string case_name(std::size_t bytes, bool in_place)
{
    return bench::size_name(bytes) + (in_place ? " in-place" : " out-of-place");
}

// How many repetitions is the report's stopping rule's to decide (bench/harness/sampling.hpp).
struct timing_plan {
    double repetition_ms; // about this much GPU time per sample
};

timing_plan plan_for(const bench::options& settings)
{
    return settings.quick ? timing_plan{5.0} : timing_plan{20.0};
}

std::span<const std::size_t> sizes_for(const bench::options& settings)
{
    return settings.quick ? std::span<const std::size_t>(quick_sizes)
                          : std::span<const std::size_t>(full_sizes);
}

// What one rank owns: its stream, the largest buffers, and the events around a batch; made
// while its device is current (world's constructor).
struct rank_state {
    gpu::stream stream{gpu::stream_flags::non_blocking};
    gpu::device_buffer<float> send;
    gpu::device_buffer<float> recv;
    gpu::event start;
    gpu::event stop;

    explicit rank_state(std::size_t elements) : send(elements, stream), recv(elements, stream)
    {
        send.fill_zero();
        recv.fill_zero();
    }
};

// The raw side's communicators, made by ncclCommInitAll and destroyed with ncclCommDestroy.
class raw_communicators {
public:
    explicit raw_communicators(const std::vector<int>& devices) : comms_(devices.size(), nullptr)
    {
        GPU_NCCL_CHECK(
            ncclCommInitAll(comms_.data(), static_cast<int>(devices.size()), devices.data()));
    }
    ~raw_communicators()
    {
        for (ncclComm_t comm : comms_) {
            if (comm != nullptr && ncclCommDestroy(comm) != ncclSuccess) {
                std::fprintf(stderr, "[bench allreduce] ncclCommDestroy failed\n");
            }
        }
    }
    raw_communicators(const raw_communicators&) = delete;
    raw_communicators& operator=(const raw_communicators&) = delete;
    [[nodiscard]] ncclComm_t operator[](std::size_t rank) const { return comms_[rank]; }

private:
    std::vector<ncclComm_t> comms_;
};

// Every rank's state and both sides' communicators.
struct world {
    std::vector<rank_state> ranks;
    std::vector<nccl::communicator> comms;
    raw_communicators raw;

    world(const std::vector<gpu::device>& devices, const std::vector<int>& ids,
          std::size_t elements)
        : comms(nccl::communicator::init_all(devices)), raw(ids)
    {
        ranks.reserve(devices.size());
        for (const gpu::device& dev : devices) {
            const gpu::scoped_device on(dev);
            ranks.emplace_back(elements);
        }
    }
    // cudagap's ranks close together: one at a time, each one's finalize would wait for the
    // others until its close timeout, then abort.
    ~world() { nccl::close_all(comms); }
    world(const world&) = delete;
    world& operator=(const world&) = delete;
    world(world&&) = delete;
    world& operator=(world&&) = delete;
};

// One step of a side: every rank's all-reduce of @p elements, grouped when there are several.
void cudagap_step(world& w, std::size_t elements, bool in_place)
{
    const auto step = [&] {
        for (std::size_t r = 0; r < w.ranks.size(); ++r) {
            rank_state& s = w.ranks[r];
            const std::span<float> recv(s.recv.data(), elements);
            if (in_place) {
                nccl::all_reduce(w.comms[r], recv, nccl::reduction::sum, s.stream);
            } else {
                nccl::all_reduce(w.comms[r], std::span<const float>(s.send.data(), elements), recv,
                                 nccl::reduction::sum, s.stream);
            }
        }
    };
    if (w.ranks.size() > 1) {
        nccl::group(step);
    } else {
        step();
    }
}

void raw_step(world& w, std::size_t elements, bool in_place)
{
    const bool grouped = w.ranks.size() > 1;
    if (grouped) {
        GPU_NCCL_CHECK(ncclGroupStart());
    }
    for (std::size_t r = 0; r < w.ranks.size(); ++r) {
        rank_state& s = w.ranks[r];
        const void* send = in_place ? static_cast<const void*>(s.recv.data()) : s.send.data();
        GPU_NCCL_CHECK(ncclAllReduce(send, s.recv.data(), elements, ncclFloat32, ncclSum, w.raw[r],
                                     s.stream.get()));
    }
    if (grouped) {
        GPU_NCCL_CHECK(ncclGroupEnd());
    }
}

// The GPU time of @p calls steps, in ms per call: events around the batch on every rank's
// stream, the slowest rank's span.
template <class Step>
double time_batch(world& w, int calls, Step&& step)
{
    for (rank_state& s : w.ranks) {
        s.start.record(s.stream);
    }
    for (int call = 0; call < calls; ++call) {
        step();
    }
    double slowest = 0.0;
    for (rank_state& s : w.ranks) {
        s.stop.record(s.stream);
    }
    for (rank_state& s : w.ranks) {
        slowest = std::max(slowest, static_cast<double>(gpu::elapsed(s.start, s.stop).count()));
    }
    return slowest / calls;
}

struct pair_of_rows {
    bench::measurement cudagap;
    bench::measurement raw;
};

// Both sides of one case, in alternating samples after a warm-up and a calibration, stopped by
// the report's rule (noise target, minimum samples, time limit).
pair_of_rows measure_case(bench::report& r, world& w, const timing_plan& plan, std::size_t bytes,
                          bool in_place)
{
    const std::size_t elements = bytes / sizeof(float);
    const auto ours = [&] { cudagap_step(w, elements, in_place); };
    const auto theirs = [&] { raw_step(w, elements, in_place); };
    static_cast<void>(time_batch(w, 3, ours));
    static_cast<void>(time_batch(w, 3, theirs));
    const double one = std::max(time_batch(w, 1, theirs), 1e-6);
    const int calls = std::clamp(static_cast<int>(plan.repetition_ms / one), 2, 2000);
    const std::vector<bench::take_sample> takes{[&] { return time_batch(w, calls, ours); },
                                                [&] { return time_batch(w, calls, theirs); }};
    const std::vector<bench::series> s = bench::sample_alternating(r.rule(), takes, calls);
    return {bench::measurement::from(s[0], "CUDA events", bench::cache_state::warm),
            bench::measurement::from(s[1], "CUDA events", bench::cache_state::warm)};
}

// algbw into the row (gbps), busbw into its note.
void describe_row(bench::measurement& m, std::size_t bytes, bool in_place, int ranks,
                  const char* variant)
{
    m.case_name = case_name(bytes, in_place);
    m.variant = variant;
    m.math = bench::math_mode::fp32;
    m.set_bytes(static_cast<double>(bytes));
    const double factor = 2.0 * (ranks - 1) / ranks;
    std::array<char, 160> note{};
    std::snprintf(note.data(), note.size(), "algbw; busbw %.1f GB/s%s", *m.gbps * factor,
                  ranks == 1 ? " (n = 1: 2(n-1)/n = 0)" : "");
    m.note = note.data();
}

void set_ratio_target(bench::report& r, std::span<const std::size_t> sizes)
{
    double worst = 0.0;
    std::string where;
    for (const std::size_t bytes : sizes) {
        if (bytes < ratio_from_bytes) {
            continue;
        }
        const std::optional<double> ratio =
            r.add_ratio(case_name(bytes, false), variant_cudagap, variant_raw,
                        "the wrapper's cost over the raw call");
        if (!ratio) {
            r.set_target_not_measured(target_ratio, "the " + bench::size_name(bytes) +
                                                        " case failed (see the errors)");
            return;
        }
        if (*ratio > worst) {
            worst = *ratio;
            where = bench::size_name(bytes);
        }
    }
    std::array<char, 64> text{};
    std::snprintf(text.data(), text.size(), "%.3f (worst, at %s)", worst, where.c_str());
    r.set_target(target_ratio, worst <= ratio_limit, text.data());
}

void torch_part(bench::report& r, const timing_plan& plan, std::span<const std::size_t> sizes,
                int ranks)
{
    if (ranks > 1) {
        r.add_note(
            "torch.distributed is not compared with " + std::to_string(ranks) +
            " GPUs: it needs one process per GPU (torchrun), this benchmark runs them in one");
        return;
    }
    const std::string size_list = bench::comma_list(sizes);
    std::vector<std::string> arguments{
        "allreduce", "--sizes",     size_list,
        "--warmup",  "3",           "--calls",
        "auto",      "--target-ms", std::to_string(plan.repetition_ms)};
    const std::vector<std::string> rule = r.torch_rule_arguments();
    arguments.insert(arguments.end(), rule.begin(), rule.end());
    const bench::torch_run torch = r.compare_torch(arguments);
    for (const std::size_t bytes : sizes) {
        if (const bench::torch_case* c = torch.find(case_name(bytes, true))) {
            bench::measurement m = c->to_measurement(bench::math_mode::fp32);
            describe_row(m, bytes, true, 1, variant_torch);
            m.note =
                "dist.all_reduce (in place), a process group of one rank, backend nccl; " + m.note;
            r.add(std::move(m));
            r.add_ratio(case_name(bytes, true), variant_torch, variant_cudagap);
        }
    }
}

void gpu_part(bench::report& r)
{
    const timing_plan plan = plan_for(r.settings());
    const std::span<const std::size_t> sizes = sizes_for(r.settings());
    const std::vector<gpu::device> devices = gpu::devices();
    std::vector<int> ids;
    for (const gpu::device& dev : devices) {
        ids.push_back(dev.id());
    }
    const int n = static_cast<int>(devices.size());
    world w(devices, ids, sizes.back() / sizeof(float));
    r.add_note(std::to_string(n) + " rank(s), one per GPU, in one process; NCCL " +
               nccl::version().loaded.to_string() +
               "; FP32 sum; algbw = bytes / time, busbw = algbw * 2(n-1)/n "
               "(nccl-tests)" +
               (n == 1 ? "; n = 1: busbw is 0 by the formula, algbw is reported" : ""));
    for (const std::size_t bytes : sizes) {
        for (const bool in_place : {false, true}) {
            r.run_case(case_name(bytes, in_place), [&] {
                pair_of_rows rows = measure_case(r, w, plan, bytes, in_place);
                describe_row(rows.cudagap, bytes, in_place, n, variant_cudagap);
                describe_row(rows.raw, bytes, in_place, n, variant_raw);
                r.add(std::move(rows.cudagap));
                r.add(std::move(rows.raw));
            });
        }
    }
    for (const std::size_t bytes : sizes) {
        if (bytes < ratio_from_bytes) {
            r.add_ratio(case_name(bytes, false), variant_cudagap, variant_raw);
        }
        r.add_ratio(case_name(bytes, true), variant_cudagap, variant_raw);
    }
    set_ratio_target(r, sizes);
    r.set_target_not_measured(target_busbw,
                              n == 1 ? "one GPU: no byte crosses a link (busbw = 0 by 2(n-1)/n)"
                                     : "the interconnect's peak is not known to this benchmark: "
                                       "busbw is in each row's note");
    torch_part(r, plan, sizes, n);
}

} // namespace

int main(int argc, char** argv)
{
    bench::suite s;
    s.name = "allreduce";
    s.description = "NCCL all-reduce per message size: cudagap's gpu::nccl::all_reduce vs the raw "
                    "ncclAllReduce "
                    "vs torch.distributed.all_reduce (algbw, busbw)";
    s.targets = {{target_ratio,
                  "median time of cudagap over raw ncclAllReduce at most 1.02 at every size from "
                  "64 MiB, out of place"},
                 {target_busbw,
                  "bus bandwidth at least 80% of what the GPUs' links allow, with 2 or more GPUs"}};
    s.gpu = gpu_part;
    return bench::run(argc, argv, s);
}
