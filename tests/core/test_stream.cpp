// gpu/stream.hpp: stream_ref, stream, flags, priorities, waiting on events.
#include <gpu/device.hpp>
#include <gpu/event.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

TEST_CASE("the legacy default stream is named, never defaulted", "[stream]")
{
    // No default constructor and no conversion from 0 or nullptr (as CCCL's stream_ref and
    // RMM's cuda_stream_view): the legacy default stream is only ever chosen by name.
    STATIC_REQUIRE_FALSE(std::is_default_constructible_v<gpu::stream_ref>);
    STATIC_REQUIRE_FALSE(std::is_constructible_v<gpu::stream_ref, std::nullptr_t>);
    STATIC_REQUIRE_FALSE(std::is_constructible_v<gpu::stream_ref, int>);
    STATIC_REQUIRE_FALSE(std::is_convertible_v<cudaStream_t, gpu::stream_ref>);
    constexpr gpu::stream_ref s = gpu::legacy_default_stream;
    STATIC_REQUIRE(s.get() == nullptr);
    STATIC_REQUIRE(s.is_default());
    STATIC_REQUIRE(gpu::legacy_default_stream == gpu::stream_ref{cudaStream_t{}});
    STATIC_REQUIRE(std::is_trivially_copyable_v<gpu::stream_ref>);
}

TEST_CASE("stream_ref compares by handle", "[stream]")
{
    auto* fake = reinterpret_cast<cudaStream_t>(0x10);
    CHECK(gpu::stream_ref{fake} == gpu::stream_ref{fake});
    CHECK_FALSE(gpu::stream_ref{fake} == gpu::legacy_default_stream);
    CHECK_FALSE(gpu::stream_ref{fake}.is_default());
}

TEST_CASE("stream is move-only", "[stream]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<gpu::stream>);
    STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<gpu::stream>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<gpu::stream>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<gpu::stream>);
}

TEST_CASE("stream flags are CUDA's flags", "[stream]")
{
    CHECK(static_cast<unsigned>(gpu::stream_flags::blocking) == cudaStreamDefault);
    CHECK(static_cast<unsigned>(gpu::stream_flags::non_blocking) == cudaStreamNonBlocking);
}

TEST_CASE("a stream without a handle refuses to stand for the default stream", "[stream]")
{
    const auto empty = gpu::stream::from_native_handle(nullptr);
    CHECK(empty.get() == nullptr);
    CHECK_FALSE(empty);
    CHECK_THROWS_WITH(empty.ref(), ContainsSubstring("moved from"));
    CHECK_THROWS_AS(static_cast<gpu::stream_ref>(empty), std::logic_error);
    // Every operation goes through ref(): none reaches CUDA with the null handle.
    CHECK_THROWS_AS(empty.synchronize(), std::logic_error);
    CHECK_THROWS_AS(empty.is_ready(), std::logic_error);
    CHECK_THROWS_AS(empty.priority(), std::logic_error);
    CHECK_THROWS_AS(empty.flags(), std::logic_error);
    CHECK_THROWS_AS(empty.wait(gpu::event_ref{}), std::logic_error);
}

TEST_CASE("waiting on an event_ref to no event is refused before CUDA", "[stream]")
{
    CHECK_THROWS_WITH(gpu::legacy_default_stream.wait(gpu::event_ref{}),
                      ContainsSubstring("refers to no event"));
}

TEST_CASE("creating a stream without CUDA throws the CUDA error", "[stream]")
{
    if (gpu::is_available()) {
        SUCCEED("CUDA is available here; creation is covered by the [gpu] tests");
        return;
    }
    CHECK_THROWS_AS(gpu::stream(), gpu::cuda_error);
    CHECK_THROWS_AS(gpu::stream_priorities(), gpu::cuda_error);
    CHECK_THROWS_AS(gpu::legacy_default_stream.synchronize(), gpu::cuda_error);
}

