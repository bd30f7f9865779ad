// gpu/memory_ledger.hpp: the counts per device and tag (under threads too), refused frees,
// measured holdings, the snapshot's lines and text, and the out-of-memory advice.
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_tag.hpp>

#include "catch.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

const gpu::memory_tag params = gpu::memory_tag::standard(gpu::memory_category::parameters);
const gpu::memory_tag acts = gpu::memory_tag::standard(gpu::memory_category::activations);
const gpu::memory_tag grads = gpu::memory_tag::standard(gpu::memory_category::gradients);

// Distinct fake addresses: the ledger never dereferences them.
const void* address(std::uintptr_t n)
{
    return reinterpret_cast<const void*>(0x10000 + n * 256);
}

const gpu::memory_ledger_row* row_of(const std::vector<gpu::memory_ledger_row>& rows,
                                     gpu::memory_tag tag)
{
    const auto found =
        std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.tag == tag; });
    return found == rows.end() ? nullptr : &*found;
}

gpu::device_memory_reading reading(std::size_t total, std::size_t free, std::size_t pool_reserved,
                                   std::size_t pool_used)
{
    gpu::device_memory_reading r;
    r.known = true;
    r.total_bytes = total;
    r.free_bytes = free;
    r.pool_reserved_bytes = pool_reserved;
    r.pool_used_bytes = pool_used;
    return r;
}

} // namespace

TEST_CASE("the ledger counts current, peak, live and total bytes per tag and device",
          "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(0, address(1), 1000, params);
    ledger.record_allocation(0, address(2), 500, acts);
    ledger.record_allocation(0, address(3), 300, acts);
    ledger.record_allocation(1, address(4), 7, acts); // another device: counted apart
    REQUIRE(ledger.record_free(0, address(2)).has_value());
    ledger.record_allocation(0, address(5), 100, acts);

    const auto rows = ledger.rows(0);
    REQUIRE(rows.size() == 2);
    CHECK(rows[0].tag == params); // the largest first
    CHECK(rows[0].current_bytes == 1000);
    const gpu::memory_ledger_row* a = row_of(rows, acts);
    REQUIRE(a != nullptr);
    CHECK(a->name == "activations");
    CHECK(a->category == gpu::memory_category::activations);
    CHECK(a->current_bytes == 400);
    CHECK(a->peak_bytes == 800);
    CHECK(a->live_allocations == 2);
    CHECK(a->total_allocations == 3);
    CHECK(row_of(ledger.rows(1), acts)->current_bytes == 7);
    CHECK(ledger.rows(2).empty());

    const gpu::memory_ledger_snapshot snap = ledger.snapshot(0, {});
    CHECK(snap.tracked_bytes == 1400);
    CHECK(snap.tracked_peak_bytes == 1800);
    ledger.reset_peaks(0);
    CHECK(row_of(ledger.rows(0), acts)->peak_bytes == 400);
    CHECK(ledger.snapshot(0, {}).tracked_peak_bytes == 1400);
}

TEST_CASE("a free returns what the allocation recorded", "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(gpu::memory_ledger::host, address(1), 4096, grads);
    const std::optional<gpu::ledger_entry> entry =
        ledger.record_free(gpu::memory_ledger::host, address(1));
    REQUIRE(entry.has_value());
    CHECK(entry->bytes == 4096);
    CHECK(entry->tag == grads);
    CHECK(row_of(ledger.rows(gpu::memory_ledger::host), grads)->current_bytes == 0);
}

TEST_CASE("a free of an unknown pointer is refused and changes no count", "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(0, address(1), 100, params);
    const std::size_t before = ledger.refused_frees();
    CHECK_FALSE(ledger.record_free(0, address(99)).has_value()); // never allocated
    CHECK_FALSE(ledger.record_free(1, address(1)).has_value());  // another device's pointer
    REQUIRE(ledger.record_free(0, address(1)).has_value());
    CHECK_FALSE(ledger.record_free(0, address(1)).has_value());   // freed twice
    CHECK_FALSE(ledger.record_free(500, address(1)).has_value()); // no such device
    CHECK(ledger.refused_frees() == before + 4);
    CHECK_FALSE(ledger.record_free(0, nullptr).has_value()); // null frees nothing, silently
    CHECK(ledger.refused_frees() == before + 4);
    const gpu::memory_ledger_row* p = row_of(ledger.rows(0), params);
    CHECK(p->current_bytes == 0);
    CHECK(p->live_allocations == 0);
    CHECK(ledger.snapshot(0, {}).refused_frees == before + 4);
}

