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
/// The destructor opens the gate and waits for the stream, so a failing test cannot hang.
class stream_gate {
public:
    /// Closes the gate on @p stream (a non-blocking stream, for the test to mean anything).
    explicit stream_gate(gpu::stream_ref stream) : stream_(stream)
    {
        GPU_CUDA_CHECK(cudaLaunchHostFunc(stream.get(), &hold, &open_));
    }

    /// Lets the stream go on.
    void open() noexcept { open_.store(true, std::memory_order_release); }

    stream_gate(const stream_gate&) = delete;
    stream_gate& operator=(const stream_gate&) = delete;

    ~stream_gate()
    {
        open();
        // The host function reads open_: it must have returned before open_ goes away.
        static_cast<void>(cudaStreamSynchronize(stream_.get()));
    }

private:
    // Runs on CUDA's callback thread; must not call CUDA.
    static void CUDART_CB hold(void* flag)
    {
        const auto* open = static_cast<const std::atomic<bool>*>(flag);
        while (!open->load(std::memory_order_acquire)) {
            std::this_thread::sleep_for(std::chrono::microseconds(100));
        }
    }

    gpu::stream_ref stream_;
    std::atomic<bool> open_{false};
};

} // namespace gpu::test
