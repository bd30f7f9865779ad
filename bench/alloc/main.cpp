// cudagap-bench-alloc: what one allocate/free pair of device memory costs the caller.
//
// Variants, per size (4 KiB, 1 MiB, 64 MiB, 411 MiB):
//   cudaMalloc/cudaFree              the synchronous pair most CUDA code still uses
//   cudagap device_buffer            gpu::device_buffer on a stream: cudaMallocAsync from the
//                                    device's pool, set here to keep its memory (keep_all)
//   cudaMallocAsync/cudaFreeAsync    the raw stream-ordered pair device_buffer wraps
//   torch                            torch.empty + del through PyTorch's caching allocator
//   malloc/free (host)               plain host memory, for scale (runs without a GPU)
//
// And the ledger's cost (issue 22: at most 50 ns more a pair). On the host: a 4 KiB
// allocate/free pair through a host resource, then through gpu::ledger_resource over the same
// resource, directly and behind the resource_ref device_buffer stores. On the GPU: the 4 KiB
// device_buffer pair from the device's default resource (the ledger over the retry over the
// pool) against the same buffer from a bare gpu::pool_resource, in alternating samples.
//
// Allocation is host work, so every variant is timed with the host clock around back-to-back
// pairs plus one synchronisation at the end of each sample (compare_torch.py times torch.empty
// the same way), the samples stopped when their noise reaches the target or the time limit
// passes (nvbench's rule); the per-pair median is reported. cudagap's and the raw pooled pairs
// alternate sample by sample, and each also runs captured into a CUDA graph (allocation and free
// nodes) and replayed: the "graph" column.
//
// Targets (issue 6): the pooled pair at most 2 us at every size, and at least 10x faster than
// cudaMalloc/cudaFree from 1 MiB up.
#include "harness.hpp"

#include <gpu/capture.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/graph.hpp>
#include <gpu/ledger_resource.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>
#include <gpu/timing.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

namespace bench = gpu::bench;

constexpr std::array<std::size_t, 4> sizes{std::size_t{4} << 10, std::size_t{1} << 20,
                                           std::size_t{64} << 20, std::size_t{411} << 20};
constexpr double pooled_target_us = 2.0;
constexpr double speedup_target = 10.0;
constexpr std::size_t speedup_from_bytes = std::size_t{1} << 20;

const char* const variant_malloc = "cudaMalloc/cudaFree";
const char* const variant_cudagap = "cudagap device_buffer";
const char* const variant_async = "cudaMallocAsync/cudaFreeAsync";
const char* const variant_torch = "torch";
const char* const variant_host = "malloc/free (host)";

std::string pooled_target(std::size_t bytes)
{
    return "pooled pair <= 2 us @ " + bench::size_name(bytes);
}
std::string speedup_target_name(std::size_t bytes)
{
    return "pooled >= 10x cudaMalloc @ " + bench::size_name(bytes);
}

// About this much host time per sample: long enough for the host clock, short enough for many
// samples within the time limit.
double sample_target_ms(const bench::options& settings)
{
    return settings.quick ? 2.0 : 5.0;
}

// One sample of `calls` pairs and the `finish` that ends them (a synchronisation), all inside
// the host-clock window: what a caller pays. Milliseconds per pair.
template <class Pair, class Finish>
bench::take_sample pairs_sample(int calls, Pair& pair, Finish& finish)
{
    return [&pair, &finish, calls] {
        const gpu::host_timer timer;
        for (int i = 0; i < calls; ++i) {
            pair();
        }
        finish();
        return timer.elapsed().count() / calls;
    };
}

// How many pairs fill a sample, after a warm-up.
template <class Pair, class Finish>
int pairs_per_sample(const bench::options& settings, Pair& pair, Finish& finish)
{
    return bench::calibrate_calls(
        [&] {
            pair();
            finish();
        },
        sample_target_ms(settings), 3, 20000);
}

// Times `pair` alone: samples of back-to-back pairs and a `finish`, stopped by the rule.
template <class Pair, class Finish>
bench::measurement time_pairs(const bench::report& r, Pair&& pair, Finish&& finish)
{
    const int calls = pairs_per_sample(r.settings(), pair, finish);
    const bench::series s =
        bench::sample_series(r.rule(), pairs_sample(calls, pair, finish), calls);
    return bench::measurement::from(s, "host clock");
}

void add_row(bench::report& r, bench::measurement m, std::size_t bytes, const char* variant,
             std::string note = {})
{
    m.case_name = bench::size_name(bytes);
    m.variant = variant;
    m.note = std::move(note);
    r.add(std::move(m));
}