TEST_CASE("a pointer recorded while live replaces the stale record", "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(0, address(1), 100, params);
    ledger.record_allocation(0, address(1), 60, acts); // its free bypassed the ledger
    CHECK(ledger.duplicate_records() == 1);
    CHECK(row_of(ledger.rows(0), params)->current_bytes == 0);
    CHECK(row_of(ledger.rows(0), acts)->current_bytes == 60);
    CHECK(ledger.record_free(0, address(1))->bytes == 60);
}

TEST_CASE("forget stops counting without a free", "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(0, address(1), 100, params);
    CHECK(ledger.forget(0, address(1)));
    CHECK_FALSE(ledger.forget(0, address(1)));
    CHECK(row_of(ledger.rows(0), params)->current_bytes == 0);
    CHECK_FALSE(ledger.record_free(0, address(1)).has_value());
}

TEST_CASE("bad arguments are refused with the values", "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    CHECK_THROWS_WITH(ledger.record_allocation(64, address(1), 1, params),
                      ContainsSubstring("device 64 is outside") && ContainsSubstring("0 to 63"));
    CHECK_THROWS_AS(ledger.record_allocation(-2, address(1), 1, params), std::invalid_argument);
    CHECK_THROWS_WITH(ledger.record_allocation(0, nullptr, 1, params),
                      ContainsSubstring("null pointer"));
    CHECK_THROWS_AS(ledger.hold(99, params, 1), std::invalid_argument);
    CHECK_THROWS_AS(ledger.rows(-5), std::invalid_argument);
}

TEST_CASE("the counts stay exact under threads", "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    constexpr int threads = 8;
    constexpr int per_thread = 4000;
    const std::vector<gpu::memory_tag> tags{params, acts, grads};
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) {
        workers.emplace_back([&, t] {
            // Each thread allocates its own addresses on devices 0 and 1 and frees two of
            // every three, leaving a known remainder.
            for (int i = 0; i < per_thread; ++i) {
                const auto n = static_cast<std::uintptr_t>(t * per_thread + i);
                const int device = i % 2;
                ledger.record_allocation(device, address(n), 16, tags[n % 3]);
                if (i % 3 != 0) {
                    REQUIRE(ledger.record_free(device, address(n)).has_value());
                }
            }
        });
    }
    for (std::thread& w : workers) {
        w.join();
    }
    std::size_t live = 0;
    std::size_t total = 0;
    std::size_t bytes = 0;
    for (const int device : {0, 1}) {
        for (const gpu::memory_ledger_row& row : ledger.rows(device)) {
            live += row.live_allocations;
            total += row.total_allocations;
            bytes += row.current_bytes;
            CHECK(row.current_bytes == row.live_allocations * 16);
            CHECK(row.peak_bytes >= row.current_bytes);
        }
    }
    const std::size_t kept = threads * ((per_thread + 2) / 3);
    CHECK(total == std::size_t{threads} * per_thread);
    CHECK(live == kept);
    CHECK(bytes == kept * 16);
    CHECK(ledger.refused_frees() == 0);
    // Every remaining pointer frees exactly once.
    for (int t = 0; t < threads; ++t) {
        for (int i = 0; i < per_thread; i += 3) {
            const auto n = static_cast<std::uintptr_t>(t * per_thread + i);
            REQUIRE(ledger.record_free(i % 2, address(n)).has_value());
        }
    }
    CHECK(ledger.snapshot(0, {}).tracked_bytes == 0);
    CHECK(ledger.snapshot(1, {}).tracked_bytes == 0);
}

