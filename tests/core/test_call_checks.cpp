// gpu/call_checks.hpp: the per-call debug checks every library wrapper runs through one
// checked_call, and the refusal of a synchronising call during a capture. Without a GPU: the
// switches, the contiguous extents, that no CUDA call is made with both switches off, and that
// one is made (and fails without a driver) with either on; on a GPU: the refusal of each switch
// inside a capture without invalidating it, the wording of the refusal, the wait and the pending
// error of synchronous_checks, and the numerics_error of check_numerics.
#include <gpu/call_checks.hpp>
#include <gpu/capture.hpp>
#include <gpu/device.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include "per_thread_stream.hpp"

#include "stream_gate.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <future>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::detail::call_checks;
using gpu::detail::checked_call;
using gpu::test::per_thread_stream;

namespace {

constexpr call_checks synchronous{.synchronous_checks = true};
constexpr call_checks numerics{.check_numerics = true};

} // namespace

TEST_CASE("call checks say whether a call synchronises after its work", "[call_checks]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<checked_call>);
    STATIC_REQUIRE_FALSE(std::is_move_constructible_v<checked_call>);
    CHECK_FALSE(call_checks{}.any());
    CHECK(synchronous.any());
    CHECK(numerics.any());
    CHECK(call_checks{.synchronous_checks = true, .check_numerics = true}.any());
}

TEST_CASE("contiguous elements are one run of the count", "[call_checks]")
{
    constexpr gpu::detail::strided_elements where = gpu::detail::contiguous_elements(12);
    STATIC_REQUIRE(where.batch == 1);
    STATIC_REQUIRE(where.runs == 1);
    STATIC_REQUIRE(where.run_length == 12);
    STATIC_REQUIRE(where.run_stride == 12);
    // A count beyond 64 signed bits is refused as extents before the data is touched.
    const float value = 1.0F;
    CHECK_THROWS_WITH(gpu::detail::check_finite_strided(
                          &value, gpu::element_type::fp32,
                          gpu::detail::contiguous_elements(std::numeric_limits<std::size_t>::max()),
                          per_thread_stream),
                      ContainsSubstring("gpu::check_finite: invalid extents"));
}

TEST_CASE("a checked call with both switches off makes no CUDA call", "[call_checks]")
{
    // No CUDA call is made: without a driver any would throw, and a null output is not read.
    bool described = false;
    CHECK_NOTHROW([&] {
        const checked_call checked(call_checks{}, per_thread_stream, "gpu::blas::gemm");
        checked.finish(nullptr, gpu::element_type::fp32, gpu::detail::contiguous_elements(8), [&] {
            described = true;
            return std::string();
        });
    }());
    CHECK_FALSE(described);
}

TEST_CASE("without a driver, a switch on asks CUDA whether the stream is capturing",
          "[call_checks]")
{
    if (gpu::is_available()) {
        SUCCEED("CUDA is available here; the refusals are covered by the [gpu] tests");
        return;
    }
    CHECK_THROWS_AS(checked_call(synchronous, per_thread_stream, "gpu::blas::gemm"),
                    gpu::cuda_error);
    CHECK_THROWS_AS(checked_call(numerics, per_thread_stream, "gpu::blas::gemm"), gpu::cuda_error);
    CHECK_THROWS_AS(
        gpu::detail::refuse_while_capturing(per_thread_stream, "f", "it waits", "wait later"),
        gpu::cuda_error);
}

TEST_CASE("inside a capture, each switch is refused before the call and the capture stays intact",
          "[call_checks][capture][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::capture_scope scope(s);
    CHECK_THROWS_AS(checked_call(synchronous, s, "gpu::blas::gemm"), std::logic_error);
    CHECK_THROWS_WITH(
        checked_call(synchronous, s, "gpu::blas::gemm"),
        ContainsSubstring("gpu::blas::gemm") && ContainsSubstring("synchronous_checks") &&
            ContainsSubstring("use a profile without synchronous_checks while "
                              "capturing (gpu::profile::production() or defaults())"));
    CHECK_THROWS_WITH(checked_call(numerics, s, "f"),
                      ContainsSubstring("use a profile without check_numerics") &&
                          !ContainsSubstring("synchronous_checks"));
    CHECK_NOTHROW(checked_call(call_checks{}, s, "f"));              // nothing to refuse
    CHECK(gpu::capture_status_of(s) == gpu::capture_status::active); // not invalidated
    const gpu::graph g = scope.end();
    CHECK(g.node_count() == 0);
    CHECK_NOTHROW(checked_call({.synchronous_checks = true, .check_numerics = true}, s, "f"));
}

