// gpu/event.hpp: event_ref, event, flags, elapsed time.
#include <gpu/device.hpp>
#include <gpu/event.hpp>
#include <gpu/memory.hpp>

#include <catch2/catch.hpp>

#include <stdexcept>
#include <type_traits>

TEST_CASE("a default event_ref refers to no event", "[event]")
{
    constexpr gpu::event_ref e;
    STATIC_REQUIRE(e.get() == nullptr);
    STATIC_REQUIRE(std::is_trivially_copyable_v<gpu::event_ref>);
}

TEST_CASE("event flags combine into CUDA's flags", "[event]")
{
    CHECK(static_cast<unsigned>(gpu::event_flags::timing) == cudaEventDefault);
    CHECK(static_cast<unsigned>(gpu::event_flags::disable_timing | gpu::event_flags::blocking_sync) ==
          (cudaEventDisableTiming | cudaEventBlockingSync));
}

TEST_CASE("event is move-only", "[event]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<gpu::event>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<gpu::event>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<gpu::event>);
}

TEST_CASE("creating an event without CUDA throws the CUDA error", "[event]")
{
    if (gpu::is_available()) {
        SUCCEED("CUDA is available here; creation is covered by the [gpu] tests");
        return;
    }
    CHECK_THROWS_AS(gpu::event(), gpu::cuda_error);
    CHECK_THROWS_AS(gpu::elapsed(gpu::event_ref{}, gpu::event_ref{}), gpu::cuda_error);
}

TEST_CASE("an adopted null event is empty and refuses to stand for an event", "[event]")
{
    const auto e = gpu::event::from_native_handle(nullptr);
    CHECK(e.get() == nullptr);
    CHECK_THROWS_AS(e.ref(), std::logic_error);
    CHECK_THROWS_WITH(e.record(), Catch::Matchers::Contains("moved from or released"));
}

TEST_CASE("an event records, completes and reports readiness", "[event][gpu]")
{
    gpu::stream s;
    gpu::event e;
    e.record(s);
    e.synchronize();
    CHECK(e.is_ready());
}

TEST_CASE("elapsed time between events brackets the work", "[event][gpu]")
{
    gpu::stream s;
    gpu::device_buffer<char> big(std::size_t{256} << 20, s);
    gpu::event start;
    gpu::event stop;
    start.record(s);
    for (int i = 0; i < 10; ++i) {
        big.fill_zero_async(s);
    }
    stop.record(s);
    const gpu::event_duration took = gpu::elapsed(start, stop);
    CHECK(took.count() > 0.0F);
    CHECK(took.count() < 10'000.0F);
}

TEST_CASE("elapsed refuses events without timing", "[event][gpu]")
{
    gpu::event start(gpu::event_flags::disable_timing);
    gpu::event stop(gpu::event_flags::disable_timing);
    start.record();
    stop.record();
    CHECK_THROWS_AS(gpu::elapsed(start, stop), gpu::cuda_error);
}

TEST_CASE("moving an event transfers the handle and empties the source", "[event][gpu]")
{
    gpu::event a;
    const cudaEvent_t handle = a.get();
    gpu::event b(std::move(a));
    CHECK(b.get() == handle);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    cudaEvent_t raw = b.release();
    CHECK(b.get() == nullptr);
    const gpu::event adopted = gpu::event::from_native_handle(raw);
    CHECK(adopted.get() == raw);
}
