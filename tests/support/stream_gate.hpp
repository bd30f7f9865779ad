// A gate that holds a stream back, for tests of which stream a function queues its work on.
// Header-only, test code only.
#pragma once

#include <gpu/error.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace gpu::test {

/// While a gate lives (until `open()`), nothing queued on its stream after it starts: a host
/// function on the stream waits for the gate to open. Work on streams that do not wait for this
/// one (the legacy default stream, when this one is non-blocking) is not held, so a test can
/// tell "queued on the gated stream" (not done yet) from "queued elsewhere" (done).
/// The destructor opens the gate and waits for the stream, so a failing test cannot hang; a gate
/// left closed for `limit` (a test that never opens it, or a tool that waits for the stream
/// before the test thread can) opens by itself, and `timed_out()` then says so.
class stream_gate {
public:
    /// Closes the gate on @p stream (a non-blocking stream, for the test to mean anything).
    explicit stream_gate(gpu::stream_ref stream) : stream_(stream)
    {
        GPU_CUDA_CHECK(cudaLaunchHostFunc(stream.get(), &hold, &state_));
    }

    /// Lets the stream go on.
    void open() noexcept { state_.open.store(true, std::memory_order_release); }

    /// Whether the gate opened by itself after `limit`, not by `open()`. Read after the work the
    /// test waited for is done.
    [[nodiscard]] bool timed_out() const noexcept
    {
        return state_.timed_out.load(std::memory_order_acquire);
    }

    /// How long a gate holds its stream at most.
    static constexpr std::chrono::seconds limit{10};

    stream_gate(const stream_gate&) = delete;
    stream_gate& operator=(const stream_gate&) = delete;

    ~stream_gate()
    {
        open();
        // The host function reads state_: it must have returned before state_ goes away.
        static_cast<void>(cudaStreamSynchronize(stream_.get()));
    }

private:
    struct state {
        std::atomic<bool> open{false};
        std::atomic<bool> timed_out{false};
    };

    // Runs on CUDA's callback thread; must not call CUDA, and must not wait without end (host
    // functions of every stream may share that thread).
    static void CUDART_CB hold(void* data)
    {
        auto* gate = static_cast<state*>(data);
        const auto deadline = std::chrono::steady_clock::now() + limit;
        while (!gate->open.load(std::memory_order_acquire)) {
            if (std::chrono::steady_clock::now() > deadline) {
                gate->timed_out.store(true, std::memory_order_release);
                return;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }

    gpu::stream_ref stream_;
    state state_;
};

} // namespace gpu::test