TEST_CASE("measured memory is held until its holding ends", "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    const gpu::memory_tag comm =
        gpu::memory_tag::define("test communicator", gpu::memory_category::communicator);
    gpu::measured_holding held = ledger.hold(0, comm, 5000);
    CHECK(held.bytes() == 5000);
    CHECK(held.tag() == comm);
    const gpu::memory_ledger_row* row = row_of(ledger.rows(0), comm);
    CHECK(row->current_bytes == 5000);
    CHECK(row->measured_bytes == 5000);
    gpu::measured_holding moved = std::move(held);
    CHECK(held.bytes() == 0); // NOLINT(bugprone-use-after-move): the documented state
    CHECK(row_of(ledger.rows(0), comm)->current_bytes == 5000);
    {
        gpu::measured_holding second = ledger.hold(0, comm, 1000);
        moved = std::move(second); // releases the 5000 first
    }
    CHECK(row_of(ledger.rows(0), comm)->current_bytes == 1000);
    moved.release();
    moved.release();
    const gpu::memory_ledger_row* after = row_of(ledger.rows(0), comm);
    CHECK(after->current_bytes == 0);
    CHECK(after->measured_bytes == 0);
    CHECK(after->peak_bytes == 6000);
    CHECK(after->total_allocations == 2);
}

TEST_CASE("the snapshot's pool and untracked lines come from the device's numbers",
          "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(0, address(1), 6000, acts);
    ledger.record_allocation(0, address(2), 1000, params);
    // 20000 total, 11000 used: the pool holds 9000 of which 7000 used; the graphs 1000 of 600.
    gpu::device_memory_reading r = reading(20000, 9000, 9000, 7000);
    r.graph_reserved_bytes = 1000;
    r.graph_used_bytes = 600;
    r.graph_used_peak_bytes = 800;
    const gpu::memory_ledger_snapshot snap = ledger.snapshot(0, r);
    CHECK(snap.pool_unused_bytes() == 2000 + 400);
    CHECK(snap.tracked_bytes == 7600); // the graphs' 600 are a measured row
    REQUIRE(snap.untracked_bytes().has_value());
    CHECK(*snap.untracked_bytes() == 11000 - 7600 - 2400);
    const gpu::memory_ledger_row* graphs =
        row_of(snap.rows, gpu::memory_tag::standard(gpu::memory_category::graph_pool));
    REQUIRE(graphs != nullptr);
    CHECK(graphs->measured_bytes == 600);
    CHECK(graphs->peak_bytes == 800);
    CHECK(snap.rows.front().tag == acts);

    // What captures allocated is recorded under graph pools and is part of the graphs' used
    // memory: the row is the larger of the two, the measured part only the difference.
    gpu::memory_ledger captured;
    captured.record_allocation(0, address(3), 500,
                               gpu::memory_tag::standard(gpu::memory_category::graph_pool));
    const gpu::memory_ledger_snapshot both = captured.snapshot(0, r);
    const gpu::memory_ledger_row* graph_row =
        row_of(both.rows, gpu::memory_tag::standard(gpu::memory_category::graph_pool));
    REQUIRE(graph_row != nullptr);
    CHECK(graph_row->current_bytes == 600);
    CHECK(graph_row->measured_bytes == 100);
    CHECK(both.tracked_bytes == 600);
    r.graph_used_bytes = 300; // a graph not launched yet: the record holds more than the device
    CHECK(row_of(captured.snapshot(0, r).rows,
                 gpu::memory_tag::standard(gpu::memory_category::graph_pool))
              ->current_bytes == 500);

    const gpu::memory_ledger_snapshot unknown = ledger.snapshot(0, {});
    CHECK_FALSE(unknown.untracked_bytes().has_value());
    // Counting more than the device says is used shows as a negative untracked line.
    CHECK(*ledger.snapshot(0, reading(20000, 15000, 0, 0)).untracked_bytes() == 5000 - 7000);
}

