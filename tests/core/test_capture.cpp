// gpu/capture.hpp: the capture scope and gpu::capture, the capture status query, the refusal of
// gpu::check_finite during a capture (tests/core/test_call_checks.cpp covers the profile's
// checks), and the hints of the statuses capture produces. Without
// a GPU: argument checks, failures to begin, and every hint; on a GPU: capture of kernels,
// copies and cudagap allocations, replay, an exception inside a capture, and the calls that
// break one.
#include <gpu/capture.hpp>
#include <gpu/device.hpp>
#include <gpu/graph.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include "graph_kernels.hpp"
#include "per_thread_stream.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::test::per_thread_stream;

namespace {

constexpr std::size_t n = 4096;

std::vector<float> to_host(const gpu::device_buffer<float>& buffer)
{
    return buffer.to_host();
}

bool all_equal(const std::vector<float>& values, float expected)
{
    for (const float v : values) {
        if (v != expected) {
            return false;
        }
    }
    return true;
}

} // namespace

TEST_CASE("capture modes and statuses are CUDA's", "[capture]")
{
    CHECK(static_cast<int>(gpu::capture_mode::global) == cudaStreamCaptureModeGlobal);
    CHECK(static_cast<int>(gpu::capture_mode::per_thread) == cudaStreamCaptureModeThreadLocal);
    CHECK(static_cast<int>(gpu::capture_mode::relaxed) == cudaStreamCaptureModeRelaxed);
    CHECK(static_cast<int>(gpu::capture_status::none) == cudaStreamCaptureStatusNone);
    CHECK(static_cast<int>(gpu::capture_status::active) == cudaStreamCaptureStatusActive);
    CHECK(static_cast<int>(gpu::capture_status::invalidated) == cudaStreamCaptureStatusInvalidated);
    CHECK(gpu::to_string(gpu::capture_mode::global) == "global");
    CHECK(gpu::to_string(gpu::capture_mode::per_thread) == "per_thread");
    CHECK(gpu::to_string(gpu::capture_mode::relaxed) == "relaxed");
    CHECK(gpu::to_string(gpu::capture_status::invalidated) == "invalidated");
    CHECK(gpu::to_string(static_cast<gpu::capture_mode>(42)) == "unknown");
}

TEST_CASE("a capture scope is a scope: neither copied nor moved", "[capture]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<gpu::capture_scope>);
    STATIC_REQUIRE_FALSE(std::is_move_constructible_v<gpu::capture_scope>);
    STATIC_REQUIRE_FALSE(std::is_move_assignable_v<gpu::capture_scope>);
    STATIC_REQUIRE(std::is_nothrow_destructible_v<gpu::capture_scope>);
    // The stream is always named: no default, no capture of "whatever stream is current".
    STATIC_REQUIRE_FALSE(std::is_default_constructible_v<gpu::capture_scope>);
}

TEST_CASE("the legacy default stream is refused as a bad argument before any CUDA call",
          "[capture]")
{
    CHECK_THROWS_AS(gpu::capture_scope(gpu::legacy_default_stream), std::invalid_argument);
    CHECK_THROWS_WITH(gpu::capture_scope(gpu::legacy_default_stream),
                      ContainsSubstring("legacy default stream") &&
                          ContainsSubstring("gpu::capture_scope"));
    CHECK_THROWS_AS(gpu::capture_scope(gpu::stream_ref(cudaStreamLegacy)), std::invalid_argument);
    bool ran = false;
    CHECK_THROWS_AS(gpu::capture(gpu::legacy_default_stream, [&](gpu::stream_ref) { ran = true; }),
                    std::invalid_argument);
    CHECK_FALSE(ran);
}

TEST_CASE("a capture mode that is none of the enumerators is refused, naming the value",
          "[capture]")
{
    const auto bad = static_cast<gpu::capture_mode>(7);
    CHECK_THROWS_AS(gpu::capture_scope(per_thread_stream, bad), std::invalid_argument);
    CHECK_THROWS_WITH(gpu::capture_scope(per_thread_stream, bad),
                      ContainsSubstring("7 is not a gpu::capture_mode"));
}

TEST_CASE("a capture that cannot begin throws the CUDA error with its hint and runs no work",
          "[capture]")
{
    if (gpu::is_available()) {
        SUCCEED("CUDA is available here; capture is covered by the [gpu] tests");
        return;
    }
    try {
        gpu::capture_scope scope(per_thread_stream, gpu::capture_mode::relaxed);
        FAIL("a capture began without a driver");
    } catch (const gpu::cuda_error& e) {
        CHECK_THAT(e.api(),
                   ContainsSubstring("gpu::capture_scope(relaxed): cudaStreamBeginCapture"));
        CHECK_FALSE(e.hint().empty());
        CHECK(e.hint() == gpu::hint_for(e.status(), e.device()));
    }
    bool ran = false;
    CHECK_THROWS_AS(gpu::capture(per_thread_stream, [&](gpu::stream_ref) { ran = true; }),
                    gpu::cuda_error);
    CHECK_FALSE(ran);
    CHECK_THROWS_AS(gpu::is_capturing(per_thread_stream), gpu::cuda_error);
}