TEST_CASE("a refusal names the operation, what it does and what to do instead",
          "[call_checks][capture][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    CHECK_NOTHROW(gpu::detail::refuse_while_capturing(s, "f", "it waits", "wait later"));
    gpu::capture_scope scope(s);
    try {
        gpu::detail::refuse_while_capturing(s, "gpu::nn::save_parameters", "it copies and waits",
                                            "save between steps");
        FAIL("no refusal during a capture");
    } catch (const std::logic_error& e) {
        CHECK(std::string(e.what()) ==
              "gpu::nn::save_parameters: the stream is being captured into a CUDA graph, and it "
              "copies and waits, which would invalidate the capture: save between steps");
    }
    CHECK(gpu::capture_status_of(s) == gpu::capture_status::active);
    CHECK(scope.end().node_count() == 0);
}

TEST_CASE("synchronous_checks waits for the call's work before it returns",
          "[call_checks][gpu][gate]")
{
    using namespace std::chrono_literals;
    gpu::stream s(gpu::stream_flags::non_blocking);
    const checked_call checked(synchronous, s, "gpu::test::operation");
    std::future<void> finished;
    {
        gpu::test::stream_gate gate(s);
        finished = std::async(std::launch::async, [&] {
            checked.finish(nullptr, gpu::element_type::fp32, gpu::detail::contiguous_elements(0),
                           [] { return std::string(); });
        });
        CHECK(finished.wait_for(500ms) == std::future_status::timeout);
        gate.open();
        finished.get();
        CHECK_FALSE(gate.timed_out()); // the wait above ran while the gate held s
    }
    CHECK(s.is_ready());
}

TEST_CASE("synchronous_checks reports a pending CUDA error as the operation's",
          "[call_checks][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    const checked_call checked(synchronous, s, "gpu::test::operation");
    // A query of a device that does not exist leaves cudaErrorInvalidDevice pending, not sticky.
    int warp = 0;
    REQUIRE(cudaDeviceGetAttribute(&warp, cudaDevAttrWarpSize, -1) == cudaErrorInvalidDevice);
    try {
        checked.finish(nullptr, gpu::element_type::fp32, gpu::detail::contiguous_elements(0),
                       [] { return std::string(); });
        FAIL("the pending error was not reported");
    } catch (const gpu::cuda_error& e) {
        CHECK(e.status() == cudaErrorInvalidDevice);
        CHECK_THAT(e.api(), ContainsSubstring("gpu::test::operation"));
    }
    CHECK(cudaGetLastError() == cudaSuccess); // reported once, then cleared
}

TEST_CASE("check_numerics throws numerics_error naming the operation and its context",
          "[call_checks][numerics][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto bad = gpu::device_buffer<float>::from_host(std::vector<float>{1, 2, nan, 4}, s);
    const auto good = gpu::device_buffer<float>::from_host(std::vector<float>{1, 2, 3, 4}, s);
    const checked_call checked(numerics, s, "gpu::test::operation", 0);
    int described = 0;
    const auto context = [&] {
        ++described;
        return std::string("4 floats");
    };
    CHECK_NOTHROW(checked.finish(good.data(), gpu::element_type::fp32,
                                 gpu::detail::contiguous_elements(good.size()), context));
    CHECK(described == 0); // built only for an error
    try {
        checked.finish(bad.data(), gpu::element_type::fp32,
                       gpu::detail::contiguous_elements(bad.size()), context);
        FAIL("no numerics_error although the output holds a NaN");
    } catch (const gpu::numerics_error& e) {
        CHECK(e.operation() == "gpu::test::operation (4 floats)");
        CHECK(e.device() == 0);
        CHECK(e.report().nan_count == 1u);
        CHECK(e.report().first_index == std::optional<std::size_t>(2));
    }
    CHECK(described == 1);
}