TEST_CASE("the snapshot prints as a table with its extra lines", "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(0, address(1), std::size_t{3} << 30, acts);
    ledger.record_allocation(0, address(2), std::size_t{1} << 20, params);
    const gpu::measured_holding comm = ledger.hold(
        0, gpu::memory_tag::standard(gpu::memory_category::communicator), std::size_t{200} << 20);
    const std::string text =
        ledger
            .snapshot(0, reading(std::size_t{16} << 30, std::size_t{11} << 30, std::size_t{4} << 30,
                                 (std::size_t{3} << 30) + (1 << 20)))
            .to_text();
    CHECK_THAT(text, ContainsSubstring("memory ledger, device 0: 16.00 GiB total, 5.00 GiB used"));
    CHECK_THAT(text, ContainsSubstring("activations") && ContainsSubstring("3.00 GiB"));
    CHECK_THAT(text, ContainsSubstring("communicator (measured)"));
    CHECK_THAT(text,
               ContainsSubstring("reserved by pools, unused") && ContainsSubstring("1023.00 MiB"));
    CHECK_THAT(text, ContainsSubstring("not tracked"));
    CHECK(text.find("activations") < text.find("parameters")); // the largest first

    const std::string unread = ledger.snapshot(0, {}).to_text();
    CHECK_THAT(unread, ContainsSubstring("device not read"));
    const std::string host = ledger.snapshot(gpu::memory_ledger::host, {}).to_text();
    CHECK_THAT(host, ContainsSubstring("pinned host memory"));
    CHECK(host.find("not tracked") == std::string::npos);
}

TEST_CASE("a device that cannot be read gives the reason, and never throws", "[memory_ledger]")
{
    // Without a driver cudaGetDevice fails; with one, cudaSetDevice to a device that is not
    // there.
    const gpu::device_memory_reading r = gpu::read_device_memory(9999);
    CHECK_FALSE(r.known);
    CHECK_THAT(r.reason, ContainsSubstring("cudaGetDevice") || ContainsSubstring("cudaSetDevice"));
    CHECK(r.total_bytes == 0);
}

TEST_CASE("the process's ledger snapshot reads the device", "[memory_ledger][gpu]")
{
    const gpu::device dev = gpu::current_device();
    const gpu::memory_ledger_snapshot snap = gpu::memory_ledger::snapshot(dev);
    REQUIRE(snap.reading.known);
    const gpu::memory_info info = dev.memory();
    CHECK(snap.reading.total_bytes == info.total_bytes);
    REQUIRE(snap.untracked_bytes().has_value());
    CHECK(*snap.untracked_bytes() > 0); // at least the CUDA context
}

TEST_CASE("measured growth holds what the device's used memory grew by", "[memory_ledger][gpu]")
{
    const gpu::device dev = gpu::current_device();
    gpu::memory_ledger ledger;
    void* raw = nullptr;
    const std::size_t bytes = std::size_t{256} << 20;
    gpu::measured_holding held = ledger.hold_growth(
        dev, gpu::memory_tag::user(), [&] { GPU_CUDA_CHECK(cudaMalloc(&raw, bytes)); });
    // cudaMalloc maps whole pages: at least the request, at most a few MiB more.
    CHECK(held.bytes() >= bytes);
    CHECK(held.bytes() < bytes + (std::size_t{64} << 20));
    GPU_CUDA_CHECK(cudaFree(raw));
}

