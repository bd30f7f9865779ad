// A scenario shared by the tests of the NaN/Inf checks (the core's and the wrappers' overloads):
// a check must wait for the work queued on the stream it is given (or the buffer's), not run on
// the legacy default stream. Header-only, test code only; [gpu] tests only.
#pragma once

#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include "stream_gate.hpp"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <future>
#include <limits>
#include <optional>

namespace gpu::test {

/// Holds a non-blocking stream, queues the copy of a NaN (at index 100 of 4096 floats) into a
/// buffer on it, and runs `check(buffer, stream)` on another thread: the check must not finish
/// while the stream is held, and must then find the NaN.
template <class Check>
void check_waits_for_its_stream(Check check)
{
    using namespace std::chrono_literals;
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::pinned_buffer<float> host(4096); // pinned: the copy below is queued, not staged at once
    std::fill(host.begin(), host.end(), 1.0F);
    host[100] = std::numeric_limits<float>::quiet_NaN();
    gpu::device_buffer<float> buffer(host.size(), s);
    std::future<gpu::non_finite_report> checked;
    {
        stream_gate gate(s);
        buffer.copy_from_host_async(host.span(), s); // held: the check must come after it
        checked = std::async(std::launch::async, [&] { return check(buffer, s.ref()); });
        CHECK(checked.wait_for(500ms) == std::future_status::timeout);
        gate.open();
        const gpu::non_finite_report report = checked.get();
        CHECK_FALSE(gate.timed_out()); // the wait above ran while the gate held s
        CHECK(report.nan_count == 1u);
        CHECK(report.first_index == std::optional<std::size_t>(100));
    }
}

} // namespace gpu::test
