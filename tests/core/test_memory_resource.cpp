// gpu/memory_resource.hpp: the concept, resource_ref, the shapes of foreign resources.
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/memory_resources.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/stream.hpp>

#include "fake_resource.hpp"

#include "catch.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

using Catch::Matchers::ContainsSubstring;

namespace {

// CCCL 3.0's asynchronous shape, with a stream type of its own made from a cudaStream_t (as
// cuda::stream_ref is), written without cudagap.
struct foreign_stream {
    explicit foreign_stream(cudaStream_t s) noexcept : handle(s) {}
    cudaStream_t handle;
};

struct async_suffix {
    void* allocate_async(std::size_t bytes, std::size_t, foreign_stream s)
    {
        seen = s.handle;
        return std::malloc(bytes);
    }
    void deallocate_async(void* p, std::size_t, std::size_t, foreign_stream s) noexcept
    {
        seen = s.handle;
        ++frees;
        std::free(p);
    }
    void* allocate(std::size_t, std::size_t) { throw std::logic_error("the sync path was taken"); }
    void deallocate(void*, std::size_t, std::size_t) noexcept {}
    bool operator==(const async_suffix&) const noexcept { return true; }
    cudaStream_t seen = nullptr;
    int frees = 0;
};

// CCCL 3.0's synchronous cuda::mr::resource: no stream at all.
struct synchronous_only {
    void* allocate(std::size_t bytes, std::size_t) { return std::malloc(bytes); }
    void deallocate(void* p, std::size_t, std::size_t) noexcept
    {
        ++frees;
        std::free(p);
    }
    bool operator==(const synchronous_only&) const noexcept { return true; }
    int frees = 0;
};

// CCCL 3.1's stream-first shape with a raw cudaStream_t parameter.
struct raw_stream_first {
    void* allocate(cudaStream_t s, std::size_t bytes, std::size_t)
    {
        seen = s;
        return std::malloc(bytes);
    }
    void deallocate(cudaStream_t, void* p, std::size_t, std::size_t) noexcept { std::free(p); }
    bool operator==(const raw_stream_first&) const noexcept { return true; }
    cudaStream_t seen = nullptr;
};

struct no_equality {
    void* allocate(gpu::stream_ref, std::size_t, std::size_t) { return nullptr; }
    void deallocate(gpu::stream_ref, void*, std::size_t, std::size_t) noexcept {}
};

struct host_only {
    void* allocate(gpu::stream_ref, std::size_t bytes, std::size_t) { return std::malloc(bytes); }
    void deallocate(gpu::stream_ref, void* p, std::size_t, std::size_t) noexcept { std::free(p); }
    friend bool operator==(const host_only&, const host_only&) = default;
    friend void get_property(const host_only&, gpu::host_accessible) noexcept {}
};

} // namespace

TEST_CASE("the concept admits cudagap's and CCCL's shapes and nothing else", "[memory_resource]")
{
    STATIC_REQUIRE(gpu::memory_resource<gpu::test::fake_resource>);
    STATIC_REQUIRE(gpu::memory_resource<async_suffix>);
    STATIC_REQUIRE(gpu::memory_resource<synchronous_only>);
    STATIC_REQUIRE(gpu::memory_resource<raw_stream_first>);
    STATIC_REQUIRE_FALSE(gpu::memory_resource<no_equality>);
    STATIC_REQUIRE_FALSE(gpu::memory_resource<int>);
    STATIC_REQUIRE(gpu::memory_resource<gpu::pool_resource>);
    STATIC_REQUIRE(gpu::memory_resource<gpu::device_malloc_resource>);
    STATIC_REQUIRE(gpu::memory_resource<gpu::pinned_host_resource>);
    STATIC_REQUIRE(gpu::memory_resource<gpu::device_resource_ref>);
    STATIC_REQUIRE(gpu::memory_resource_with<gpu::pinned_host_resource, gpu::host_accessible,
                                             gpu::device_accessible>);
    STATIC_REQUIRE_FALSE(gpu::has_property<gpu::pool_resource, gpu::host_accessible>);
    STATIC_REQUIRE_FALSE(gpu::has_property<synchronous_only, gpu::device_accessible>);
}

TEST_CASE("a resource_ref is two pointers and asks for its properties at compile time",
          "[memory_resource]")
{
    STATIC_REQUIRE(sizeof(gpu::device_resource_ref) == 2 * sizeof(void*));
    STATIC_REQUIRE(std::is_trivially_copyable_v<gpu::device_resource_ref>);
    STATIC_REQUIRE(std::is_constructible_v<gpu::device_resource_ref, gpu::test::fake_resource&>);
    STATIC_REQUIRE_FALSE(std::is_constructible_v<gpu::device_resource_ref, host_only&>);
    STATIC_REQUIRE(std::is_constructible_v<gpu::host_resource_ref, host_only&>);
    STATIC_REQUIRE_FALSE(
        std::is_constructible_v<gpu::device_resource_ref, const gpu::test::fake_resource&>);
    using both = gpu::resource_ref<gpu::device_accessible, gpu::host_accessible>;
    STATIC_REQUIRE(std::is_constructible_v<gpu::device_resource_ref, both>);
    STATIC_REQUIRE(std::is_constructible_v<gpu::resource_ref<>, gpu::device_resource_ref>);
    STATIC_REQUIRE_FALSE(std::is_constructible_v<both, gpu::device_resource_ref>);
    STATIC_REQUIRE(gpu::has_property<both, gpu::host_accessible>);
}

