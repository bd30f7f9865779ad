// A training run as the ledger sees it, on the host: the allocations of a small model's
// training (parameters, gradients, working copy, optimizer state, per step activations and
// scratch, a convolution plan's workspace, a communicator's measured buffers) made through
// gpu::ledger_resource over a resource that hands out addresses and no memory. Prints the
// ledger's table and the out-of-memory error a limiting adaptor then provokes, and writes the
// run's timeline (usage: cudagap_memory_ledger_demo TRACE.json).
//
// The numbers are the demo's; what is real is the path: tags, scopes, the ledger, the trace
// file, the advice. docs/memory.md shows its output; tests/bench/test_memory_trace.py draws its
// trace.
#include <gpu/error.hpp>
#include <gpu/ledger_resource.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/memory_trace.hpp>
#include <gpu/resource_adaptors.hpp>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

// Addresses without memory: the ledger never touches what it counts.
struct address_space {
    void* allocate(gpu::stream_ref, std::size_t bytes, std::size_t alignment)
    {
        next = (next + alignment - 1) / alignment * alignment;
        void* p = reinterpret_cast<void*>(next);
        next += bytes;
        return p;
    }
    void deallocate(gpu::stream_ref, void*, std::size_t, std::size_t) noexcept {}
    friend bool operator==(const address_space&, const address_space&) = default;
    friend void get_property(const address_space&, gpu::device_accessible) noexcept {}
    std::uintptr_t next = 0x7f0000000000;
};

thread_local std::string_view range = {};
std::string_view range_name() noexcept
{
    return range;
}

gpu::memory_tag standard(gpu::memory_category c)
{
    return gpu::memory_tag::standard(c);
}

using resource = gpu::ledger_resource<gpu::device_resource_ref>;
using held = std::vector<std::pair<void*, std::size_t>>;

void* take(resource& r, gpu::memory_category c, std::size_t bytes, held& into)
{
    const gpu::memory_tag_scope scope(standard(c));
    void* p = r.allocate(gpu::legacy_default_stream, bytes);
    into.emplace_back(p, bytes);
    return p;
}

void give_back(resource& r, held& from)
{
    while (!from.empty()) {
        r.deallocate(gpu::legacy_default_stream, from.back().first, from.back().second);
        from.pop_back();
    }
}

void let_time_pass()
{
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

// One step: the forward pass keeps each layer's output, the backward pass frees them in
// reverse with a scratch buffer each, the optimizer's update uses one more.
void step(resource& r, const gpu::memory_tag& plan_workspace)
{
    held activations;
    range = "nn forward";
    for (std::size_t layer = 0; layer < 4; ++layer) {
        take(r, gpu::memory_category::activations, (6 - layer) * mib, activations);
        let_time_pass();
    }
    range = "nn backward";
    held scratch;
    {
        const gpu::memory_tag_scope scope(plan_workspace); // the backward plan's own
        void* w = r.allocate(gpu::legacy_default_stream, 8 * mib);
        scratch.emplace_back(w, 8 * mib);
    }
    while (!activations.empty()) {
        held tmp;
        take(r, gpu::memory_category::scratch, 2 * mib, tmp);
        let_time_pass();
        give_back(r, tmp);
        r.deallocate(gpu::legacy_default_stream, activations.back().first,
                     activations.back().second);
        activations.pop_back();
    }
    give_back(r, scratch);
    range = "adamw step";
    held update;
    take(r, gpu::memory_category::scratch, 1 * mib, update);
    let_time_pass();
    give_back(r, update);
    range = {};
}

} // namespace

int main(int argc, char** argv)
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s TRACE.json\n", argv[0]);
        return 2;
    }
    try {
        gpu::memory_ledger::set_range_name_source(range_name);
        address_space space;
        // At most 96 MiB: the limit the run's last request passes.
        gpu::limiting_adaptor<gpu::device_resource_ref> limited(gpu::device_resource_ref(space),
                                                                96 * mib, 0);
        resource r(gpu::device_resource_ref(limited), 0);
        // As the dnn library wrapper will define it: a tag of its own, with its fix.
        const gpu::memory_tag plan_workspace = gpu::memory_tag::define(
            "cuDNN plan workspace", gpu::memory_category::workspace,
            "lower cuDNN's workspace budget (dnn::convolution_options::workspace_budget_bytes; "
            "cudagap-infer: server_options::workspace_budget_bytes)");

        gpu::memory_trace trace(argv[1]);
        held model;
        range = "nn plan";
        take(r, gpu::memory_category::parameters, 12 * mib, model);
        take(r, gpu::memory_category::gradients, 12 * mib, model);
        take(r, gpu::memory_category::working_copy, 6 * mib, model);
        take(r, gpu::memory_category::optimizer_state, 24 * mib, model);
        {
            held search; // the algorithm search's trial buffers, gone after planning
            take(r, gpu::memory_category::planning_scratch, 16 * mib, search);
            let_time_pass();
            give_back(r, search);
        }
        const gpu::measured_holding communicator = gpu::memory_ledger::global().hold(
            0, standard(gpu::memory_category::communicator), 5 * mib);
        for (int i = 0; i < 12; ++i) {
            step(r, plan_workspace);
        }

        const gpu::memory_ledger_snapshot snapshot =
            gpu::memory_ledger::global().snapshot(0, gpu::read_device_memory(0));
        std::printf("%s\n", snapshot.to_text().c_str());

        // A batch five times larger: the limit refuses its second layer's output, and the
        // error says who holds the memory while the first one is still held.
        held big_batch;
        try {
            range = "nn forward";
            for (std::size_t layer = 0; layer < 4; ++layer) {
                take(r, gpu::memory_category::activations, 5 * (6 - layer) * mib, big_batch);
                let_time_pass();
            }
            std::printf("the limit let the large batch through\n");
            return 1;
        } catch (const gpu::out_of_memory& e) {
            std::printf("out of memory: %s\n%s\n", e.what(),
                        gpu::out_of_memory_holders(gpu::memory_ledger::global().snapshot(0, {}),
                                                   e.requested_bytes(),
                                                   standard(gpu::memory_category::activations))
                            .c_str());
        }
        let_time_pass();
        give_back(r, big_batch);
        trace.write();
        give_back(r, model);
        std::printf("trace written to %s\n", argv[1]);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap_memory_ledger_demo: %s\n", e.what());
        return 1;
    }
}