TEST_CASE("every status that capture produces has a hint naming the likely call",
          "[capture][error]")
{
    const std::string unsupported = gpu::hint_for(cudaErrorStreamCaptureUnsupported);
    CHECK_THAT(unsupported,
               ContainsSubstring("cudaStreamSynchronize") &&
                   ContainsSubstring("cudaMemcpy or cudaMemset without Async") &&
                   ContainsSubstring("cudaMalloc") && ContainsSubstring("cudaMallocAsync") &&
                   ContainsSubstring("gpu::device_buffer made on the capturing stream") &&
                   ContainsSubstring("legacy default stream") &&
                   ContainsSubstring("capture_mode::per_thread"));
    const std::string invalidated = gpu::hint_for(cudaErrorStreamCaptureInvalidated);
    CHECK_THAT(invalidated, ContainsSubstring("invalidated by an earlier call") &&
                                ContainsSubstring("cudaStreamSynchronize") &&
                                ContainsSubstring("cudaMallocAsync") &&
                                ContainsSubstring("event recorded outside the capture"));
    CHECK_THAT(gpu::hint_for(cudaErrorStreamCaptureImplicit),
               ContainsSubstring("legacy default stream") && ContainsSubstring("non_blocking"));
    CHECK_THAT(gpu::hint_for(cudaErrorStreamCaptureUnjoined),
               ContainsSubstring("forked") && ContainsSubstring("gpu::stream::wait"));
    CHECK_THAT(gpu::hint_for(cudaErrorStreamCaptureIsolation),
               ContainsSubstring("event recorded outside the capture"));
    CHECK_THAT(gpu::hint_for(cudaErrorStreamCaptureUnmatched), ContainsSubstring("did not begin"));
    CHECK_THAT(gpu::hint_for(cudaErrorStreamCaptureMerge), ContainsSubstring("merge"));
    CHECK_THAT(gpu::hint_for(cudaErrorStreamCaptureWrongThread),
               ContainsSubstring("same thread") || ContainsSubstring("thread that began it"));
    CHECK_THAT(gpu::hint_for(cudaErrorStreamCaptureWrongThread),
               ContainsSubstring("capture_mode::relaxed"));
    CHECK_THAT(gpu::hint_for(cudaErrorCapturedEvent),
               ContainsSubstring("cudaEventSynchronize") && ContainsSubstring("recorded again"));
    CHECK_THAT(gpu::hint_for(cudaErrorNotPermitted), ContainsSubstring("gpu::is_capturing"));
}

TEST_CASE("a capture status from a checked call carries its hint in what()", "[capture][error]")
{
    try {
        GPU_CUDA_CHECK(cudaErrorStreamCaptureUnsupported);
        FAIL("no error thrown");
    } catch (const gpu::cuda_error& e) {
        CHECK(e.status_name() == "cudaErrorStreamCaptureUnsupported");
        CHECK_THAT(std::string(e.what()),
                   ContainsSubstring("\nhint: this call is not allowed while a "
                                     "stream is being captured"));
    }
}

TEST_CASE("kernels, copies and cudagap allocations are captured, then replayed", "[capture][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    auto x = gpu::device_buffer<float>::from_host(std::vector<float>(n, 0.0F), s);
    auto twos = gpu::device_buffer<float>::from_host(std::vector<float>(n, 2.0F), s);
    bool pooled = false;
    gpu::graph g = gpu::capture(s, [&](gpu::stream_ref captured) {
        CHECK(gpu::capture_status_of(captured) == gpu::capture_status::active);
        CHECK(gpu::is_capturing(captured));
        // Scratch made and freed inside the capture: allocation and free nodes of the graph.
        gpu::device_buffer<float> scratch(n, captured);
        pooled = scratch.is_pooled();
        scratch.copy_from_async(twos, captured);
        GPU_CUDA_CHECK(gpu::test::add_into(x.data(), scratch.data(), n, captured.get()));
    });
    CHECK_FALSE(gpu::is_capturing(s));
    REQUIRE(pooled); // a device without memory pools would have used cudaMalloc, not capturable
    CHECK(g.node_count() == 4);         // allocation, copy, kernel, free
    CHECK(all_equal(to_host(x), 0.0F)); // captured, not run

    gpu::graph_exec exec(g);
    for (int i = 0; i < 10; ++i) {
        exec.launch(s);
    }
    CHECK(all_equal(to_host(x), 20.0F));
}

