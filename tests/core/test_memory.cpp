// gpu/memory.hpp: device_buffer, pinned_buffer, allocation counters, the memory pool.
#include <gpu/device.hpp>
#include <gpu/memory.hpp>

#include "pool_threshold.hpp"
#include "test_support.hpp"

#include "catch.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <numeric>
#include <span>
#include <source_location>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("an empty device_buffer owns nothing and needs no GPU", "[memory]")
{
    const gpu::device_buffer<float> empty;
    CHECK(empty.empty());
    CHECK(empty.size() == 0);
    CHECK(empty.size_bytes() == 0);
    CHECK(empty.data() == nullptr);
    const gpu::device_buffer<float> zero(0, gpu::legacy_default_stream); // no CUDA call for 0
    CHECK(zero.empty());
    CHECK(zero.data() == nullptr);
}

TEST_CASE("device_buffer is move-only and nothrow-movable", "[memory]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<gpu::device_buffer<float>>);
    STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<gpu::device_buffer<float>>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<gpu::device_buffer<float>>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<gpu::device_buffer<float>>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<gpu::pinned_buffer<double>>);
}

TEST_CASE("a copy of the wrong size is rejected before any CUDA call, naming both sizes",
          "[memory]")
{
    gpu::device_buffer<float> empty;
    const std::vector<float> three{1.0F, 2.0F, 3.0F};
    std::vector<float> out(3);
    CHECK_THROWS_WITH(empty.copy_from_host(three),
                      ContainsSubstring("the device buffer has 0 elements, the other side 3"));
    CHECK_THROWS_AS(empty.copy_to_host(out), std::invalid_argument);
    CHECK_THROWS_WITH(empty.copy_to_host_async(out, gpu::legacy_default_stream),
                      ContainsSubstring("copy_to_host"));
    CHECK_THROWS_WITH(empty.copy_from_host_async(three, gpu::legacy_default_stream),
                      ContainsSubstring("nothing was copied"));
}

TEST_CASE("copying between empty buffers and spans is a no-op", "[memory]")
{
    gpu::device_buffer<float> empty;
    std::vector<float> none;
    CHECK_NOTHROW(empty.copy_from_host_async(none, gpu::legacy_default_stream));
    CHECK_NOTHROW(empty.copy_to_host_async(none, gpu::legacy_default_stream));
    CHECK_NOTHROW(empty.fill_zero_async(gpu::legacy_default_stream));
    CHECK(empty.to_host().empty());
}

TEST_CASE("a byte count that overflows is rejected with the element count", "[memory]")
{
    const std::size_t too_many = std::numeric_limits<std::size_t>::max() / 2;
    CHECK_THROWS_WITH(gpu::device_buffer<double>(too_many, gpu::legacy_default_stream),
                      ContainsSubstring("overflow"));
    CHECK_THROWS_WITH(gpu::pinned_buffer<double>(too_many),
                      ContainsSubstring(std::to_string(too_many)));
}

TEST_CASE("allocating without CUDA throws the CUDA error, not out_of_memory", "[memory]")
{
    if (gpu::is_available()) {
        SUCCEED("CUDA is available here; allocation is covered by the [gpu] tests");
        return;
    }
    const auto before = gpu::allocation_statistics();
    try {
        gpu::device_buffer<float> buffer(1024, gpu::legacy_default_stream);
        FAIL("allocation succeeded without a usable GPU");
    } catch (const gpu::out_of_memory&) {
        FAIL("a missing driver was reported as out of memory");
    } catch (const gpu::cuda_error& e) {
        CHECK_FALSE(e.hint().empty());
        // The first call asks the stream its device (allocations go there, not to "current").
        CHECK_THAT(std::string(e.what()), ContainsSubstring("cudaStreamGetDevice"));
    }
    CHECK(gpu::allocation_statistics().current_bytes == before.current_bytes);
    CHECK(gpu::allocation_statistics().total_allocations == before.total_allocations);
    CHECK_THROWS_AS(gpu::pinned_buffer<float>(16), gpu::cuda_error);
}