TEST_CASE("a stream that cannot be created names the request, then the CUDA call", "[stream]")
{
    if (gpu::is_available()) {
        SUCCEED("CUDA is available here; creation is covered by the [gpu] tests");
        return;
    }
    try {
        const gpu::stream s(gpu::stream_flags::non_blocking);
        FAIL("a stream was created without a usable GPU");
    } catch (const gpu::cuda_error& e) {
        // The calls it makes are implementation details: the user asked for a stream. The first
        // asks which device it is for (the current one, which the stream records).
        CHECK(e.api() == "gpu::stream(non_blocking, priority 0): cudaGetDevice");
        CHECK_THAT(std::string(e.what()),
                   StartsWith("gpu::stream(non_blocking, priority 0): cudaGetDevice: "));
        CHECK_FALSE(e.hint().empty());
        CHECK_THAT(std::string(e.where().file_name()),
                   ContainsSubstring("test_stream.cpp")); // the caller
    }
    try {
        const gpu::stream s;
        FAIL("a stream was created without a usable GPU");
    } catch (const gpu::cuda_error& e) {
        CHECK(e.api() == "gpu::stream(blocking, priority 0): cudaGetDevice");
    }
    // Asking for the priorities themselves names that call alone.
    try {
        static_cast<void>(gpu::stream_priorities());
        FAIL("priorities were read without a usable GPU");
    } catch (const gpu::cuda_error& e) {
        CHECK_THAT(e.api(), StartsWith("cudaDeviceGetStreamPriorityRange"));
    }
}

TEST_CASE("a stream runs work, synchronizes and reports readiness", "[stream][gpu]")
{
    gpu::stream s;
    CHECK(s.get() != nullptr);
    gpu::device_buffer<float> buffer(1 << 20, s);
    buffer.fill_zero_async(s);
    s.synchronize();
    CHECK(s.is_ready());
    CHECK(s.flags() == gpu::stream_flags::blocking);
    CHECK(s.priority() == 0);
}