// The ledger's overhead, on the host: the same malloc/free pair bare and recorded. The ledger is
// the process's (what every default resource records in), on device 0, under the thread's tag.
const char* const variant_untracked = "host resource, untracked";
const char* const variant_ledger = "host resource + ledger";
const char* const variant_ledger_ref = "host resource + ledger, by resource_ref";
const char* const ledger_target = "ledger overhead <= 50 ns a pair";
constexpr double ledger_target_ns = 50.0;
constexpr std::size_t ledger_bytes = std::size_t{4} << 10;

struct host_heap {
    void* allocate(gpu::stream_ref, std::size_t bytes, std::size_t) { return std::malloc(bytes); }
    void deallocate(gpu::stream_ref, void* p, std::size_t, std::size_t) noexcept { std::free(p); }
    friend bool operator==(const host_heap&, const host_heap&) = default;
};

void ledger_row(bench::report& r, const std::string& name, const char* variant, auto& resource,
                const char* note)
{
    r.run_case(name + " " + variant, [&] {
        bench::measurement m = time_pairs(
            r,
            [&] {
                void* volatile p = resource.allocate(gpu::legacy_default_stream, ledger_bytes,
                                                     gpu::default_alignment);
                resource.deallocate(gpu::legacy_default_stream, p, ledger_bytes,
                                    gpu::default_alignment);
            },
            [] {});
        m.case_name = name;
        m.variant = variant;
        m.note = note;
        r.add(std::move(m));
    });
}

void ledger_part(bench::report& r)
{
    const std::string name = "ledger " + bench::size_name(ledger_bytes);
    host_heap heap;
    gpu::ledger_resource<host_heap> recorded(heap, 0);
    // What device_buffer will do: the stack behind a resource_ref, one indirect call a step.
    const gpu::resource_ref<> by_ref = recorded;
    ledger_row(r, name, variant_untracked, heap, "malloc/free behind the resource interface");
    ledger_row(r, name, variant_ledger, recorded,
               "gpu::ledger_resource over the same resource (global ledger)");
    ledger_row(r, name, variant_ledger_ref, by_ref,
               "the same, through the 16-byte reference device_buffer stores");
    r.add_ratio(name, variant_ledger, variant_untracked, "the ledger's cost over the bare pair");
    r.add_ratio(name, variant_ledger_ref, variant_ledger, "the reference's indirect calls");
    const bench::measurement* bare = r.find(name, variant_untracked);
    const bench::measurement* ledger = r.find(name, variant_ledger);
    if (bare == nullptr || ledger == nullptr) {
        r.set_target_not_measured(ledger_target, "a ledger case failed (see the errors)");
        return;
    }
    const double overhead_ns = (ledger->median_ms - bare->median_ms) * 1e6;
    std::array<char, 32> text{};
    std::snprintf(text.data(), text.size(), "%.1f ns", overhead_ns);
    r.set_target(ledger_target, overhead_ns <= ledger_target_ns, text.data());
}

void cpu_part(bench::report& r)
{
    for (const std::size_t bytes : sizes) {
        r.run_case(bench::size_name(bytes) + " " + variant_host, [&] {
            // The volatile store keeps the compiler from eliding the malloc/free pair.
            void* volatile sink = nullptr;
            add_row(r,
                    time_pairs(
                        r,
                        [&] {
                            sink = std::malloc(bytes);
                            std::free(sink);
                        },
                        [] {}),
                    bytes, variant_host, "for scale: no GPU involved");
        });
    }
    ledger_part(r);
}

void set_targets(bench::report& r)
{
    for (const std::size_t bytes : sizes) {
        const std::string name = bench::size_name(bytes);
        const bench::measurement* pooled = r.find(name, variant_cudagap);
        const bench::measurement* plain = r.find(name, variant_malloc);
        if (pooled == nullptr) {
            r.set_target_not_measured(pooled_target(bytes),
                                      "the cudagap case failed (see the errors)");
        } else {
            const double us = pooled->median_ms * 1e3;
            r.set_target(pooled_target(bytes), us <= pooled_target_us,
                         bench::format_time(pooled->median_ms));
        }
        if (bytes < speedup_from_bytes) {
            continue;
        }
        if (pooled == nullptr || plain == nullptr || pooled->median_ms <= 0.0) {
            r.set_target_not_measured(speedup_target_name(bytes),
                                      "a case it needs failed (see the errors)");
        } else {
            const double speedup = plain->median_ms / pooled->median_ms;
            std::array<char, 32> text{};
            std::snprintf(text.data(), text.size(), "%.1fx", speedup);
            r.set_target(speedup_target_name(bytes), speedup >= speedup_target, text.data());
        }
    }
}

