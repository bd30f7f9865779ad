// gpu/resource_adaptors.hpp: statistics, the limit, the out-of-memory retry, over a fake
// upstream on the host; the retry's reclaim step on a GPU.
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/memory_resources.hpp>
#include <gpu/resource_adaptors.hpp>
#include <gpu/stream.hpp>

#include "fake_resource.hpp"

#include "catch.hpp"

#include <atomic>
#include <cstddef>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

using upstream_ref = gpu::device_resource_ref;

// A reclaim step that counts its calls and says whether to retry.
struct counting_reclaim {
    std::atomic<int>* calls;
    bool retry;

    bool operator()(gpu::stream_ref) const
    {
        ++*calls;
        return retry;
    }
    static constexpr std::string_view description() noexcept { return "the test's reclaim"; }
};

} // namespace

TEST_CASE("the adaptors have their upstream's properties", "[resource_adaptors]")
{
    using fake = gpu::test::fake_resource;
    STATIC_REQUIRE(
        gpu::memory_resource_with<gpu::statistics_adaptor<fake>, gpu::device_accessible>);
    STATIC_REQUIRE(gpu::memory_resource_with<gpu::limiting_adaptor<fake>, gpu::device_accessible>);
    STATIC_REQUIRE(gpu::memory_resource_with<gpu::oom_retry_adaptor<fake, counting_reclaim>,
                                             gpu::device_accessible>);
    STATIC_REQUIRE_FALSE(gpu::has_property<gpu::statistics_adaptor<fake>, gpu::host_accessible>);
    STATIC_REQUIRE(gpu::memory_resource_with<gpu::statistics_adaptor<gpu::pinned_host_resource>,
                                             gpu::host_accessible>);
    // Counters are the adaptor's own: not copied, not moved.
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<gpu::statistics_adaptor<fake>>);
    STATIC_REQUIRE_FALSE(std::is_move_constructible_v<gpu::limiting_adaptor<fake>>);
}

TEST_CASE("the statistics adaptor counts bytes, peak and allocations", "[resource_adaptors]")
{
    gpu::test::fake_resource fake;
    gpu::statistics_adaptor<upstream_ref> stats{upstream_ref(fake)};
    const auto s = gpu::test::fake_stream();
    void* a = stats.allocate(s, 100);
    void* b = stats.allocate(s, 300);
    CHECK(stats.statistics().current_bytes == 400);
    CHECK(stats.statistics().live_allocations == 2);
    stats.deallocate(s, a, 100);
    void* c = stats.allocate(s, 50);
    const gpu::allocation_stats now = stats.statistics();
    CHECK(now.current_bytes == 350);
    CHECK(now.peak_bytes == 400);
    CHECK(now.live_allocations == 2);
    CHECK(now.total_allocations == 3);
    stats.reset_peak();
    CHECK(stats.statistics().peak_bytes == 350);
    CHECK(stats.allocate(s, 0) == nullptr); // not counted
    CHECK(stats.statistics().total_allocations == 3);
    stats.deallocate(s, b, 300);
    stats.deallocate(s, c, 50);
    CHECK(stats.statistics().current_bytes == 0);
    CHECK(fake.live_bytes == 0);
    CHECK(stats == stats);
    gpu::statistics_adaptor<upstream_ref> other{upstream_ref(fake)};
    CHECK(stats != other);
}