TEST_CASE("a stream and an event that are not ready leave no error behind", "[stream][gpu]")
{
    // A host function holds the stream until the test lets it go, so both queries answer "not
    // ready" for certain; the runtime records that answer as the thread's last error, which a
    // later launch check (cudaGetLastError after a kernel) would take for a failure.
    gpu::stream s;
    std::atomic<bool> release{false};
    s.launch_host_func([&release] {
        while (!release.load()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
    });
    gpu::event after;
    after.record(s);
    const bool stream_ready = s.is_ready();
    const cudaError_t after_stream = cudaGetLastError();
    const bool event_ready = after.is_ready();
    const cudaError_t after_event = cudaGetLastError();
    release.store(true);
    s.synchronize();
    CHECK_FALSE(stream_ready);
    CHECK(after_stream == cudaSuccess);
    CHECK_FALSE(event_ready);
    CHECK(after_event == cudaSuccess);
    CHECK(s.is_ready());
    CHECK(after.is_ready());
}

TEST_CASE("non-blocking flag and priority read back", "[stream][gpu]")
{
    const gpu::stream_priority_range range = gpu::stream_priorities();
    CHECK(range.greatest <= range.least);
    const gpu::stream s(gpu::stream_flags::non_blocking, range.greatest);
    CHECK(s.flags() == gpu::stream_flags::non_blocking);
    CHECK(s.priority() == range.greatest);
}

TEST_CASE("an out-of-range priority is rejected, not clamped", "[stream][gpu]")
{
    const gpu::stream_priority_range range = gpu::stream_priorities();
    CHECK_THROWS_WITH(gpu::stream(gpu::stream_flags::blocking, range.greatest - 1),
                      ContainsSubstring("outside device "));
    CHECK_THROWS_AS(gpu::stream(gpu::stream_flags::blocking, range.least + 1),
                    std::invalid_argument);
}

TEST_CASE("moving a stream transfers the handle and empties the source", "[stream][gpu]")
{
    gpu::stream a;
    const cudaStream_t handle = a.get();
    gpu::stream b(std::move(a));
    CHECK(b.get() == handle);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_THROWS_AS(a.ref(), std::logic_error);         // NOLINT(bugprone-use-after-move)
    CHECK_THROWS_AS(a.synchronize(), std::logic_error); // NOLINT(bugprone-use-after-move)
    gpu::stream c;
    c = std::move(b);
    CHECK(c.get() == handle);
    CHECK(b.get() == nullptr); // NOLINT(bugprone-use-after-move)
}

TEST_CASE("release and from_native_handle hand a stream over", "[stream][gpu]")
{
    gpu::stream a;
    cudaStream_t raw = a.release();
    CHECK(a.get() == nullptr);
    gpu::stream adopted = gpu::stream::from_native_handle(raw);
    CHECK(adopted.get() == raw);
    CHECK(adopted.ref() == gpu::stream_ref{raw});
}

TEST_CASE("a stream waits on an event recorded on another stream", "[stream][gpu]")
{
    gpu::stream producer(gpu::stream_flags::non_blocking);
    gpu::stream consumer(gpu::stream_flags::non_blocking);
    std::vector<float> host(1 << 20, 1.0F);
    gpu::device_buffer<float> data(host.size(), producer);
    data.copy_from_host_async(host, producer);
    data.fill_zero_async(producer);
    gpu::event done;
    done.record(producer);
    consumer.wait(done);
    std::vector<float> back(host.size(), 7.0F);
    data.copy_to_host_async(back, consumer);
    consumer.synchronize();
    CHECK(std::all_of(back.begin(), back.end(), [](float v) { return v == 0.0F; }));
    producer.synchronize();
}

TEST_CASE("a stream can be made for a named device", "[stream]")
{
    STATIC_REQUIRE(std::is_constructible_v<gpu::stream, gpu::device>);
    STATIC_REQUIRE(std::is_constructible_v<gpu::stream, gpu::device, gpu::stream_flags, int>);
    // A moved-from stream has no device to report.
    const auto empty = gpu::stream::from_native_handle(nullptr);
    CHECK_THROWS_AS(empty.device(), std::logic_error);
    if (!gpu::is_available()) {
        // Without a driver, making it names the request and the CUDA call that failed.
        try {
            const gpu::stream s(gpu::detail::device_from_cuda(0));
            FAIL("a stream was created without a usable GPU");
        } catch (const gpu::cuda_error& e) {
            CHECK_THAT(e.api(), StartsWith("gpu::stream(blocking, priority 0): cudaSetDevice"));
        }
        CHECK_THROWS_AS(gpu::legacy_default_stream.device(), gpu::cuda_error);
    }
}

TEST_CASE("a library handle's device guard is none for an unknown device, else that device",
          "[stream]")
{
    CHECK_FALSE(gpu::detail::scoped_device_or_none(-1).has_value());
    if (!gpu::is_available()) {
        // Without a driver, switching to a device fails as the guard's own constructor does.
        CHECK_THROWS_AS(gpu::detail::scoped_device_or_none(0), gpu::cuda_error);
        return;
    }
    const int before = gpu::device::current().id();
    {
        const auto on = gpu::detail::scoped_device_or_none(before);
        REQUIRE(on.has_value());
        CHECK(gpu::device::current().id() == before);
    }
    CHECK(gpu::device::current().id() == before);
}

TEST_CASE("a stream records its device, and making it keeps the caller's device", "[stream][gpu]")
{
    const gpu::device current = gpu::current_device();
    const gpu::stream here;
    CHECK(here.device() == current);
    CHECK(here.ref().device() == current); // CUDA says the same (cudaStreamGetDevice)
    gpu::stream named(current, gpu::stream_flags::non_blocking);
    CHECK(named.device() == current);
    CHECK(named.flags() == gpu::stream_flags::non_blocking);
    CHECK(gpu::legacy_default_stream.device() == current);
    gpu::stream moved(std::move(named));
    CHECK(moved.device() == current);
    CHECK(gpu::current_device() == current);
}

TEST_CASE("a stream made on device 1 while device 0 is current stays on device 1",
          "[stream][multi-gpu]")
{
    const gpu::scoped_device on(gpu::device(0));
    const gpu::device one(1);
    gpu::stream s(one, gpu::stream_flags::non_blocking, gpu::stream_priorities(one).greatest);
    CHECK(gpu::current_device().id() == 0);
    CHECK(s.device() == one);
    CHECK(s.ref().device() == one);
    CHECK(s.priority() == gpu::stream_priorities(one).greatest);
    bool ran = false;
    s.launch_host_func([&] { ran = true; });
    gpu::device_buffer<float> buffer(1024, s); // on the stream's device, not the current one
    CHECK(buffer.device() == one);
    buffer.fill_zero();
    const std::vector<float> back = buffer.to_host();
    CHECK(std::all_of(back.begin(), back.end(), [](float v) { return v == 0.0F; }));
    CHECK(ran);
    CHECK(gpu::current_device().id() == 0);
}
