// gpu/event.hpp: event_ref, event, flags, elapsed time.
#include <gpu/device.hpp>
#include <gpu/event.hpp>
#include <gpu/memory.hpp>

#include "catch.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("a default event_ref refers to no event", "[event]")
{
    constexpr gpu::event_ref e;
    STATIC_REQUIRE(e.get() == nullptr);
    STATIC_REQUIRE(std::is_trivially_copyable_v<gpu::event_ref>);
}

TEST_CASE("event flags combine into CUDA's flags", "[event]")
{
    CHECK(static_cast<unsigned>(gpu::event_flags::timing) == cudaEventDefault);
    CHECK(
        static_cast<unsigned>(gpu::event_flags::disable_timing | gpu::event_flags::blocking_sync) ==
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
}

TEST_CASE("an event_ref to no event is refused before any CUDA call", "[event]")
{
    const gpu::event_ref none;
    CHECK_THROWS_WITH(none.record(gpu::legacy_default_stream),
                      ContainsSubstring("refers to no event"));
    CHECK_THROWS_AS(none.synchronize(), std::logic_error);
    CHECK_THROWS_AS(none.is_ready(), std::logic_error);
    CHECK_THROWS_WITH(gpu::elapsed(none, none), ContainsSubstring("gpu::elapsed"));
}

TEST_CASE("an empty event refuses to hand out a null event_ref, like stream::ref()", "[event]")
{
    const auto e = gpu::event::from_native_handle(nullptr);
    CHECK(e.get() == nullptr);
    CHECK_FALSE(e);
    CHECK_THROWS_WITH(e.ref(), ContainsSubstring("gpu::event is empty (moved from or released"));
    CHECK_THROWS_AS(static_cast<gpu::event_ref>(e), std::logic_error);
    CHECK_THROWS_AS(e.record(gpu::legacy_default_stream), std::logic_error);
    CHECK_THROWS_AS(e.synchronize(), std::logic_error);
    CHECK_THROWS_AS(e.is_ready(), std::logic_error);
    CHECK_THROWS_AS(gpu::elapsed(e, e), std::logic_error);
    CHECK_THROWS_AS(gpu::legacy_default_stream.wait(e), std::logic_error);
}

TEST_CASE("recording names its stream", "[event]")
{
    // record() has no default stream: recording is stream-ordered work.
    STATIC_REQUIRE_FALSE(
        std::is_invocable_v<decltype(&gpu::event_ref::record), const gpu::event_ref&>);
    STATIC_REQUIRE(std::is_invocable_v<decltype(&gpu::event_ref::record), const gpu::event_ref&,
                                       gpu::stream_ref>);
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
    start.record(gpu::legacy_default_stream);
    stop.record(gpu::legacy_default_stream);
    CHECK_THROWS_AS(gpu::elapsed(start, stop), gpu::cuda_error);
}

TEST_CASE("moving an event transfers the handle and empties the source", "[event][gpu]")
{
    gpu::event a;
    const cudaEvent_t handle = a.get();
    gpu::event b(std::move(a));
    CHECK(b.get() == handle);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_THROWS_AS(a.ref(), std::logic_error); // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_AS(a.record(gpu::legacy_default_stream),
                    std::logic_error); // NOLINT(bugprone-use-after-move)
    cudaEvent_t raw = b.release();
    CHECK(b.get() == nullptr);
    const gpu::event adopted = gpu::event::from_native_handle(raw);
    CHECK(adopted.get() == raw);
}

TEST_CASE("an adopted event names its device, a null one has none", "[event]")
{
    const auto empty = gpu::event::from_native_handle(nullptr);
    CHECK_THROWS_AS(empty.device(), std::logic_error);
    STATIC_REQUIRE(std::is_constructible_v<gpu::event, gpu::device, gpu::event_flags>);
    auto* fake = reinterpret_cast<cudaEvent_t>(0x40);
    gpu::event adopted = gpu::event::from_native_handle(fake, gpu::detail::device_from_cuda(3));
    CHECK(adopted.device().id() == 3);
    static_cast<void>(adopted.release()); // not a real event: never destroy it
}

TEST_CASE("an event records its device, and making one keeps the caller's device", "[event][gpu]")
{
    const gpu::device current = gpu::current_device();
    const gpu::event here;
    CHECK(here.device() == current);
    const gpu::event named(current, gpu::event_flags::disable_timing);
    CHECK(named.device() == current);
    gpu::stream s;
    named.record(s); // same device: accepted
    named.synchronize();
    CHECK(gpu::current_device() == current);
}

TEST_CASE("an event of device 1 is refused on a stream of device 0, naming both",
          "[event][multi-gpu]")
{
    const gpu::scoped_device on(gpu::device(0));
    const gpu::event late(gpu::device(1), gpu::event_flags::disable_timing);
    CHECK(late.device().id() == 1);
    CHECK(gpu::current_device().id() == 0);
    gpu::stream zero;
    try {
        late.record(zero);
        FAIL("an event of device 1 was recorded on a stream of device 0");
    } catch (const std::invalid_argument& e) {
        CHECK_THAT(std::string(e.what()), ContainsSubstring("the event belongs to device 1") &&
                                              ContainsSubstring("the stream to device 0"));
    }
    gpu::stream one(gpu::device(1));
    late.record(one); // its own device's stream, while device 0 is current: accepted
    zero.wait(late);  // waiting across devices is correct in CUDA
    zero.synchronize();
    CHECK(gpu::current_device().id() == 0);
}
