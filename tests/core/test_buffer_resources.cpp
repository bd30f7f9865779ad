// Buffers on memory resources: the allocation record holds its resource and device, a buffer
// takes a resource and a tag, the default resource records in the ledger, the limiting adaptor
// provokes an out-of-memory that names the largest holder, and the ledger's untracked line
// against cudaMemGetInfo.
#include <gpu/device.hpp>
#include <gpu/ledger_resource.hpp>
#include <gpu/memory.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_resources.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/resource_adaptors.hpp>

#include "fake_resource.hpp"

#include "catch.hpp"

#include <cstddef>
#include <cstdlib>
#include <optional>
#include <string>

using Catch::Matchers::ContainsSubstring;

namespace {

constexpr std::size_t mib = std::size_t{1} << 20;

// The row of @p name on @p device of the process's ledger, if it ever held memory.
std::optional<gpu::memory_ledger_row> row_named(int device, const std::string& name)
{
    for (const gpu::memory_ledger_row& row : gpu::memory_ledger::global().rows(device)) {
        if (row.name == name) {
            return row;
        }
    }
    return std::nullopt;
}

} // namespace

TEST_CASE("an allocation record holds its resource and its device, an empty one holds none",
          "[memory][resources]")
{
    const gpu::detail::allocation empty{};
    CHECK(empty.resource == gpu::device_resource_ref(gpu::detail::no_resource()));
    CHECK(empty.device == -1);
    CHECK_FALSE(gpu::detail::from_default_pool(empty));

    // 0 bytes make no CUDA call and no allocation, but keep the stream and the resource given.
    gpu::test::fake_resource fake;
    const gpu::stream_ref s = gpu::test::fake_stream();
    const gpu::device_buffer<float> none(0, s, fake, gpu::memory_tag::named("test none"));
    CHECK(none.resource() == gpu::device_resource_ref(fake));
    CHECK(none.stream() == s);
    CHECK_FALSE(none.is_pooled());
    CHECK(fake.allocations == 0);
    // Without a resource, an empty buffer has none (asking one for the device's would need CUDA).
    const gpu::device_buffer<float> plain(0, s);
    CHECK(plain.resource() == gpu::device_resource_ref(gpu::detail::no_resource()));
    CHECK_THROWS_AS(static_cast<void>(plain.resource().allocate(s, 4)), std::logic_error);
}

TEST_CASE("the limiting adaptor's out-of-memory names its device's largest holder and its fix",
          "[memory][resources]")
{
    // Device 10 of the process's ledger, which no other test uses, over host memory.
    constexpr int device = 10;
    gpu::test::fake_resource fake;
    gpu::limiting_adaptor<gpu::device_resource_ref> limited(gpu::device_resource_ref(fake),
                                                            64 * mib, device);
    gpu::ledger_resource<gpu::device_resource_ref> tracked(gpu::device_resource_ref(limited),
                                                           device);
    const gpu::stream_ref s = gpu::test::fake_stream();
    void* cache = nullptr;
    {
        const gpu::memory_tag_scope scope(gpu::memory_tag::named("test kv cache"));
        cache = tracked.allocate(s, 48 * mib);
    }
    void* mine = tracked.allocate(s, 8 * mib);
    try {
        static_cast<void>(tracked.allocate(s, 16 * mib));
        FAIL("16 MiB more passed a limit of 64 MiB with 56 MiB handed out");
    } catch (const gpu::out_of_memory& e) {
        const std::string what = e.what();
        CHECK(e.requested_bytes() == 16 * mib);
        CHECK_THAT(what, ContainsSubstring("who holds device 10: test kv cache 48.00 MiB"));
        CHECK_THAT(what, ContainsSubstring("user 8.00 MiB"));
        CHECK_THAT(what, ContainsSubstring("fix for test kv cache, the largest: free or shrink"));
    }
    CHECK(row_named(device, "test kv cache")->current_bytes == 48 * mib);
    tracked.deallocate(s, cache, 48 * mib);
    tracked.deallocate(s, mine, 8 * mib);
    CHECK(row_named(device, "test kv cache")->current_bytes == 0);
    CHECK(fake.live_bytes == 0);
}

