// gpu/ledger_resource.hpp: recording an upstream's allocations under a tag, refusing frees of
// pointers it did not hand out.
#include <gpu/ledger_resource.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/memory_tag.hpp>

#include "fake_resource.hpp"

#include "catch.hpp"

#include <algorithm>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

using upstream_ref = gpu::device_resource_ref;

std::size_t bytes_of(const gpu::memory_ledger& ledger, int device, gpu::memory_tag tag)
{
    const auto rows = ledger.rows(device);
    const auto found =
        std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.tag == tag; });
    return found == rows.end() ? 0 : found->current_bytes;
}

} // namespace

TEST_CASE("a ledger resource records under its own tag, else the thread's", "[ledger_resource]")
{
    gpu::memory_ledger ledger;
    gpu::test::fake_resource fake;
    const gpu::memory_tag scratch = gpu::memory_tag::standard(gpu::memory_category::scratch);
    const gpu::memory_tag acts = gpu::memory_tag::standard(gpu::memory_category::activations);
    gpu::ledger_resource<upstream_ref> shared(upstream_ref(fake), 2, std::nullopt, ledger);
    gpu::ledger_resource<upstream_ref> dedicated(upstream_ref(fake), 2, scratch, ledger);
    const auto s = gpu::test::fake_stream();

    void* untagged = shared.allocate(s, 100);
    void* a = nullptr;
    void* b = nullptr;
    {
        const gpu::memory_tag_scope scope(acts);
        a = shared.allocate(s, 200);
        b = dedicated.allocate(s, 300); // its own tag wins
    }
    CHECK(bytes_of(ledger, 2, gpu::memory_tag::user()) == 100);
    CHECK(bytes_of(ledger, 2, acts) == 200);
    CHECK(bytes_of(ledger, 2, scratch) == 300);
    CHECK(shared.allocate(s, 0) == nullptr); // nothing recorded for nothing
    shared.deallocate(s, untagged, 100);
    shared.deallocate(s, a, 200);
    // Equal resources free each other's memory; the ledger matches the pointer, not the tag.
    gpu::ledger_resource<upstream_ref> also_dedicated(upstream_ref(fake), 2, scratch, ledger);
    CHECK(also_dedicated == dedicated);
    CHECK(dedicated != shared);
    also_dedicated.deallocate(s, b, 300);
    CHECK(ledger.snapshot(2, {}).tracked_bytes == 0);
    CHECK(fake.live_bytes == 0);
    CHECK(fake.deallocations == 3);
}

TEST_CASE("a ledger resource refuses to free a pointer it did not hand out", "[ledger_resource]")
{
    gpu::memory_ledger ledger;
    gpu::test::fake_resource fake;
    gpu::ledger_resource<upstream_ref> resource(upstream_ref(fake), 0, std::nullopt, ledger);
    void* foreign = std::malloc(64);
    resource.deallocate(gpu::test::fake_stream(), foreign, 64);
    CHECK(fake.deallocations == 0); // not passed on: it may be another owner's memory
    CHECK(ledger.refused_frees() == 1);
    std::free(foreign);

    void* p = resource.allocate(gpu::test::fake_stream(), 64);
    resource.deallocate(gpu::test::fake_stream(), p, 64);
    CHECK(fake.deallocations == 1);
    resource.deallocate(gpu::test::fake_stream(), p, 64); // a double free
    CHECK(fake.deallocations == 1);
    CHECK(ledger.refused_frees() == 2);
    resource.deallocate(gpu::test::fake_stream(), nullptr, 0); // freeing null: nothing, no refusal
    CHECK(ledger.refused_frees() == 2);
}

TEST_CASE("a failed upstream allocation records nothing", "[ledger_resource]")
{
    gpu::memory_ledger ledger;
    gpu::test::fake_resource fake;
    gpu::ledger_resource<upstream_ref> resource(upstream_ref(fake), 0, std::nullopt, ledger);
    fake.fail_out_of_memory = 1;
    CHECK_THROWS_AS(resource.allocate(gpu::test::fake_stream(), 64), gpu::out_of_memory);
    CHECK(ledger.rows(0).empty());
}

TEST_CASE("a ledger resource has its upstream's properties and checks its device",
          "[ledger_resource]")
{
    STATIC_REQUIRE(gpu::memory_resource_with<gpu::ledger_resource<gpu::test::fake_resource>,
                                             gpu::device_accessible>);
    STATIC_REQUIRE_FALSE(
        gpu::has_property<gpu::ledger_resource<gpu::test::fake_resource>, gpu::host_accessible>);
    gpu::test::fake_resource fake;
    CHECK_THROWS_AS(gpu::ledger_resource<upstream_ref>(upstream_ref(fake), 64),
                    std::invalid_argument);
    const gpu::ledger_resource<upstream_ref> host(upstream_ref(fake), gpu::memory_ledger::host);
    CHECK(host.device_id() == gpu::memory_ledger::host);
    CHECK(&host.ledger() == &gpu::memory_ledger::global());
}

TEST_CASE("a ledger resource over threads keeps the ledger exact", "[ledger_resource]")
{
    gpu::memory_ledger ledger;
    gpu::test::fake_resource fake;
    gpu::ledger_resource<upstream_ref> resource(upstream_ref(fake), 0, std::nullopt, ledger);
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&, t] {
            const gpu::memory_tag_scope scope(gpu::memory_tag::standard(
                t % 2 == 0 ? gpu::memory_category::activations : gpu::memory_category::scratch));
            std::vector<void*> held;
            for (int i = 0; i < 500; ++i) {
                held.push_back(resource.allocate(gpu::test::fake_stream(), 32));
                if (i % 2 == 1) {
                    resource.deallocate(gpu::test::fake_stream(), held.back(), 32);
                    held.pop_back();
                }
            }
            for (void* p : held) {
                resource.deallocate(gpu::test::fake_stream(), p, 32);
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    for (const gpu::memory_ledger_row& row : ledger.rows(0)) {
        CHECK(row.current_bytes == 0);
        CHECK(row.total_allocations == 1000); // two threads per tag, 500 each
    }
    CHECK(ledger.refused_frees() == 0);
    CHECK(fake.live_bytes == 0);
}