// The ledger's overhead on the device_buffer path: a device_buffer from the default resource
// (ledger, retry, pool) against one from a bare pool_resource (the same pool, untracked).
const char* const variant_buffer_ledger = "device_buffer, default resource (ledger)";
const char* const variant_buffer_bare = "device_buffer, bare pool_resource";
const char* const buffer_ledger_target = "ledger on the device_buffer path <= 50 ns a pair";

void time_buffer_ledger(bench::report& r, gpu::stream_ref stream)
{
    const std::string name = "ledger " + bench::size_name(ledger_bytes) + " device_buffer";
    gpu::pool_resource bare(stream.device());
    const auto sync = [&] { stream.synchronize(); };
    const auto tracked = [&] { const gpu::device_buffer<std::byte> b(ledger_bytes, stream); };
    const auto untracked = [&] {
        const gpu::device_buffer<std::byte> b(ledger_bytes, stream, bare);
    };
    const int calls = pairs_per_sample(r.settings(), tracked, sync);
    const std::vector<bench::take_sample> takes{pairs_sample(calls, tracked, sync),
                                                pairs_sample(calls, untracked, sync)};
    const std::vector<bench::series> both = bench::sample_alternating(r.rule(), takes, calls);
    const std::array<const char*, 2> variants{variant_buffer_ledger, variant_buffer_bare};
    std::array<double, 2> medians{};
    for (std::size_t k = 0; k < 2; ++k) {
        bench::measurement m = bench::measurement::from(both[k], "host clock");
        m.case_name = name;
        m.variant = variants[k];
        medians[k] = m.median_ms;
        r.add(std::move(m));
    }
    r.add_ratio(name, variant_buffer_ledger, variant_buffer_bare,
                "the ledger and the retry adaptor over the bare pool");
    const double overhead_ns = (medians[0] - medians[1]) * 1e6;
    std::array<char, 48> text{};
    std::snprintf(text.data(), text.size(), "%.1f ns", overhead_ns);
    r.set_target(buffer_ledger_target, overhead_ns <= ledger_target_ns, text.data());
}

// The pooled pairs, cudagap's and the raw one, in alternating samples; then the same pairs
// captured into one CUDA graph each (allocation and free nodes) and replayed, each replay and
// its synchronisation a sample.
void time_pooled(bench::report& r, std::size_t bytes, gpu::stream_ref stream)
{
    const auto sync = [&] { stream.synchronize(); };
    const auto ours = [&] { const gpu::device_buffer<std::byte> buffer(bytes, stream); };
    const auto raw = [&] {
        void* pointer = nullptr;
        GPU_CUDA_CHECK(cudaMallocAsync(&pointer, bytes, stream.get()));
        GPU_CUDA_CHECK(cudaFreeAsync(pointer, stream.get()));
    };
    const int calls = pairs_per_sample(r.settings(), ours, sync);
    const std::vector<bench::take_sample> takes{pairs_sample(calls, ours, sync),
                                                pairs_sample(calls, raw, sync)};
    const std::vector<bench::series> pooled = bench::sample_alternating(r.rule(), takes, calls);
    // At most 100 pairs a graph: each allocation node keeps its own virtual address range for
    // the graph's lifetime (the physical memory is shared), 100 x 411 MiB of it at most.
    const int graph_calls = std::min(calls, 100);
    std::vector<bench::series> replayed;
    try {
        std::vector<gpu::graph_exec> execs;
        for (const bench::device_call& pair : {bench::device_call(ours), bench::device_call(raw)}) {
            execs.emplace_back(gpu::capture(stream, [&](gpu::stream_ref) {
                for (int i = 0; i < graph_calls; ++i) {
                    pair();
                }
            }));
            execs.back().launch(stream); // the warm-up replay maps the graph's memory
        }
        sync();
        const auto replay = [&](const gpu::graph_exec& exec) {
            return bench::take_sample([&] {
                const gpu::host_timer timer;
                exec.launch(stream);
                sync();
                return timer.elapsed().count() / graph_calls;
            });
        };
        const std::vector<bench::take_sample> graph_takes{replay(execs[0]), replay(execs[1])};
        replayed = bench::sample_alternating(r.rule(), graph_takes, graph_calls);
    } catch (const std::exception& e) {
        r.add_error(bench::size_name(bytes) + " graph", e.what());
    }
    const std::array<const char*, 2> variants{variant_cudagap, variant_async};
    const std::array<const char*, 2> notes{"stream-ordered, pool set to keep its memory",
                                           "the raw calls device_buffer makes"};
    for (std::size_t k = 0; k < 2; ++k) {
        bench::measurement m = bench::measurement::from(pooled[k], "host clock");
        if (!replayed.empty()) {
            m.graph = bench::side_timing::from(replayed[k]);
        }
        add_row(r, std::move(m), bytes, variants[k], notes[k]);
    }
}

