// gpu/memory_resources.hpp: cudagap's resources over the CUDA runtime and the devices' default
// resources. They need a device; their shape and properties are checked on the host in
// test_memory_resource.cpp.
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_resources.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include <algorithm>
#include <cstdint>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("the pinned resource checks its arguments before any CUDA call", "[memory_resources]")
{
    gpu::pinned_host_resource pinned; // needs no device to be made
    CHECK_THROWS_WITH(pinned.allocate(gpu::legacy_default_stream, 64, 4096),
                      ContainsSubstring("alignment 4096 is more than the 256 bytes"));
    CHECK(pinned.allocate(gpu::legacy_default_stream, 0) == nullptr);
    pinned.deallocate(gpu::legacy_default_stream, nullptr, 0); // frees nothing, calls nothing
}

TEST_CASE("the pinned resource without a driver throws the CUDA error, not out_of_memory",
          "[memory_resources]")
{
    if (!gpu::devices().empty()) {
        SUCCEED("a driver is loaded: the [gpu] cases allocate for real");
        return;
    }
    gpu::pinned_host_resource pinned;
    try {
        static_cast<void>(pinned.allocate(gpu::legacy_default_stream, 64));
        FAIL("pinned memory was allocated without a driver");
    } catch (const gpu::out_of_memory&) {
        FAIL("a missing driver was reported as out of memory");
    } catch (const gpu::cuda_error& e) {
        CHECK(e.status() != cudaSuccess);
    }
}

TEST_CASE("the default pinned resource is one, counted as host memory", "[memory_resources]")
{
    const gpu::host_resource_ref pinned = gpu::default_pinned_resource();
    CHECK(pinned == gpu::default_pinned_resource());
    CHECK(pinned.allocate(gpu::legacy_default_stream, 0) == nullptr);
    if (!gpu::devices().empty()) {
        return; // the [gpu] cases allocate for real
    }
    const std::size_t refused = gpu::memory_ledger::global().refused_frees();
    CHECK_THROWS_AS(pinned.allocate(gpu::legacy_default_stream, 64), gpu::cuda_error);
    CHECK(gpu::memory_ledger::global().refused_frees() == refused);
}

TEST_CASE("cudagap's resources compare by what they allocate from", "[memory_resources][gpu]")
{
    const gpu::device dev = gpu::current_device();
    CHECK(gpu::pool_resource(dev) == gpu::pool_resource(dev));
    CHECK_FALSE(gpu::pool_resource(dev).pool().has_value());
    const gpu::memory_pool pool = gpu::memory_pool::current(dev);
    CHECK(gpu::pool_resource(pool, dev) != gpu::pool_resource(dev));
    CHECK(gpu::pool_resource(pool, dev).pool() == pool);
    CHECK(gpu::device_malloc_resource(dev) == gpu::device_malloc_resource(dev));
    CHECK(gpu::pinned_host_resource() == gpu::pinned_host_resource());
}

TEST_CASE("pool, cudaMalloc and pinned resources allocate usable memory", "[memory_resources][gpu]")
{
    const gpu::device dev = gpu::current_device();
    gpu::stream stream(gpu::stream_flags::non_blocking);
    gpu::pool_resource pool(dev);
    gpu::device_malloc_resource plain(dev);
    gpu::pinned_host_resource pinned;
    for (const gpu::device_resource_ref ref :
         {gpu::device_resource_ref(pool), gpu::device_resource_ref(plain),
          gpu::device_resource_ref(pinned)}) {
        void* p = ref.allocate(stream, 1 << 20);
        REQUIRE(p != nullptr);
        CHECK(reinterpret_cast<std::uintptr_t>(p) % gpu::default_alignment == 0);
        GPU_CUDA_CHECK(cudaMemsetAsync(p, 0x5a, 1 << 20, stream.get()));
        unsigned char back = 0;
        GPU_CUDA_CHECK(cudaMemcpyAsync(&back, static_cast<unsigned char*>(p) + 12345, 1,
                                       cudaMemcpyDefault, stream.get()));
        stream.synchronize();
        CHECK(back == 0x5a);
        ref.deallocate(stream, p, 1 << 20);
        CHECK(ref.allocate(stream, 0) == nullptr);
    }
}

TEST_CASE("a pool resource out of memory throws out_of_memory with the request",
          "[memory_resources][gpu]")
{
    const gpu::device dev = gpu::current_device();
    gpu::stream stream(gpu::stream_flags::non_blocking);
    gpu::pool_resource pool(dev);
    const std::size_t too_much = std::size_t{1} << 50; // 1 PiB
    try {
        static_cast<void>(pool.allocate(stream, too_much));
        FAIL("a 1 PiB allocation succeeded");
    } catch (const gpu::out_of_memory& e) {
        CHECK(e.requested_bytes() == too_much);
        CHECK(e.device() == dev.id());
        CHECK_THAT(e.api(), ContainsSubstring("cudaMallocAsync"));
    }
}

TEST_CASE("a device's default resource records in the ledger under the thread's tag",
          "[memory_resources][gpu]")
{
    const gpu::device dev = gpu::current_device();
    gpu::stream stream(gpu::stream_flags::non_blocking);
    const gpu::device_resource_ref resource = gpu::default_device_resource(dev);
    CHECK(resource == gpu::default_device_resource(dev)); // one per device, kept
    const gpu::memory_tag tag = gpu::memory_tag::named("default resource test");
    void* p = nullptr;
    {
        const gpu::memory_tag_scope scope(tag);
        p = resource.allocate(stream, 3 << 20);
    }
    const auto rows = gpu::memory_ledger::global().rows(dev.id());
    const auto row =
        std::find_if(rows.begin(), rows.end(), [&](const auto& r) { return r.tag == tag; });
    REQUIRE(row != rows.end());
    CHECK(row->current_bytes == std::size_t{3} << 20);
    resource.deallocate(stream, p, 3 << 20);
    stream.synchronize();
    const auto after = gpu::memory_ledger::global().rows(dev.id());
    const auto gone =
        std::find_if(after.begin(), after.end(), [&](const auto& r) { return r.tag == tag; });
    REQUIRE(gone != after.end());
    CHECK(gone->current_bytes == 0);
    CHECK(gone->total_allocations == 1);
}
