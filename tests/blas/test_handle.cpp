// gpu/blas/handle.hpp: creation (and its failure without a driver), profiles, math mode and
// atomics read back from cuBLAS, the workspace, and streams.
#include <gpu/blas/handle.hpp>

#include <cublas_v2.h>

#include "catch.hpp"

#include <gpu/device.hpp>
#include <gpu/memory.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include <stdexcept>
#include <string>
#include <type_traits>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
namespace blas = gpu::blas;

static_assert(!std::is_copy_constructible_v<blas::handle>);
static_assert(std::is_nothrow_move_constructible_v<blas::handle>);
static_assert(std::is_nothrow_move_assignable_v<blas::handle>);

TEST_CASE("a blas::handle is made on a named stream", "[blas]")
{
    // Its GEMMs and workspace are stream-ordered work: no constructor picks the default stream.
    STATIC_REQUIRE_FALSE(std::is_default_constructible_v<blas::handle>);
    STATIC_REQUIRE_FALSE(std::is_constructible_v<blas::handle, const gpu::profile&>);
    STATIC_REQUIRE(std::is_constructible_v<blas::handle, gpu::stream_ref>);
    STATIC_REQUIRE(std::is_constructible_v<blas::handle, const gpu::profile&, gpu::stream_ref>);
    STATIC_REQUIRE_FALSE(
        std::is_invocable_v<decltype(&blas::handle::from_native_handle), cublasHandle_t>);
}

TEST_CASE(
    "creating a handle without a usable GPU throws blas_error from cublasCreate with the reason",
    "[blas]")
{
    if (gpu::is_available()) {
        const blas::handle h(gpu::legacy_default_stream);
        CHECK(h.get() != nullptr);
        return;
    }
    try {
        const blas::handle h(gpu::legacy_default_stream);
        FAIL("cublasCreate succeeded although no GPU is usable");
    } catch (const gpu::blas::blas_error& e) {
        const std::string what = e.what();
        CHECK_THAT(what, StartsWith("cublasCreate(&raw): CUBLAS_STATUS_NOT_INITIALIZED (1): "));
        CHECK(e.status_name() == "CUBLAS_STATUS_NOT_INITIALIZED");
        CHECK_THAT(e.hint(), StartsWith("cuBLAS could not initialise because no GPU is usable: "));
        CHECK_THAT(e.hint(), ContainsSubstring(gpu::unavailable_reason()));
        CHECK(e.device() == -1);
    }
}

TEST_CASE("a profile's settings map onto handle options", "[blas]")
{
    const auto dev = blas::handle_options::from_profile(gpu::profile::development());
    CHECK(dev.math == blas::math_mode::default_math);
    CHECK(dev.atomics == blas::atomics_mode::allowed);
    CHECK(dev.synchronous_checks);
    CHECK(dev.check_numerics);
    const auto prod = blas::handle_options::from_profile(gpu::profile::production());
    CHECK(prod.math == blas::math_mode::tf32);
    CHECK(prod.atomics == blas::atomics_mode::allowed);
    CHECK_FALSE(prod.synchronous_checks);
    CHECK_FALSE(prod.check_numerics);
    const auto test = blas::handle_options::from_profile(gpu::profile::testing());
    CHECK(test.math == blas::math_mode::default_math);
    CHECK(test.atomics == blas::atomics_mode::forbidden);
    CHECK_FALSE(test.workspace_bytes.has_value());
    const blas::handle_options defaults;
    CHECK(defaults.math == blas::math_mode::default_math);
    CHECK(defaults.atomics == blas::atomics_mode::forbidden);
}

