// gpu/dnn/handle.hpp: the cuDNN context, its stream binding, and the hint for
// CUDNN_STATUS_NOT_INITIALIZED on a machine without a driver.
#include <gpu/device.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("dnn::handle is move-only and moves without throwing", "[dnn]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<gpu::dnn::handle>);
    STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<gpu::dnn::handle>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<gpu::dnn::handle>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<gpu::dnn::handle>);
    // Its convolutions are stream-ordered work: it is made on a named stream.
    STATIC_REQUIRE_FALSE(std::is_default_constructible_v<gpu::dnn::handle>);
    STATIC_REQUIRE(std::is_constructible_v<gpu::dnn::handle, gpu::stream_ref>);
}

TEST_CASE("creating a cuDNN handle without a driver throws NOT_INITIALIZED with the hint and "
          "cuDNN's message",
          "[dnn]")
{
    if (gpu::is_available()) {
        SUCCEED("a GPU is usable here; creation is covered by the [gpu] tests");
        return;
    }
    try {
        const gpu::dnn::handle h(gpu::legacy_default_stream);
        FAIL("cudnnCreate succeeded without a usable GPU");
    } catch (const gpu::dnn::dnn_error& e) {
        CHECK(e.code() == CUDNN_STATUS_NOT_INITIALIZED);
        CHECK(e.status_name() == "CUDNN_STATUS_NOT_INITIALIZED");
        CHECK_THAT(e.api(), ContainsSubstring("cudnnCreate"));
        // cuDNN's own text, from cudnnGetLastErrorString.
        CHECK_THAT(e.message(), ContainsSubstring("cuDNN says: "));
        CHECK_THAT(e.message(), ContainsSubstring("cudaGetDeviceCount"));
        // The hint: no usable GPU, with the CUDA runtime's reason and its fix.
        CHECK_THAT(e.hint(), ContainsSubstring("no usable GPU"));
        CHECK_THAT(e.hint(), ContainsSubstring(gpu::unavailable_reason()));
        CHECK_THAT(std::string(e.what()), ContainsSubstring("CUDNN_STATUS_NOT_INITIALIZED (1001)"));
    }
}

TEST_CASE("an empty dnn::handle says so instead of calling cuDNN with null", "[dnn]")
{
    gpu::dnn::handle empty = gpu::dnn::handle::from_native_handle(nullptr);
    CHECK_FALSE(empty);
    CHECK(empty.get() == nullptr);
    CHECK_THROWS_WITH(empty.stream(), ContainsSubstring("the gpu::dnn::handle is empty"));
    CHECK_THROWS_AS(empty.set_stream(gpu::legacy_default_stream), std::logic_error);
    CHECK(empty.release() == nullptr);
}

TEST_CASE("a cuDNN handle binds a stream and reads it back", "[dnn][gpu]")
{
    const gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::dnn::handle h(s);
    REQUIRE(h);
    CHECK(h.stream() == s.ref());
    h.set_stream(gpu::legacy_default_stream);
    CHECK(h.stream().is_default());
    h.set_stream(s);
    CHECK(h.stream().get() == s.get());
}

TEST_CASE("moving a cuDNN handle transfers it and empties the source", "[dnn][gpu]")
{
    gpu::dnn::handle a(gpu::legacy_default_stream);
    const cudnnHandle_t raw = a.get();
    REQUIRE(raw != nullptr);
    gpu::dnn::handle b(std::move(a));
    CHECK(b.get() == raw);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_FALSE(a);            // NOLINT(bugprone-use-after-move)
    gpu::dnn::handle c(gpu::legacy_default_stream);
    c = std::move(b);
    CHECK(c.get() == raw);
    CHECK(b.get() == nullptr); // NOLINT(bugprone-use-after-move)
    gpu::dnn::handle adopted = gpu::dnn::handle::from_native_handle(c.release());
    CHECK(adopted.get() == raw);
    CHECK_FALSE(c);
}

TEST_CASE("an empty cuDNN handle has no device", "[dnn]")
{
    const gpu::dnn::handle none = gpu::dnn::handle::from_native_handle(nullptr);
    CHECK_THROWS_AS(none.device(), std::logic_error);
}

TEST_CASE("a cuDNN handle records its stream's device and keeps the caller's", "[dnn][gpu]")
{
    const gpu::device current = gpu::current_device();
    const gpu::stream s(current, gpu::stream_flags::non_blocking);
    gpu::dnn::handle h(s);
    CHECK(h.device() == current);
    h.set_stream(s); // the same device: accepted
    CHECK(gpu::current_device() == current);
}