TEST_CASE("end() returns the graph once, and the scope then has nothing to end", "[capture][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    auto x = gpu::device_buffer<float>::from_host(std::vector<float>(n, 1.0F), s);
    gpu::capture_scope scope(s, gpu::capture_mode::relaxed);
    CHECK(scope.active());
    CHECK(scope.mode() == gpu::capture_mode::relaxed);
    CHECK(scope.stream() == s.ref());
    GPU_CUDA_CHECK(gpu::test::scale(x.data(), 3.0F, n, s.get()));
    const gpu::graph g = scope.end();
    CHECK_FALSE(scope.active());
    CHECK(g.node_count() == 1);
    CHECK_THROWS_WITH(scope.end(), ContainsSubstring("already ended"));
    gpu::graph_exec(g).launch(s);
    CHECK(all_equal(to_host(x), 3.0F));
}

TEST_CASE("an exception inside a capture ends it and leaves the stream usable", "[capture][gpu]")
{
    gpu::stream s; // blocking: the legacy stream must be usable again too
    auto x = gpu::device_buffer<float>::from_host(std::vector<float>(n, 1.0F), s);
    CHECK_THROWS_WITH(gpu::capture(s,
                                   [&](gpu::stream_ref captured) {
                                       gpu::device_buffer<float> scratch(n, captured);
                                       GPU_CUDA_CHECK(
                                           gpu::test::scale(x.data(), 5.0F, n, captured.get()));
                                       throw std::runtime_error("thrown during the capture");
                                   }),
                      "thrown during the capture");
    CHECK(gpu::capture_status_of(s) == gpu::capture_status::none);
    CHECK_FALSE(gpu::is_capturing(gpu::legacy_default_stream));
    CHECK(cudaGetLastError() == cudaSuccess);
    // The captured scale never ran; ordinary work on the stream runs again.
    GPU_CUDA_CHECK(gpu::test::scale(x.data(), 2.0F, n, s.get()));
    s.synchronize();
    CHECK(all_equal(to_host(x), 2.0F));

    {
        gpu::capture_scope scope(s);
        GPU_CUDA_CHECK(gpu::test::scale(x.data(), 7.0F, n, s.get()));
        // Left without end(): an early return.
    }
    CHECK_FALSE(gpu::is_capturing(s));
    CHECK(all_equal(to_host(x), 2.0F));
}

TEST_CASE("a synchronising call during a capture throws with the hint, and end() says invalidated",
          "[capture][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::capture_scope scope(s);
    try {
        s.synchronize();
        FAIL("cudaStreamSynchronize was allowed during a capture");
    } catch (const gpu::cuda_error& e) {
        CHECK(e.status() == cudaErrorStreamCaptureUnsupported);
        CHECK_THAT(e.api(), ContainsSubstring("cudaStreamSynchronize"));
        CHECK_THAT(e.hint(), ContainsSubstring("not allowed while a stream is being captured"));
    }
    CHECK(gpu::capture_status_of(s) == gpu::capture_status::invalidated);
    CHECK(gpu::is_capturing(s));
    try {
        static_cast<void>(scope.end());
        FAIL("an invalidated capture ended with a graph");
    } catch (const gpu::cuda_error& e) {
        CHECK(e.status() == cudaErrorStreamCaptureInvalidated);
        CHECK_THAT(e.api(), ContainsSubstring("the capture was invalidated"));
        CHECK_THAT(e.hint(),
                   ContainsSubstring("cudaStreamSynchronize") && ContainsSubstring("cudaMalloc"));
    }
    CHECK_FALSE(scope.active());
    CHECK_FALSE(gpu::is_capturing(s));
    s.synchronize(); // usable again
}

TEST_CASE("an allocation that is not stream-ordered breaks a capture with a hint to use "
          "cudaMallocAsync",
          "[capture][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    void* p = nullptr;
    cudaError_t status = cudaSuccess;
    {
        gpu::capture_scope scope(s);
        status = cudaMalloc(&p, 256);
    }
    CHECK(status == cudaErrorStreamCaptureUnsupported);
    CHECK_THAT(gpu::hint_for(status),
               ContainsSubstring("not stream-ordered") && ContainsSubstring("use cudaMallocAsync"));
    CHECK_FALSE(gpu::is_capturing(s));
    static_cast<void>(cudaGetLastError()); // the failed cudaMalloc's, unchecked here on purpose
    if (status == cudaSuccess) {
        GPU_CUDA_CHECK(cudaFree(p)); // only if CUDA allowed it, which the check above fails
    }
}

TEST_CASE("check_finite refuses to run during a capture instead of breaking it", "[capture][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    auto x = gpu::device_buffer<float>::from_host(std::vector<float>(n, 1.0F), s);
    gpu::capture_scope scope(s);
    CHECK_THROWS_AS(gpu::check_finite(x.data(), n, gpu::element_type::fp32, s), std::logic_error);
    CHECK_THROWS_WITH(gpu::check_finite(x.data(), n, gpu::element_type::fp32, s),
                      ContainsSubstring("gpu::check_finite") &&
                          ContainsSubstring("being captured"));
    CHECK(gpu::capture_status_of(s) == gpu::capture_status::active); // not invalidated
    const gpu::graph g = scope.end();
    CHECK(g.node_count() == 0);
}