TEST_CASE("modes have names and the workspace follows NVIDIA's recommendation", "[blas]")
{
    CHECK(blas::to_string(blas::math_mode::default_math) == "default");
    CHECK(blas::to_string(blas::math_mode::strict_fp32) == "strict FP32");
    CHECK(blas::to_string(blas::math_mode::tf32) == "TF32");
    CHECK(blas::to_string(blas::atomics_mode::forbidden) == "forbidden");
    CHECK(blas::to_string(blas::atomics_mode::allowed) == "allowed");
    CHECK(blas::recommended_workspace_bytes({9, 0}) == 32u << 20);
    CHECK(blas::recommended_workspace_bytes({10, 0}) == 32u << 20);
    CHECK(blas::recommended_workspace_bytes({8, 6}) == 4u << 20);
    CHECK(blas::recommended_workspace_bytes({7, 5}) == 4u << 20);
}

TEST_CASE("an empty handle refuses to be used instead of passing null to cuBLAS", "[blas]")
{
    blas::handle h = blas::handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    CHECK(h.get() == nullptr);
    CHECK(h.release() == nullptr);
    CHECK_THROWS_AS(h.device(), std::logic_error);
    CHECK_THROWS_WITH(h.set_math(blas::math_mode::tf32),
                      ContainsSubstring("gpu::blas::handle::set_math") &&
                          ContainsSubstring("is empty (moved from or released"));
    CHECK_THROWS_AS(h.math(), std::logic_error);
    CHECK_THROWS_WITH(h.refresh_settings(),
                      ContainsSubstring("gpu::blas::handle::refresh_settings") &&
                          ContainsSubstring("is empty (moved from or released"));
    CHECK_THROWS_AS(h.atomics(), std::logic_error);
    CHECK_THROWS_AS(h.set_workspace_size(1024), std::logic_error);
    CHECK_THROWS_AS(h.set_stream(gpu::legacy_default_stream), std::logic_error);
    // The debugging switches are plain settings and work on any handle.
    h.set_check_numerics(true);
    h.set_synchronous_checks(true);
    CHECK(h.check_numerics());
    CHECK(h.synchronous_checks());
}

TEST_CASE("a handle is created with its options, which read back from cuBLAS", "[blas][gpu]")
{
    gpu::stream stream(gpu::stream_flags::non_blocking);
    blas::handle h(stream, {.math = blas::math_mode::tf32, .atomics = blas::atomics_mode::allowed});
    REQUIRE(h.get() != nullptr);
    CHECK(h.stream() == stream.ref());
    CHECK(h.device() == gpu::current_device());
    CHECK(h.math() == blas::math_mode::tf32);
    CHECK(h.atomics() == blas::atomics_mode::allowed);
    CHECK(h.workspace_size() ==
          blas::recommended_workspace_bytes(gpu::current_device().capability()));
    for (const auto mode :
         {blas::math_mode::strict_fp32, blas::math_mode::default_math, blas::math_mode::tf32}) {
        h.set_math(mode);
        CHECK(h.math() == mode);
    }
    h.set_atomics(blas::atomics_mode::forbidden);
    CHECK(h.atomics() == blas::atomics_mode::forbidden);
    // The handle's record is what cuBLAS has: set_math reached the cuBLAS handle.
    cublasMath_t raw_math = CUBLAS_DEFAULT_MATH;
    REQUIRE(cublasGetMathMode(h.get(), &raw_math) == CUBLAS_STATUS_SUCCESS);
    CHECK(raw_math == CUBLAS_TF32_TENSOR_OP_MATH);
    // The raw handle is the same cuBLAS object: a mode set through it reads back once refreshed.
    REQUIRE(cublasSetMathMode(h.get(), CUBLAS_PEDANTIC_MATH) == CUBLAS_STATUS_SUCCESS);
    h.refresh_settings();
    CHECK(h.math() == blas::math_mode::strict_fp32);
}