TEST_CASE("read_device_value refuses a null source, and without CUDA throws the CUDA error",
          "[memory]")
{
    CHECK_THROWS_WITH(
        gpu::read_device_value(static_cast<const float*>(nullptr), gpu::legacy_default_stream),
        "gpu::read_device_value: null source");
    if (gpu::is_available()) {
        SUCCEED("CUDA is available here; the read is covered by the [gpu] tests");
        return;
    }
    const float not_device_memory = 1.0F;
    CHECK_THROWS_AS(gpu::read_device_value(&not_device_memory, gpu::legacy_default_stream),
                    gpu::cuda_error);
}

TEST_CASE("read_device_value reads one value written on the stream", "[memory][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    const std::vector<std::int64_t> host{7, -3, 1LL << 40};
    const auto buffer = gpu::device_buffer<std::int64_t>::from_host(host, s);
    CHECK(gpu::read_device_value(buffer.data(), s) == 7);
    CHECK(gpu::read_device_value(buffer.data() + 2, s) == (1LL << 40));
}

TEST_CASE("a failed page-lock names host memory, not the device's numbers", "[memory]")
{
    try {
        gpu::detail::throw_pinned_allocation_failure(cudaErrorMemoryAllocation,
                                                     "cudaMallocHost(&p, n)", std::size_t{3} << 30,
                                                     std::source_location::current());
        FAIL("nothing was thrown");
    } catch (const gpu::out_of_memory&) {
        FAIL("a host allocation was reported as device out_of_memory");
    } catch (const gpu::cuda_error& e) {
        CHECK(e.status() == cudaErrorMemoryAllocation);
        CHECK(e.api() == "cudaMallocHost(&p, n)");
        CHECK_THAT(e.hint(), ContainsSubstring("could not page-lock 3.00 GiB of host memory"));
        CHECK_THAT(e.hint(), !ContainsSubstring("free of"));
    }
    // Other statuses keep their own hint (here: no driver, or whatever this machine says).
    try {
        gpu::detail::throw_pinned_allocation_failure(cudaErrorInsufficientDriver,
                                                     "cudaMallocHost(&p, n)", 64,
                                                     std::source_location::current());
        FAIL("nothing was thrown");
    } catch (const gpu::cuda_error& e) {
        CHECK(e.status() == cudaErrorInsufficientDriver);
        CHECK_THAT(e.hint(), ContainsSubstring("driver"));
    }
}

TEST_CASE("an empty pinned_buffer is an empty range", "[memory]")
{
    gpu::pinned_buffer<int> empty(0);
    CHECK(empty.empty());
    CHECK(empty.begin() == empty.end());
    CHECK(empty.span().empty());
}

TEST_CASE("releasing or retargeting an empty buffer changes nothing", "[memory]")
{
    gpu::device_buffer<float> empty;
    empty.set_stream(gpu::legacy_default_stream);
    CHECK(empty.release() == nullptr);
    CHECK(empty.empty());
}

TEST_CASE("an empty buffer keeps the stream it was made for", "[memory]")
{
    // No CUDA call is made for 0 elements, so a stand-in handle is never used.
    const gpu::stream_ref s(reinterpret_cast<cudaStream_t>(std::uintptr_t{0x1000}));
    gpu::device_buffer<float> empty(0, s);
    CHECK(empty.empty());
    CHECK(empty.data() == nullptr);
    CHECK(empty.stream() == s); // what functions that default to the buffer's stream use
    gpu::device_buffer<float> moved_to(std::move(empty));
    CHECK(moved_to.stream() == s);
    CHECK(empty.stream().is_default()); // NOLINT(bugprone-use-after-move): the documented state
    gpu::device_buffer<float> retargeted;
    retargeted.set_stream(s);
    CHECK(retargeted.stream() == s);
    CHECK(gpu::device_buffer<int>().stream().is_default());
}

TEST_CASE("a device_buffer is made on a named stream and a const one hands out const pointers",
          "[memory]")
{
    // An allocation is stream-ordered work: no constructor falls back to the default stream.
    STATIC_REQUIRE_FALSE(std::is_constructible_v<gpu::device_buffer<float>, std::size_t>);
    STATIC_REQUIRE(
        std::is_constructible_v<gpu::device_buffer<float>, std::size_t, gpu::stream_ref>);
    STATIC_REQUIRE_FALSE(std::is_invocable_v<decltype(&gpu::device_buffer<float>::from_host),
                                             std::span<const float>>);
    STATIC_REQUIRE(std::is_same_v<decltype(std::declval<const gpu::device_buffer<float>&>().get()),
                                  const float*>);
    STATIC_REQUIRE(
        std::is_same_v<decltype(std::declval<gpu::device_buffer<float>&>().get()), float*>);
    STATIC_REQUIRE(std::is_same_v<decltype(std::declval<const gpu::device_buffer<float>&>().data()),
                                  const float*>);
    const gpu::device_buffer<float> empty;
    CHECK(empty.get() == empty.data());
}

