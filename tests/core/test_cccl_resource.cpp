// gpu/cccl_resource.hpp: a resource written for CCCL 3.0's cuda::mr concepts used through
// cudagap's interface (a device_resource_ref, an adaptor stack, the ledger), and a cudagap
// resource used through CCCL's cuda::mr::async_resource_ref.
#include <gpu/cccl_resource.hpp>

#include <gpu/device_buffer.hpp>
#include <gpu/ledger_resource.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/resource_adaptors.hpp>
#include <gpu/stream.hpp>

#include "fake_resource.hpp"

#include "catch.hpp"

#include <cuda/memory_resource>
#include <cuda/stream_ref>

#include <cstddef>
#include <cstdlib>
#include <new>
#include <optional>
#include <type_traits>

using Catch::Matchers::ContainsSubstring;

namespace {

// Written against CCCL alone, as a user of CCCL writes one: host memory standing in for device
// memory, so that it runs here.
class cccl_arena {
public:
    void* allocate(std::size_t bytes, std::size_t alignment)
    {
        return allocate_async(bytes, alignment, cuda::stream_ref{cudaStream_t{}});
    }
    void deallocate(void* p, std::size_t bytes, std::size_t alignment) noexcept
    {
        deallocate_async(p, bytes, alignment, cuda::stream_ref{cudaStream_t{}});
    }
    void* allocate_async(std::size_t bytes, std::size_t alignment, cuda::stream_ref stream)
    {
        if (bytes > capacity) {
            throw std::bad_alloc(); // what CCCL's resources throw when full
        }
        last_stream = stream.get();
        ++allocations;
        return std::aligned_alloc(alignment, (bytes + alignment - 1) / alignment * alignment);
    }
    void deallocate_async(void* p, std::size_t, std::size_t, cuda::stream_ref stream) noexcept
    {
        last_stream = stream.get();
        ++frees;
        std::free(p);
    }
    bool operator==(const cccl_arena& other) const noexcept { return this == &other; }
    bool operator!=(const cccl_arena& other) const noexcept { return this != &other; }
    friend void get_property(const cccl_arena&, cuda::mr::device_accessible) noexcept {}

    std::size_t capacity = std::size_t{1} << 20;
    cudaStream_t last_stream = nullptr;
    int allocations = 0;
    int frees = 0;
};

// CCCL 3.0's synchronous cuda::mr::resource, host-accessible.
struct cccl_host_heap {
    void* allocate(std::size_t bytes, std::size_t) { return std::malloc(bytes); }
    void deallocate(void* p, std::size_t, std::size_t) noexcept { std::free(p); }
    bool operator==(const cccl_host_heap&) const noexcept { return true; }
    bool operator!=(const cccl_host_heap&) const noexcept { return false; }
    friend void get_property(const cccl_host_heap&, cuda::mr::host_accessible) noexcept {}
};

static_assert(cuda::mr::async_resource_with<cccl_arena, cuda::mr::device_accessible>);
static_assert(cuda::mr::resource_with<cccl_host_heap, cuda::mr::host_accessible>);

} // namespace

TEST_CASE("a CCCL resource is a cudagap resource with its CCCL properties", "[cccl_resource]")
{
    STATIC_REQUIRE(gpu::memory_resource_with<cccl_arena, gpu::device_accessible>);
    STATIC_REQUIRE_FALSE(gpu::has_property<cccl_arena, gpu::host_accessible>);
    STATIC_REQUIRE(gpu::memory_resource_with<cccl_host_heap, gpu::host_accessible>);
    STATIC_REQUIRE(std::is_constructible_v<gpu::device_resource_ref, cccl_arena&>);
    STATIC_REQUIRE_FALSE(std::is_constructible_v<gpu::device_resource_ref, cccl_host_heap&>);
}