TEST_CASE("a resource_ref allocates and frees through its resource, on the stream given",
          "[memory_resource]")
{
    gpu::test::fake_resource fake;
    const gpu::device_resource_ref ref = fake;
    void* p = ref.allocate(gpu::test::fake_stream(), 100, 64);
    REQUIRE(p != nullptr);
    CHECK(reinterpret_cast<std::uintptr_t>(p) % 64 == 0);
    CHECK(fake.last_stream == gpu::test::fake_stream().get());
    CHECK(fake.last_alignment == 64);
    CHECK(fake.live_bytes == 100);
    ref.deallocate(gpu::test::fake_stream(), p, 100, 64);
    CHECK(fake.live_bytes == 0);
    CHECK(fake.deallocations == 1);
    void* q = ref.allocate(gpu::test::fake_stream(), 8);
    CHECK(fake.last_alignment == gpu::default_alignment);
    ref.deallocate(gpu::test::fake_stream(), q, 8);
}

TEST_CASE("resource_refs are equal when their resources are", "[memory_resource]")
{
    gpu::test::fake_resource a(1);
    gpu::test::fake_resource also_a(1);
    gpu::test::fake_resource b(2);
    synchronous_only other;
    CHECK(gpu::device_resource_ref(a) == gpu::device_resource_ref(also_a));
    CHECK(gpu::device_resource_ref(a) != gpu::device_resource_ref(b));
    // Another type is never equal, whatever its operator== would say.
    CHECK(gpu::resource_ref<>(a) != gpu::resource_ref<>(other));
    // A narrowed copy is the same reference.
    const gpu::resource_ref<> narrowed = gpu::device_resource_ref(a);
    CHECK(narrowed == gpu::resource_ref<>(also_a));
}

TEST_CASE("foreign shapes are called as they are written", "[memory_resource]")
{
    SECTION("CCCL 3.0's allocate_async gets the stream as its own stream type")
    {
        async_suffix r;
        const gpu::resource_ref<> ref = r;
        void* p = ref.allocate(gpu::test::fake_stream(), 32);
        CHECK(r.seen == gpu::test::fake_stream().get());
        ref.deallocate(gpu::test::fake_stream(), p, 32);
        CHECK(r.frees == 1);
    }
    SECTION("a stream-first resource taking a raw cudaStream_t")
    {
        raw_stream_first r;
        const gpu::resource_ref<> ref = r;
        void* p = ref.allocate(gpu::test::fake_stream(), 32);
        CHECK(r.seen == gpu::test::fake_stream().get());
        ref.deallocate(gpu::test::fake_stream(), p, 32);
    }
    SECTION("a synchronous resource frees after its stream (no stream: nothing to wait for)")
    {
        synchronous_only r;
        const gpu::resource_ref<> ref = r;
        void* p = ref.allocate(gpu::legacy_default_stream, 32);
        REQUIRE(p != nullptr);
        // Without a driver the wait fails and is reported on stderr; the free still happens.
        ref.deallocate(gpu::legacy_default_stream, p, 32);
        CHECK(r.frees == 1);
        ref.deallocate(gpu::legacy_default_stream, nullptr, 0); // null: no wait, one free call
        CHECK(r.frees == 2);
    }
}

TEST_CASE("an alignment a resource cannot give is refused with the numbers", "[memory_resource]")
{
    CHECK_NOTHROW(gpu::detail::check_alignment("r", 256, 256));
    CHECK_THROWS_WITH(gpu::detail::check_alignment("gpu::pool_resource::allocate", 512, 256),
                      ContainsSubstring("alignment 512 is more than the 256 bytes") &&
                          ContainsSubstring("gpu::pool_resource::allocate"));
    CHECK_THROWS_AS(gpu::detail::check_alignment("r", 48, 256), std::invalid_argument);
    CHECK_THROWS_WITH(gpu::detail::check_alignment("r", 0, 256),
                      ContainsSubstring("not a power of two"));
}

TEST_CASE("the stream argument converts to every stream parameter type", "[memory_resource]")
{
    const gpu::detail::stream_argument s{gpu::test::fake_stream().get()};
    const gpu::stream_ref as_ref = s;
    const cudaStream_t as_raw = s;
    const foreign_stream as_foreign = s;
    CHECK(as_ref == gpu::test::fake_stream());
    CHECK(as_raw == gpu::test::fake_stream().get());
    CHECK(as_foreign.handle == gpu::test::fake_stream().get());
    STATIC_REQUIRE_FALSE(std::is_convertible_v<gpu::detail::stream_argument, std::size_t>);
    STATIC_REQUIRE_FALSE(std::is_convertible_v<gpu::detail::stream_argument, void*>);
}

TEST_CASE("no_resource stands for an owner that holds nothing", "[memory_resource]")
{
    const gpu::device_resource_ref none = gpu::detail::no_resource();
    CHECK(none.allocate(gpu::legacy_default_stream, 0) == nullptr);
    CHECK_THROWS_WITH(none.allocate(gpu::legacy_default_stream, 16),
                      ContainsSubstring("16 bytes asked of no resource"));
    none.deallocate(gpu::legacy_default_stream, nullptr, 0);
    CHECK(none == gpu::device_resource_ref(gpu::detail::no_resource()));
    gpu::test::fake_resource fake;
    CHECK(none != gpu::device_resource_ref(fake));
    // What an owner's record compares with its empty state: trivially copyable, two pointers.
    STATIC_REQUIRE(std::is_trivially_copyable_v<decltype(gpu::detail::no_resource())>);
}