TEST_CASE("the limiting adaptor refuses past its limit with an out_of_memory",
          "[resource_adaptors]")
{
    gpu::test::fake_resource fake;
    gpu::limiting_adaptor<upstream_ref> limited(upstream_ref(fake), 1000);
    const auto s = gpu::test::fake_stream();
    void* a = limited.allocate(s, 600);
    void* b = limited.allocate(s, 400); // exactly at the limit
    CHECK(limited.allocated_bytes() == 1000);
    try {
        static_cast<void>(limited.allocate(s, 1));
        FAIL("the limit let an allocation through");
    } catch (const gpu::out_of_memory& e) {
        CHECK(e.requested_bytes() == 1);
        CHECK(e.free_bytes() == 0);
        CHECK(e.total_bytes() == 1000);
        CHECK_THAT(e.api(), ContainsSubstring("gpu::limiting_adaptor::allocate") &&
                                ContainsSubstring("limit of 1000 B"));
        CHECK_THAT(std::string(e.what()), ContainsSubstring("requested 1 B"));
    }
    CHECK(fake.allocations == 2); // the refused one never reached the upstream
    CHECK(limited.allocated_bytes() == 1000);
    limited.deallocate(s, a, 600);
    void* c = limited.allocate(s, 500);
    CHECK(limited.allocated_bytes() == 900);
    limited.deallocate(s, b, 400);
    limited.deallocate(s, c, 500);
    CHECK(limited.allocated_bytes() == 0);
}

TEST_CASE("the limiting adaptor gives the bytes back when the upstream fails",
          "[resource_adaptors]")
{
    gpu::test::fake_resource fake;
    gpu::limiting_adaptor<upstream_ref> limited(upstream_ref(fake), 1000);
    fake.fail_other = 1;
    CHECK_THROWS_AS(limited.allocate(gpu::test::fake_stream(), 700), gpu::cuda_error);
    CHECK(limited.allocated_bytes() == 0);
    void* p = limited.allocate(gpu::test::fake_stream(), 1000);
    limited.deallocate(gpu::test::fake_stream(), p, 1000);
}

TEST_CASE("the limit holds under threads", "[resource_adaptors]")
{
    gpu::test::fake_resource fake;
    constexpr std::size_t limit = 64 * 100;
    gpu::limiting_adaptor<upstream_ref> limited(upstream_ref(fake), limit);
    std::atomic<long long> most{0};
    std::atomic<int> refusals{0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
        threads.emplace_back([&] {
            // Each thread alone reaches the limit (100 blocks), so each is refused at least once;
            // then it frees half of what it holds and goes on.
            std::vector<void*> mine;
            for (int i = 0; i < 2000; ++i) {
                try {
                    mine.push_back(limited.allocate(gpu::test::fake_stream(), 64));
                    const long long now = fake.live_bytes.load();
                    long long seen = most.load();
                    while (now > seen && !most.compare_exchange_weak(seen, now)) {}
                } catch (const gpu::out_of_memory&) {
                    ++refusals;
                    for (std::size_t k = mine.size() / 2; k > 0; --k) {
                        limited.deallocate(gpu::test::fake_stream(), mine.back(), 64);
                        mine.pop_back();
                    }
                }
            }
            for (void* p : mine) {
                limited.deallocate(gpu::test::fake_stream(), p, 64);
            }
        });
    }
    for (std::thread& t : threads) {
        t.join();
    }
    CHECK(most.load() <= static_cast<long long>(limit));
    CHECK(refusals.load() >= 4);
    CHECK(limited.allocated_bytes() == 0);
    CHECK(fake.live_bytes == 0);
    CHECK(fake.allocations == fake.deallocations);
}

TEST_CASE("the retry adaptor reclaims once and retries an out-of-memory allocation",
          "[resource_adaptors]")
{
    gpu::test::fake_resource fake;
    std::atomic<int> calls{0};
    gpu::oom_retry_adaptor<upstream_ref, counting_reclaim> retry(upstream_ref(fake),
                                                                 counting_reclaim{&calls, true});
    const auto s = gpu::test::fake_stream();

    SECTION("the first failure is retried, and the retry succeeds")
    {
        fake.fail_out_of_memory = 1;
        void* p = retry.allocate(s, 128);
        CHECK(p != nullptr);
        CHECK(calls == 1);
        CHECK(fake.allocations == 2);
        retry.deallocate(s, p, 128);
        CHECK(fake.live_bytes == 0);
    }
    SECTION("a second failure says that it was retried, and after what")
    {
        fake.fail_out_of_memory = 2;
        try {
            static_cast<void>(retry.allocate(s, 128));
            FAIL("no error");
        } catch (const gpu::out_of_memory& e) {
            CHECK(e.requested_bytes() == 128);
            CHECK_THAT(e.api(), ContainsSubstring("fake_resource::allocate, retried after the "
                                                  "test's reclaim"));
        }
        CHECK(calls == 1);
        CHECK(fake.allocations == 2);
    }
    SECTION("other errors pass through untouched, with no reclaim")
    {
        fake.fail_other = 1;
        CHECK_THROWS_AS(retry.allocate(s, 128), gpu::cuda_error);
        CHECK(calls == 0);
        CHECK(fake.allocations == 1);
    }
    SECTION("no failure, no reclaim")
    {
        void* p = retry.allocate(s, 64);
        retry.deallocate(s, p, 64);
        CHECK(calls == 0);
    }
}

