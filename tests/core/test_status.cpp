// gpu/detail/status.hpp: the one status check, for the CUDA runtime and for any library that
// gives its status type traits (here a made-up library, so that every step runs without a GPU
// and can be watched).
#include <gpu/detail/status.hpp>
#include <gpu/device.hpp>
#include <gpu/error.hpp>

#include "catch.hpp"

#include <source_location>
#include <string>
#include <string_view>

using Catch::Matchers::ContainsSubstring;

namespace {

enum test_status { test_ok = 0, test_failed = 7, test_unloading = 9, test_full = 11 };

class test_error : public gpu::error {
public:
    using error::error;
};

class test_full_error : public gpu::error {
public:
    using error::error;
};

// What the traits were asked, so that the tests can see the order and the arguments.
struct trace {
    int taken = 0;
    int named = 0;
    std::string call;
    std::string says;
    int device = -2;
};

trace& traced()
{
    static trace t;
    return t;
}

} // namespace

namespace gpu::detail {
template <>
struct status_traits<test_status> {
    using error_type = test_error;
    static constexpr std::string_view library = "testlib";
    static constexpr test_status success = test_ok;
    static std::string name(test_status status)
    {
        ++traced().named;
        return "TEST_STATUS_" + std::to_string(static_cast<int>(status));
    }
    static std::string message(test_status) { return "the test library failed"; }
    static std::string hint(test_status, const failure_context& context)
    {
        traced().call = context.call;
        traced().says = context.library_says;
        traced().device = context.device;
        return "try again";
    }
    static std::string take_last_error(test_status)
    {
        ++traced().taken;
        return "its own words";
    }
    static bool tolerated_at_exit(test_status status) noexcept { return status == test_unloading; }
    static void throw_specific(test_status status, const char* api, std::source_location where)
    {
        if (status == test_full) {
            throw test_full_error(api, "TEST_FULL", 11, "full", "", -1, where);
        }
    }
};
} // namespace gpu::detail

TEST_CASE("a status type is checked once it has traits", "[error]")
{
    STATIC_REQUIRE(gpu::detail::library_status<test_status>);
    STATIC_REQUIRE(gpu::detail::library_status<cudaError_t>);
    STATIC_REQUIRE_FALSE(gpu::detail::library_status<int>);
}

TEST_CASE("GPU_CHECK passes success without asking the library anything", "[error]")
{
    traced() = {};
    CHECK_NOTHROW(GPU_CHECK(test_ok));
    CHECK(traced().taken == 0);
    CHECK(traced().named == 0);
}

TEST_CASE("a failed status throws the library's error, composed from its traits", "[error]")
{
    traced() = {};
    const int line = __LINE__ + 2;
    try {
        GPU_CHECK(static_cast<test_status>(test_failed));
        FAIL("GPU_CHECK did not throw");
    } catch (const test_error& e) {
        CHECK(std::string(e.what()) ==
              "static_cast<test_status>(test_failed): TEST_STATUS_7 (7): the test library failed; "
              "testlib says: its own words\nhint: try again");
        CHECK(e.status_name() == "TEST_STATUS_7");
        CHECK(e.code() == 7);
        CHECK(e.hint() == "try again");
        CHECK(static_cast<int>(e.where().line()) == line);
        CHECK_THAT(std::string(e.where().file_name()), ContainsSubstring("test_status.cpp"));
        CHECK(e.device() == gpu::detail::current_device_or_unknown());
    }
    // The library's own text is taken once and given to the hint with the device.
    CHECK(traced().taken == 1);
    CHECK(traced().says == "its own words");
    CHECK(traced().call.empty());
    CHECK(traced().device == gpu::detail::current_device_or_unknown());
}

TEST_CASE("what a call was doing reaches the hint", "[error]")
{
    traced() = {};
    CHECK_THROWS_AS(gpu::detail::check(test_failed, "conv()", std::source_location::current(),
                                       "fp16 nhwc [32, 3, 224, 224]"),
                    test_error);
    CHECK(traced().call == "fp16 nhwc [32, 3, 224, 224]");
}

TEST_CASE("a library may throw a more specific error for some statuses", "[error]")
{
    try {
        GPU_CHECK(static_cast<test_status>(test_full));
        FAIL("GPU_CHECK did not throw");
    } catch (const test_full_error& e) {
        CHECK(e.status_name() == "TEST_FULL");
    } catch (const test_error&) {
        FAIL("the general error was thrown instead of the specific one");
    }
}

TEST_CASE("a failed destroy is reported unless it worked or is expected at exit", "[error]")
{
    traced() = {};
    gpu::detail::report_destroy_failure("testDestroy", test_ok);
    gpu::detail::report_destroy_failure("testDestroy", test_unloading);
    CHECK(traced().taken == 0);
    CHECK(traced().named == 0);
    // A real failure clears the library's record and names the status; it never throws.
    gpu::detail::report_destroy_failure("testDestroy", test_failed);
    CHECK(traced().taken == 1);
    CHECK(traced().named == 1);
}

TEST_CASE("GPU_CHECK on CUDA runtime statuses throws the core's errors", "[error]")
{
    CHECK_NOTHROW(GPU_CHECK(cudaSuccess));
    CHECK_THROWS_AS(GPU_CHECK(cudaErrorInvalidValue), gpu::cuda_error);
    // An allocation failure is the more specific out_of_memory, with the device's numbers.
    CHECK_THROWS_AS(GPU_CHECK(cudaErrorMemoryAllocation), gpu::out_of_memory);
    CHECK_THROWS_AS(GPU_CUDA_CHECK(cudaErrorMemoryAllocation), gpu::out_of_memory);
    // The runtime unloading at process exit is the one tolerated destroy failure.
    STATIC_REQUIRE(
        noexcept(gpu::detail::report_destroy_failure("cudaFree", cudaErrorCudartUnloading)));
    CHECK(gpu::detail::status_traits<cudaError_t>::tolerated_at_exit(cudaErrorCudartUnloading));
    CHECK_FALSE(gpu::detail::status_traits<cudaError_t>::tolerated_at_exit(cudaErrorInvalidValue));
}

TEST_CASE("the current device is read without throwing, -1 without a usable GPU", "[error]")
{
    STATIC_REQUIRE(noexcept(gpu::detail::current_device_or_unknown()));
    const int device = gpu::detail::current_device_or_unknown();
    if (!gpu::is_available()) {
        CHECK(device == -1);
        return;
    }
    CHECK(device == gpu::current_device().id());
    CHECK(cudaPeekAtLastError() == cudaSuccess);
}