TEST_CASE("a memory_pool names a pool: null is refused, keep_all keeps everything", "[memory]")
{
    CHECK_THROWS_AS(gpu::memory_pool(cudaMemPool_t{}), std::invalid_argument);
    STATIC_REQUIRE(gpu::memory_pool::keep_all == std::numeric_limits<std::size_t>::max());
    STATIC_REQUIRE_FALSE(std::is_default_constructible_v<gpu::memory_pool>);
    auto* fake = reinterpret_cast<cudaMemPool_t>(std::uintptr_t{0x1000});
    CHECK(gpu::memory_pool(fake).get() == fake); // a reference: no CUDA call to make one
    CHECK(gpu::memory_pool(fake) == gpu::memory_pool(fake));
}

TEST_CASE("pool_info reports the cached bytes", "[memory]")
{
    gpu::pool_info info;
    info.reserved_bytes = 1000;
    info.used_bytes = 400;
    CHECK(info.cached_bytes() == 600);
}

TEST_CASE("a buffer round-trips through the device", "[memory][gpu]")
{
    const std::vector<float> host = gpu::test::random_floats(100'003, 1);
    const auto buffer = gpu::device_buffer<float>::from_host(host, gpu::legacy_default_stream);
    CHECK(buffer.size() == host.size());
    CHECK(buffer.size_bytes() == host.size() * sizeof(float));
    CHECK(buffer.to_host() == host);
}

TEST_CASE("asynchronous copies through pinned memory on a stream", "[memory][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::pinned_buffer<std::int32_t> in(1 << 20);
    gpu::pinned_buffer<std::int32_t> out(1 << 20);
    std::iota(in.begin(), in.end(), 0);
    std::fill(out.begin(), out.end(), -1);
    gpu::device_buffer<std::int32_t> buffer(in.size(), s);
    CHECK(buffer.stream() == s.ref());
    buffer.copy_from_host_async(in.span(), s);
    buffer.copy_to_host_async(out.span(), s);
    s.synchronize();
    CHECK(std::equal(in.begin(), in.end(), out.begin()));
}

TEST_CASE("zero fill and device-to-device copy", "[memory][gpu]")
{
    const std::vector<float> host = gpu::test::random_floats(4097, 2);
    auto source = gpu::device_buffer<float>::from_host(host, gpu::legacy_default_stream);
    gpu::device_buffer<float> copy(host.size(), gpu::legacy_default_stream);
    copy.copy_from_async(source, copy.stream());
    CHECK(copy.to_host() == host);
    source.fill_zero();
    const std::vector<float> zeros = source.to_host();
    CHECK(std::all_of(zeros.begin(), zeros.end(), [](float v) { return v == 0.0F; }));
    gpu::device_buffer<float> wrong(3, gpu::legacy_default_stream);
    CHECK_THROWS_AS(wrong.copy_from_async(source, gpu::legacy_default_stream),
                    std::invalid_argument);
}

TEST_CASE("an impossible allocation throws out_of_memory with numbers, then allocation works",
          "[memory][gpu]")
{
    constexpr std::size_t pib = std::size_t{1} << 50;
    const auto before = gpu::allocation_statistics();
    try {
        gpu::device_buffer<char> huge(pib, gpu::legacy_default_stream);
        FAIL("a 1 PiB allocation succeeded");
    } catch (const gpu::out_of_memory& e) {
        CHECK(e.requested_bytes() == pib);
        CHECK(e.total_bytes() > 0);
        CHECK(e.free_bytes() <= e.total_bytes());
        CHECK(e.device() == gpu::current_device().id());
        CHECK_THAT(std::string(e.what()), ContainsSubstring("requested 1.00 PiB"));
        CHECK_FALSE(e.is_sticky());
    }
    CHECK(gpu::allocation_statistics().current_bytes == before.current_bytes);
    gpu::device_buffer<float> after(1 << 18, gpu::legacy_default_stream);
    after.fill_zero();
    CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("before reporting out of memory, the pool's cached memory goes back to the device",
          "[memory][gpu]")
{
    const gpu::device dev = gpu::current_device();
    if (!gpu::memory_pool_info(dev).supported) {
        SUCCEED(
            "this device has no memory pools: allocations use cudaMalloc, with no cache to trim");
        return;
    }
    constexpr std::size_t gib = std::size_t{1} << 30;
    // The pool keeps freed memory only when its threshold says so; the trim must not depend on it.
    const gpu::test::scoped_release_threshold keep(gpu::memory_pool::current(dev),
                                                   gpu::memory_pool::keep_all);
    gpu::stream s(gpu::stream_flags::non_blocking);
    {
        const gpu::device_buffer<std::byte> cached(gib, s); // freed on s: the pool keeps the GiB
    }
    s.synchronize();
    REQUIRE(gpu::memory_pool_info(dev).cached_bytes() >= gib);
    try {
        gpu::device_buffer<char> huge(std::size_t{1} << 50, s);
        FAIL("a 1 PiB allocation succeeded");
    } catch (const gpu::out_of_memory& e) {
        // The retry was made after the trim, and the numbers were read after it too.
        CHECK_THAT(e.api(),
                   ContainsSubstring("cudaMallocAsync") && ContainsSubstring("cudaMemPoolTrimTo"));
        CHECK(gpu::memory_pool_info(dev).cached_bytes() < gib);
        CHECK(e.free_bytes() <= e.total_bytes());
        CHECK_THAT(e.hint(), !ContainsSubstring("its pool caches 1.00 GiB"));
        CHECK_FALSE(e.is_sticky());
    }
    gpu::device_buffer<float> after(1 << 18, s);
    after.fill_zero();
    CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("pinning an impossible amount of host memory says so, then pinning works",
          "[memory][gpu]")
{
    constexpr std::size_t pib = std::size_t{1} << 50;
    try {
        gpu::pinned_buffer<char> huge(pib);
        FAIL("1 PiB of host memory was pinned");
    } catch (const gpu::out_of_memory& e) {
        FAIL(std::string("a host allocation was reported as device out_of_memory: ") + e.what());
    } catch (const gpu::cuda_error& e) {
        CHECK_FALSE(e.is_sticky());
        if (e.status() == cudaErrorMemoryAllocation) {
            CHECK_THAT(e.hint(), ContainsSubstring("could not page-lock 1.00 PiB of host memory"));
        }
    }
    gpu::pinned_buffer<int> small(1024);
    CHECK(small.size() == 1024);
    CHECK(cudaGetLastError() == cudaSuccess);
}

TEST_CASE("allocation counters follow live buffers and the peak", "[memory][gpu]")
{
    gpu::reset_peak_allocation();
    const auto base = gpu::allocation_statistics();
    {
        gpu::device_buffer<double> a(1000, gpu::legacy_default_stream);
        gpu::device_buffer<double> b(3000, gpu::legacy_default_stream);
        const auto during = gpu::allocation_statistics();
        CHECK(during.current_bytes == base.current_bytes + 4000 * sizeof(double));
        CHECK(during.live_allocations == base.live_allocations + 2);
        CHECK(during.total_allocations == base.total_allocations + 2);
    }
    const auto after = gpu::allocation_statistics();
    CHECK(after.current_bytes == base.current_bytes);
    CHECK(after.peak_bytes == base.current_bytes + 4000 * sizeof(double));
    gpu::reset_peak_allocation();
    CHECK(gpu::allocation_statistics().peak_bytes == base.current_bytes);
}

TEST_CASE("moving a buffer moves the memory and empties the source", "[memory][gpu]")
{
    gpu::device_buffer<float> a(256, gpu::legacy_default_stream);
    float* pointer = a.data();
    gpu::device_buffer<float> b(std::move(a));
    CHECK(b.data() == pointer);
    CHECK(b.size() == 256);
    CHECK(a.empty());           // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK(a.data() == nullptr); // NOLINT(bugprone-use-after-move)
    gpu::device_buffer<float> c(16, gpu::legacy_default_stream);
    c = std::move(b);
    CHECK(c.data() == pointer);
    CHECK(b.empty()); // NOLINT(bugprone-use-after-move)
}

TEST_CASE("release hands the memory over and stops counting it", "[memory][gpu]")
{
    const auto base = gpu::allocation_statistics();
    gpu::device_buffer<float> a(1024, gpu::legacy_default_stream);
    const bool pooled = a.is_pooled();
    const gpu::stream_ref s = a.stream();
    float* raw = a.release();
    CHECK(a.empty());
    CHECK(gpu::allocation_statistics().current_bytes == base.current_bytes);
    GPU_CUDA_CHECK(pooled ? cudaFreeAsync(raw, s.get()) : cudaFree(raw));
}

TEST_CASE("the pool caches freed memory and trimming returns it", "[memory][gpu]")
{
    const gpu::device dev = gpu::current_device();
    if (!dev.properties().memory_pools_supported) {
        SUCCEED("this device has no memory pools");
        return;
    }
    const gpu::test::scoped_release_threshold keep(gpu::memory_pool::device_default(dev),
                                                   gpu::memory_pool::keep_all);
    {
        gpu::device_buffer<char> block(std::size_t{64} << 20, gpu::legacy_default_stream);
        CHECK(block.is_pooled());
        const gpu::pool_info during = gpu::memory_pool_info(dev);
        CHECK(during.supported);
        CHECK(during.used_bytes >= block.size_bytes());
        CHECK(during.reserved_bytes >= during.used_bytes);
    }
    dev.synchronize();
    const gpu::pool_info cached = gpu::memory_pool_info(dev);
    CHECK(cached.cached_bytes() >= (std::size_t{64} << 20));
    gpu::trim_memory_pool(dev);
    const gpu::pool_info trimmed = gpu::memory_pool_info(dev);
    CHECK(trimmed.reserved_bytes < cached.reserved_bytes);
    CHECK(trimmed.cached_bytes() < cached.cached_bytes());
}

TEST_CASE("allocating leaves the pool's release threshold as the user set it", "[memory][gpu]")
{
    const gpu::device dev = gpu::current_device();
    if (!dev.properties().memory_pools_supported) {
        SUCCEED("this device has no memory pools");
        return;
    }
    const gpu::memory_pool pool = gpu::memory_pool::current(dev);
    constexpr std::size_t chosen = (std::size_t{3} << 20) + 12345; // an odd value nobody else sets
    const gpu::test::scoped_release_threshold set(pool, chosen);
    CHECK(pool.release_threshold() == chosen);
    {
        gpu::stream s;
        const gpu::device_buffer<float> buffer(1 << 20, s);
        CHECK(buffer.is_pooled());
        s.synchronize();
    }
    CHECK(pool.release_threshold() == chosen);
    CHECK(gpu::memory_pool_info(dev).release_threshold_bytes == chosen);
}

TEST_CASE("the release threshold decides whether freed memory survives a synchronisation",
          "[memory][gpu]")
{
    const gpu::device dev = gpu::current_device();
    if (!dev.properties().memory_pools_supported) {
        SUCCEED("this device has no memory pools");
        return;
    }
    const gpu::memory_pool pool = gpu::memory_pool::current(dev);
    constexpr std::size_t bytes = std::size_t{64} << 20;
    const auto free_then_sync = [&] {
        gpu::stream s;
        {
            const gpu::device_buffer<std::byte> block(bytes, s);
            CHECK(pool.used_bytes() >= bytes);
            CHECK(pool.used_peak_bytes() >= bytes);
        }
        s.synchronize();
        return pool.reserved_bytes() - pool.used_bytes();
    };
    {
        const gpu::test::scoped_release_threshold keep(pool, gpu::memory_pool::keep_all);
        CHECK(free_then_sync() >= bytes); // PyTorch's behaviour: cached for reuse
        CHECK(pool.reserved_peak_bytes() >= pool.reserved_bytes());
    }
    {
        const gpu::test::scoped_release_threshold release(pool, 0);
        pool.trim_to(0);
        CHECK(free_then_sync() < bytes); // CUDA's default: returned at the synchronisation
    }
}