TEST_CASE("the out-of-memory advice names the top holders and the largest one's fix",
          "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    const gpu::memory_tag plan =
        gpu::memory_tag::define("test cuDNN plan workspace", gpu::memory_category::workspace,
                                "lower cuDNN's workspace budget (the test's option)");
    ledger.record_allocation(0, address(1), std::size_t{6} << 30, plan);
    ledger.record_allocation(0, address(2), std::size_t{3} << 30, acts);
    ledger.record_allocation(0, address(3), std::size_t{1} << 30, params);
    ledger.record_allocation(0, address(4), std::size_t{1} << 20, grads);
    const auto r = reading(std::size_t{12} << 30, std::size_t{1} << 30,
                           (std::size_t{10} << 30) + (std::size_t{1} << 20) + (256 << 20),
                           (std::size_t{10} << 30) + (std::size_t{1} << 20));
    const std::string text = gpu::out_of_memory_holders(ledger.snapshot(0, r), 1 << 30);
    CHECK_THAT(text, ContainsSubstring("who holds device 0: test cuDNN plan workspace 6.00 GiB "
                                       "(55%), activations 3.00 GiB (27%), parameters 1.00 GiB "
                                       "(9%)"));
    CHECK(text.find("gradients") == std::string::npos); // three holders by default
    CHECK_THAT(text, ContainsSubstring("the pools keep 256.00 MiB reserved but unused"));
    CHECK_THAT(text, ContainsSubstring("is not tracked"));
    CHECK_THAT(text, ContainsSubstring("fix for test cuDNN plan workspace, the largest: lower "
                                       "cuDNN's workspace budget (the test's option)"));
    CHECK_THAT(gpu::out_of_memory_holders(ledger.snapshot(0, r), 0, std::nullopt, 4),
               ContainsSubstring("gradients"));
}

TEST_CASE("the advice says to trim the pool when its cache is the largest holder",
          "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(0, address(1), std::size_t{1} << 30, acts);
    // 8 GiB used: 1 GiB handed out, 6.5 GiB cached in the pool, 0.5 GiB untracked.
    const auto r = reading(std::size_t{8} << 30, 0, (std::size_t{15} << 29), std::size_t{1} << 30);
    const std::string text = gpu::out_of_memory_holders(ledger.snapshot(0, r), 1 << 20);
    CHECK_THAT(text, ContainsSubstring("fix: trim the pool") &&
                         ContainsSubstring("gpu::trim_memory_pool"));
}

TEST_CASE("the advice points outside cudagap when untracked memory is the largest",
          "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(0, address(1), std::size_t{1} << 30, acts);
    const auto r = reading(std::size_t{8} << 30, 0, std::size_t{1} << 30, std::size_t{1} << 30);
    const std::string text = gpu::out_of_memory_holders(ledger.snapshot(0, r));
    CHECK_THAT(text, ContainsSubstring("7.00 GiB is not tracked") &&
                         ContainsSubstring("other processes (nvidia-smi lists them)"));
    // Without the device's numbers, the ledger's own view: the largest holder's fix.
    const std::string unread = gpu::out_of_memory_holders(ledger.snapshot(0, {}));
    CHECK_THAT(unread, ContainsSubstring("activations 1.00 GiB (100%)") &&
                           ContainsSubstring("lower the batch size"));
    CHECK_THAT(gpu::out_of_memory_holders(gpu::memory_ledger().snapshot(3, {})),
               ContainsSubstring("nothing the ledger tracks"));
}

TEST_CASE("the advice adds the request's own fix when another tag holds the most",
          "[memory_ledger]")
{
    gpu::memory_ledger ledger;
    ledger.record_allocation(0, address(1), std::size_t{2} << 30, params);
    ledger.record_allocation(0, address(2), std::size_t{1} << 30, acts);
    const gpu::memory_ledger_snapshot snap = ledger.snapshot(0, {});
    const std::string text = gpu::out_of_memory_holders(snap, 1 << 30, acts);
    CHECK_THAT(text, ContainsSubstring("fix for parameters, the largest: use a smaller model") &&
                         ContainsSubstring("; the request was for activations: lower the batch "
                                           "size"));
    // The same tag is not advised twice.
    const std::string same = gpu::out_of_memory_holders(snap, 1 << 30, params);
    CHECK(same.find("the request was for") == std::string::npos);
}

TEST_CASE("the process's advice for a device never throws", "[memory_ledger]")
{
    // Without a driver the device is not read: the ledger's own view, under the thread's tag.
    const gpu::memory_tag_scope scope(acts);
    const std::string text = gpu::out_of_memory_holders(0, 1 << 20);
    CHECK_THAT(text, ContainsSubstring("who holds device 0"));
    CHECK(gpu::out_of_memory_holders(100).empty()); // a device the ledger does not count
}