TEST_CASE("when the reclaim step says no (a capture), the first error is thrown",
          "[resource_adaptors]")
{
    gpu::test::fake_resource fake;
    std::atomic<int> calls{0};
    gpu::oom_retry_adaptor<upstream_ref, counting_reclaim> retry(upstream_ref(fake),
                                                                 counting_reclaim{&calls, false});
    fake.fail_out_of_memory = 1;
    try {
        static_cast<void>(retry.allocate(gpu::test::fake_stream(), 64));
        FAIL("no error");
    } catch (const gpu::out_of_memory& e) {
        CHECK(e.api() == "fake_resource::allocate"); // not "retried"
    }
    CHECK(calls == 1);
    CHECK(fake.allocations == 1);
}

TEST_CASE("adaptors stack by value, in place and by reference", "[resource_adaptors]")
{
    gpu::test::fake_resource fake;
    gpu::statistics_adaptor<gpu::limiting_adaptor<upstream_ref>> stacked(std::in_place,
                                                                         upstream_ref(fake), 100);
    void* p = stacked.allocate(gpu::test::fake_stream(), 80);
    CHECK(stacked.statistics().current_bytes == 80);
    CHECK(stacked.upstream().allocated_bytes() == 80);
    CHECK_THROWS_AS(stacked.allocate(gpu::test::fake_stream(), 80), gpu::out_of_memory);
    CHECK(stacked.statistics().total_allocations == 1); // the refusal is not counted
    stacked.deallocate(gpu::test::fake_stream(), p, 80);
    gpu::statistics_adaptor<gpu::device_resource_ref> on_top(stacked);
    void* q = on_top.allocate(gpu::test::fake_stream(), 10);
    CHECK(stacked.statistics().current_bytes == 10);
    on_top.deallocate(gpu::test::fake_stream(), q, 10);
    CHECK(fake.live_bytes == 0);
}

TEST_CASE("synchronize_and_trim waits, trims, and lets a retry through", "[resource_adaptors][gpu]")
{
    const gpu::device dev = gpu::current_device();
    gpu::stream stream(gpu::stream_flags::non_blocking);
    const gpu::synchronize_and_trim reclaim{gpu::pool_resource(dev)};
    CHECK(reclaim(stream));
    // During a capture it refuses (waiting would invalidate the capture).
    GPU_CUDA_CHECK(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
    const bool during_capture = reclaim(stream);
    cudaGraph_t graph = nullptr;
    GPU_CUDA_CHECK(cudaStreamEndCapture(stream.get(), &graph));
    GPU_CUDA_CHECK(cudaGraphDestroy(graph));
    CHECK_FALSE(during_capture);
    // The default retry over the device's pool: an allocation too big for any device still
    // fails, and says that it was retried.
    gpu::oom_retry_adaptor<gpu::pool_resource> retry{gpu::pool_resource(dev)};
    try {
        static_cast<void>(retry.allocate(stream, std::size_t{1} << 50));
        FAIL("a 1 PiB allocation succeeded");
    } catch (const gpu::out_of_memory& e) {
        CHECK_THAT(e.api(), ContainsSubstring("retried after cudaDeviceSynchronize"));
    }
}