// The torch rows; whether torch ran.
bool add_torch_rows(bench::report& r)
{
    const std::string size_list = bench::comma_list(sizes);
    std::vector<std::string> arguments{
        "alloc",    "--sizes",     size_list,
        "--warmup", "3",           "--calls",
        "auto",     "--target-ms", std::to_string(sample_target_ms(r.settings()))};
    const std::vector<std::string> rule = r.torch_rule_arguments();
    arguments.insert(arguments.end(), rule.begin(), rule.end());
    const bench::torch_run torch = r.compare_torch(arguments);
    for (const std::size_t bytes : sizes) {
        if (const bench::torch_case* c = torch.find(bench::size_name(bytes))) {
            bench::measurement m = c->to_measurement(bench::math_mode::none, "host clock");
            m.note = "torch.empty + del, caching allocator warm; no graph column: in a "
                     "torch.cuda.CUDAGraph the tensor's memory is fixed at capture, no allocation "
                     "is replayed";
            r.add(std::move(m));
        }
    }
    return torch.ok;
}

void gpu_part(bench::report& r)
{
    gpu::stream stream(gpu::stream_flags::non_blocking);
    // The pool keeps freed memory only when told to: set it here, as PyTorch's caching
    // allocator keeps its blocks, so that the pooled variants (ours and the raw cudaMallocAsync
    // pair, which use the same pool) measure reuse, not the driver mapping memory again after
    // every synchronisation (CUDA's default threshold, 0).
    const gpu::device dev = gpu::current_device();
    if (!gpu::memory_pool_info(dev).supported) {
        r.add_note("this device has no memory pools: device_buffer falls back to cudaMalloc");
    } else {
        const gpu::memory_pool pool = gpu::memory_pool::current(dev);
        pool.set_release_threshold(gpu::memory_pool::keep_all);
        r.add_note("device pool release threshold set to keep_all (cached like PyTorch's "
                   "allocator; CUDA's default is 0)");
    }
    r.add_note("graph: the pairs of a sample captured into one CUDA graph (allocation and free "
               "nodes, from the graph's own memory pool) and replayed, with its synchronisation");
    for (const std::size_t bytes : sizes) {
        const std::string name = bench::size_name(bytes);
        r.run_case(name + " " + variant_malloc, [&] {
            add_row(r,
                    time_pairs(
                        r,
                        [&] {
                            void* pointer = nullptr;
                            GPU_CUDA_CHECK(cudaMalloc(&pointer, bytes));
                            GPU_CUDA_CHECK(cudaFree(pointer));
                        },
                        [] {}),
                    bytes, variant_malloc);
        });
        r.run_case(name + " pooled", [&] { time_pooled(r, bytes, stream); });
    }
    r.run_case("ledger on the device_buffer path", [&] { time_buffer_ledger(r, stream); });
    const bool torch = add_torch_rows(r);
    for (const std::size_t bytes : sizes) {
        const std::string name = bench::size_name(bytes);
        r.add_ratio(name, variant_malloc, variant_cudagap, "how much faster the pool is");
        r.add_ratio(name, variant_cudagap, variant_async, "the wrapper's cost over the raw pair");
        if (torch) {
            r.add_ratio(name, variant_torch, variant_cudagap);
        }
    }
    set_targets(r);
    const gpu::pool_info pool = gpu::memory_pool_info(dev);
    if (pool.supported) {
        r.add_note("device pool after the run: " + gpu::format_bytes(pool.reserved_bytes) +
                   " reserved, " + gpu::format_bytes(pool.used_bytes) +
                   " in use (freed blocks are kept for reuse)");
    }
}

} // namespace

int main(int argc, char** argv)
{
    bench::suite s;
    s.name = "alloc";
    s.description = "allocate/free pairs: cudaMalloc/cudaFree vs cudagap's pooled device_buffer "
                    "vs the raw cudaMallocAsync pair vs torch.empty (host malloc for scale)";
    for (const std::size_t bytes : sizes) {
        s.targets.push_back(
            {pooled_target(bytes), "median cudagap device_buffer allocate/free pair at most 2 us"});
    }
    for (const std::size_t bytes : sizes) {
        if (bytes >= speedup_from_bytes) {
            s.targets.push_back({speedup_target_name(bytes),
                                 "cudaMalloc/cudaFree pair at least 10x the pooled pair's median"});
        }
    }
    s.targets.push_back({ledger_target, "median pair through gpu::ledger_resource at most 50 ns "
                                        "above the same pair untracked (host, 4 KiB)"});
    s.targets.push_back({buffer_ledger_target,
                         "median 4 KiB device_buffer pair from the default resource at most 50 ns "
                         "above the same buffer from a bare pool_resource"});
    s.cpu = cpu_part;
    s.gpu = gpu_part;
    return bench::run(argc, argv, s);
}
