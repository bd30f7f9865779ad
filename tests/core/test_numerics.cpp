// gpu/numerics.hpp: the NaN/Inf report's words and numerics_error's place in the error family,
// its house-format message and its hint. All on the host.
#include <gpu/numerics.hpp>

#include "catch.hpp"

#include <optional>
#include <string>
#include <type_traits>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

TEST_CASE("a non-finite report says what was found", "[numerics]")
{
    const gpu::non_finite_report clean{.elements = 100, .first_index = std::nullopt};
    CHECK(clean.all_finite());
    CHECK(clean.to_string() == "all 100 elements are finite");

    const gpu::non_finite_report bad{.elements = 1000000, .nan_count = 3, .inf_count = 1, .first_index = 42};
    CHECK_FALSE(bad.all_finite());
    CHECK(bad.to_string() == "3 NaN and 1 Inf in 1000000 elements, the first at index 42");

    const gpu::non_finite_report inf_only{.elements = 8, .inf_count = 2, .first_index = std::nullopt};
    CHECK_FALSE(inf_only.all_finite());
    CHECK(inf_only.to_string() == "0 NaN and 2 Inf in 8 elements"); // no index when none is known
}

TEST_CASE("numerics_error is a gpu::error in the house format, with a hint", "[numerics]")
{
    STATIC_REQUIRE(std::is_base_of_v<gpu::error, gpu::numerics_error>);
    STATIC_REQUIRE(std::is_nothrow_copy_constructible_v<gpu::numerics_error>);

    const gpu::non_finite_report report{.elements = 1024, .nan_count = 2, .inf_count = 1, .first_index = 17};
    const gpu::numerics_error e("gpu::blas::gemm (FP16 inputs, 32x32x32)", report, 3);
    const std::string what = e.what();
    CHECK_THAT(what, StartsWith("gpu::blas::gemm (FP16 inputs, 32x32x32): non-finite output (3): "
                                "2 NaN and 1 Inf in 1024 elements, the first at index 17\nhint: "));
    // The hint says where NaN and Inf come from and why the check ran.
    CHECK_THAT(what, ContainsSubstring("inputs") && ContainsSubstring("65504") && ContainsSubstring("BF16") &&
                         ContainsSubstring("uninitialised") && ContainsSubstring("check_numerics") &&
                         ContainsSubstring("synchronisation"));
    CHECK(e.operation() == "gpu::blas::gemm (FP16 inputs, 32x32x32)");
    CHECK(e.api() == e.operation());
    CHECK(e.status_name() == "non-finite output");
    CHECK(e.code() == 3);
    CHECK(e.device() == 3);
    CHECK(e.report().nan_count == 2);
    CHECK(e.report().first_index == std::optional<std::size_t>(17));
    CHECK(std::string(e.where().file_name()).find("test_numerics.cpp") != std::string::npos);

    // Caught as the root of the family and as std::runtime_error, like every cudagap failure.
    try {
        throw gpu::numerics_error("gpu::dnn::convolution (fp16 nhwc ...)", report, 0);
    } catch (const gpu::error& caught) {
        CHECK_THAT(std::string(caught.what()), StartsWith("gpu::dnn::convolution (fp16 nhwc ...): "
                                                          "non-finite output (3)"));
    }
}

TEST_CASE("numerics_error reads the current device when not told", "[numerics]")
{
    const gpu::non_finite_report report{.elements = 1, .nan_count = 1, .first_index = 0};
    const gpu::numerics_error e("op", report);
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        current = -1; // no GPU here: the error still builds and says so
    }
    CHECK(e.device() == current);
    CHECK(e.code() == 1);
}