TEST_CASE("an adopted handle's modes are read once, and modes outside math_mode are named",
          "[blas][gpu]")
{
    cublasHandle_t raw = nullptr;
    REQUIRE(cublasCreate(&raw) == CUBLAS_STATUS_SUCCESS);
    REQUIRE(cublasSetMathMode(raw, CUBLAS_TF32_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS);
    blas::handle adopted = blas::handle::from_native_handle(raw, gpu::legacy_default_stream);
    CHECK(adopted.math() == blas::math_mode::tf32);
    // CUBLAS_TENSOR_OP_MATH (deprecated) is none of math_mode: math() says so.
    REQUIRE(cublasSetMathMode(adopted.get(), CUBLAS_TENSOR_OP_MATH) == CUBLAS_STATUS_SUCCESS);
    adopted.refresh_settings();
    CHECK_THROWS_WITH(adopted.math(), ContainsSubstring("set through the raw handle"));
}

TEST_CASE("a handle from a profile applies it, and configure re-applies", "[blas][gpu]")
{
    blas::handle h(gpu::profile::production(), gpu::legacy_default_stream);
    CHECK(h.math() == blas::math_mode::tf32);
    CHECK(h.atomics() == blas::atomics_mode::allowed);
    CHECK_FALSE(h.check_numerics());
    h.configure(gpu::profile::testing());
    CHECK(h.math() == blas::math_mode::default_math);
    CHECK(h.atomics() == blas::atomics_mode::forbidden);
    h.configure(gpu::profile::development());
    CHECK(h.synchronous_checks());
    CHECK(h.check_numerics());
}

TEST_CASE("the workspace is a counted, resizable device buffer", "[blas][gpu]")
{
    const auto before = gpu::allocation_statistics().current_bytes;
    {
        blas::handle h(gpu::legacy_default_stream, {.workspace_bytes = std::size_t{1} << 20});
        CHECK(h.workspace_size() == std::size_t{1} << 20);
        CHECK(gpu::allocation_statistics().current_bytes == before + (std::size_t{1} << 20));
        h.set_workspace_size(0);
        CHECK(h.workspace_size() == 0u);
        CHECK(gpu::allocation_statistics().current_bytes == before);
        h.set_workspace_size(std::size_t{2} << 20);
        CHECK(gpu::allocation_statistics().current_bytes == before + (std::size_t{2} << 20));
        gpu::current_device().synchronize();
    }
    CHECK(gpu::allocation_statistics().current_bytes == before);
}

TEST_CASE("moving a handle moves the cuBLAS handle and leaves the source empty", "[blas][gpu]")
{
    blas::handle a(gpu::legacy_default_stream);
    const cublasHandle_t raw = a.get();
    blas::handle b(std::move(a));
    CHECK(b.get() == raw);
    CHECK(a.get() == nullptr); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_THROWS_AS(a.math(), std::logic_error);
    blas::handle c(gpu::legacy_default_stream);
    c = std::move(b);
    CHECK(c.get() == raw);
    CHECK(c.math() == blas::math_mode::default_math);
}

TEST_CASE("binding another stream moves the handle and its workspace there", "[blas][gpu]")
{
    gpu::stream first(gpu::stream_flags::non_blocking);
    gpu::stream second(gpu::stream_flags::non_blocking);
    blas::handle h(first);
    h.set_stream(second);
    CHECK(h.stream() == second.ref());
    cudaStream_t bound = nullptr;
    REQUIRE(cublasGetStream(h.get(), &bound) == CUBLAS_STATUS_SUCCESS);
    CHECK(bound == second.get());
    h.set_stream(second); // already bound: nothing to do
    h.set_stream(first);  // handle destroyed before both streams
    CHECK(h.stream() == first.ref());
}

TEST_CASE("a released cuBLAS handle stays usable and is adopted back", "[blas][gpu]")
{
    blas::handle h(gpu::legacy_default_stream);
    const cublasHandle_t raw = h.release();
    REQUIRE(raw != nullptr);
    CHECK(h.get() == nullptr);
    blas::handle adopted = blas::handle::from_native_handle(raw, gpu::legacy_default_stream);
    CHECK(adopted.get() == raw);
    CHECK_FALSE(adopted.workspace_size().has_value());
    CHECK(adopted.math() == blas::math_mode::default_math);
}