TEST_CASE("a CCCL resource allocates through a device_resource_ref on cudagap's stream",
          "[cccl_resource]")
{
    cccl_arena arena;
    const gpu::device_resource_ref ref = arena; // what device_buffer stores
    void* p = ref.allocate(gpu::test::fake_stream(), 1000);
    REQUIRE(p != nullptr);
    CHECK(arena.last_stream == gpu::test::fake_stream().get());
    ref.deallocate(gpu::test::fake_stream(), p, 1000);
    CHECK(arena.frees == 1);
}

TEST_CASE("a CCCL resource's bad_alloc is cudagap's out_of_memory", "[cccl_resource]")
{
    cccl_arena arena;
    const gpu::device_resource_ref ref = arena;
    try {
        static_cast<void>(ref.allocate(gpu::test::fake_stream(), arena.capacity + 1));
        FAIL("no error");
    } catch (const gpu::out_of_memory& e) {
        CHECK(e.requested_bytes() == arena.capacity + 1);
        CHECK_THAT(e.api(), ContainsSubstring("std::bad_alloc"));
    }
}

TEST_CASE("a CCCL resource sits under cudagap's adaptors and the ledger", "[cccl_resource]")
{
    cccl_arena arena;
    gpu::memory_ledger ledger;
    gpu::statistics_adaptor<gpu::device_resource_ref> counted{gpu::device_resource_ref(arena)};
    gpu::ledger_resource<gpu::device_resource_ref> recorded(counted, 0, std::nullopt, ledger);
    void* p = recorded.allocate(gpu::test::fake_stream(), 4096);
    CHECK(counted.statistics().current_bytes == 4096);
    CHECK(ledger.snapshot(0, {}).tracked_bytes == 4096);
    recorded.deallocate(gpu::test::fake_stream(), p, 4096);
    CHECK(ledger.snapshot(0, {}).tracked_bytes == 0);
    CHECK(arena.frees == 1);
}

TEST_CASE("a cudagap resource is a CCCL async resource through as_cccl", "[cccl_resource]")
{
    gpu::test::fake_resource fake;
    gpu::cccl_resource<gpu::device_accessible> shown = gpu::as_cccl(fake);
    STATIC_REQUIRE(cuda::mr::async_resource_with<gpu::cccl_resource<gpu::device_accessible>,
                                                 cuda::mr::device_accessible>);
    STATIC_REQUIRE_FALSE(
        cuda::has_property<gpu::cccl_resource<gpu::device_accessible>, cuda::mr::host_accessible>);
    cuda::mr::async_resource_ref<cuda::mr::device_accessible> cccl_ref{shown};
    const cuda::stream_ref stream{gpu::test::fake_stream().get()};
    void* p = cccl_ref.allocate_async(256, 256, stream);
    CHECK(fake.last_stream == gpu::test::fake_stream().get());
    CHECK(fake.live_bytes == 256);
    cccl_ref.deallocate_async(p, 256, 256, stream);
    CHECK(fake.live_bytes == 0);
    CHECK(shown == gpu::as_cccl(fake));
}

TEST_CASE("a device_buffer takes a CCCL resource and frees through it", "[cccl_resource]")
{
    cccl_arena arena;
    // Without a GPU, an empty buffer: it keeps the resource and allocates nothing.
    const gpu::device_buffer<float> empty(0, gpu::test::fake_stream(), arena);
    CHECK(empty.resource() == gpu::device_resource_ref(arena));
    CHECK(arena.allocations == 0);
}

TEST_CASE("a device_buffer allocates from a CCCL resource on its stream", "[cccl_resource][gpu]")
{
    cccl_arena arena;
    gpu::stream s;
    {
        // The arena hands out host memory: nothing is queued on it, only allocated and freed.
        const gpu::device_buffer<float> buffer(256, s, arena, gpu::memory_tag::named("test cccl"));
        CHECK(buffer.size() == 256);
        CHECK(buffer.data() != nullptr);
        CHECK(arena.allocations == 1);
        CHECK(arena.last_stream == s.get());
        CHECK_FALSE(buffer.is_pooled());
    }
    CHECK(arena.frees == 1);
}