TEST_CASE("a buffer's allocation is in the ledger under its tag until it is freed or released",
          "[memory][resources][gpu]")
{
    const gpu::device dev = gpu::current_device();
    gpu::stream s;
    const gpu::memory_tag tag = gpu::memory_tag::named("test tagged buffer");
    const std::size_t before =
        row_named(dev.id(), tag.name()).value_or(gpu::memory_ledger_row{}).current_bytes;
    {
        const gpu::device_buffer<float> buffer(mib / 4, s, tag);
        CHECK(buffer.resource() == gpu::default_device_resource(dev));
        CHECK(buffer.is_pooled() == gpu::memory_pool_info(dev).supported);
        CHECK(row_named(dev.id(), tag.name())->current_bytes == before + mib);
    }
    CHECK(row_named(dev.id(), tag.name())->current_bytes == before);
    // The thread's scope tags a buffer made without a tag; release takes it out of the ledger.
    gpu::device_buffer<std::byte> scoped;
    {
        const gpu::memory_tag_scope within(tag);
        scoped = gpu::device_buffer<std::byte>(mib, s);
    }
    CHECK(row_named(dev.id(), tag.name())->current_bytes == before + mib);
    const gpu::stream_ref on = scoped.stream();
    std::byte* raw = scoped.release();
    CHECK(row_named(dev.id(), tag.name())->current_bytes == before);
    GPU_CUDA_CHECK(cudaFreeAsync(raw, on.get()));
    s.synchronize();
}

TEST_CASE("pinned buffers are counted in the ledger's host row", "[memory][resources][gpu]")
{
    const gpu::memory_tag tag = gpu::memory_tag::named("test pinned staging");
    {
        const gpu::memory_tag_scope within(tag);
        const gpu::pinned_buffer<float> staging(1024);
        CHECK(row_named(gpu::memory_ledger::host, tag.name())->current_bytes == 4096);
    }
    CHECK(row_named(gpu::memory_ledger::host, tag.name())->current_bytes == 0);
}

TEST_CASE("a limiting adaptor as a buffer's resource provokes an out-of-memory naming the "
          "largest holder",
          "[memory][resources][gpu]")
{
    const gpu::device dev = gpu::current_device();
    const gpu::memory_info memory = dev.memory();
    const std::size_t largest = memory.total_bytes / 4;
    if (memory.free_bytes < largest + 64 * mib) {
        SUCCEED("the device has less than a quarter of its memory free");
        return;
    }
    gpu::stream s;
    const gpu::memory_tag tag = gpu::memory_tag::named("test largest holder");
    const gpu::device_buffer<std::byte> held(largest, s, tag);
    // The pool's cache would be the largest holder otherwise ("trim the pool").
    gpu::trim_memory_pool(dev);
    gpu::limiting_adaptor<gpu::pool_resource> limited(gpu::pool_resource(dev), mib, dev.id());
    try {
        const gpu::device_buffer<std::byte> refused(64 * mib, s, limited);
        FAIL("64 MiB passed a limit of 1 MiB");
    } catch (const gpu::out_of_memory& e) {
        CHECK(e.device() == dev.id());
        CHECK_THAT(std::string(e.what()),
                   ContainsSubstring("who holds device " + std::to_string(dev.id()) +
                                     ": test largest holder") &&
                       ContainsSubstring("fix for test largest holder, the largest"));
    }
    CHECK(limited.allocated_bytes() == 0);
}

TEST_CASE("the untracked line matches cudaMemGetInfo within the context's size",
          "[memory][resources][gpu]")
{
    const gpu::device dev = gpu::current_device();
    gpu::stream s;
    gpu::trim_memory_pool(dev);
    const gpu::memory_ledger_snapshot start = gpu::memory_ledger::snapshot(dev);
    REQUIRE(start.reading.known);
    const gpu::device_buffer<std::byte> block(256 * mib, s, gpu::memory_tag::named("test block"));
    s.synchronize();
    const gpu::memory_ledger_snapshot later = gpu::memory_ledger::snapshot(dev);
    std::size_t free_bytes = 0;
    std::size_t total_bytes = 0;
    GPU_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
    CHECK(later.reading.total_bytes == total_bytes);
    CHECK(later.tracked_bytes == start.tracked_bytes + 256 * mib);
    // What is not tracked is the context and the libraries' own: it holds still while tracked
    // memory grows (up to the pool's granularity), and it is no more than the device's used
    // memory before the block.
    const long long untracked = later.untracked_bytes().value();
    const long long context = start.untracked_bytes().value();
    CHECK(context >= 0);
    CHECK(context <= static_cast<long long>(start.reading.total_bytes - start.reading.free_bytes));
    CHECK(untracked - context <= static_cast<long long>(32 * mib));
    CHECK(context - untracked <= static_cast<long long>(32 * mib));
}
