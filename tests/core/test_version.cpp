// gpu/version.hpp: library, runtime and driver versions, and the build's GPU architectures.
#include <gpu/version.hpp>

#include "catch.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("the library version is the CMake project version", "[version]")
{
    STATIC_REQUIRE(gpu::library_version() == gpu::semantic_version{0, 2, 0});
    CHECK(gpu::library_version().to_string() == "0.2.0");
}

TEST_CASE("semantic versions order by major, minor, patch", "[version]")
{
    CHECK(gpu::semantic_version{0, 1, 0} < gpu::semantic_version{0, 1, 1});
    CHECK(gpu::semantic_version{0, 9, 9} < gpu::semantic_version{1, 0, 0});
    CHECK(gpu::semantic_version{9, 19, 0} > gpu::semantic_version{9, 2, 5});
}

TEST_CASE("CUDA's integer versions decode and encode", "[version]")
{
    STATIC_REQUIRE(gpu::cuda_version::from_int(13000) == gpu::cuda_version{13, 0});
    STATIC_REQUIRE(gpu::cuda_version::from_int(12040) == gpu::cuda_version{12, 4});
    STATIC_REQUIRE(gpu::cuda_version{12, 8}.as_int() == 12080);
    CHECK(gpu::cuda_version{12, 4}.to_string() == "12.4");
    CHECK(gpu::cuda_version{}.to_string() == "none");
    CHECK_FALSE(gpu::cuda_version{}.known());
    CHECK(gpu::cuda_version{12, 4} < gpu::cuda_version{13, 0});
}

TEST_CASE("a CUDA version without CUDA's integer form is refused, not overflowed", "[version]")
{
    constexpr int max = std::numeric_limits<int>::max();
    STATIC_REQUIRE(gpu::cuda_version{max / 1000, 0}.has_int_form());
    STATIC_REQUIRE_FALSE(gpu::cuda_version{max / 1000 + 1, 0}.has_int_form());
    STATIC_REQUIRE_FALSE(gpu::cuda_version{12, 100}.has_int_form()); // would read as 13.0
    STATIC_REQUIRE_FALSE(gpu::cuda_version{-1, 0}.has_int_form());
    CHECK_THROWS_WITH(gpu::cuda_version({max, max}).as_int(),
                      ContainsSubstring("cuda_version::as_int") &&
                          ContainsSubstring("no integer form"));
    CHECK_THROWS_WITH(gpu::cuda_version::from_int(-13000),
                      ContainsSubstring("negative CUDA version -13000"));
    const gpu::cuda_version largest = gpu::cuda_version::from_int(max);
    CHECK(largest.as_int() == max / 10 * 10);
}

TEST_CASE("the compiled-against runtime version is CUDART_VERSION", "[version]")
{
    CHECK(gpu::compiled_runtime_version().as_int() == CUDART_VERSION / 10 * 10);
}

TEST_CASE("the loaded runtime can be read without a GPU and matches the headers' major",
          "[version]")
{
    const gpu::cuda_version loaded = gpu::runtime_version();
    REQUIRE(loaded.known());
    CHECK(loaded.major == gpu::compiled_runtime_version().major);
}

TEST_CASE("the driver version is 0 with a reason when no driver is installed", "[version]")
{
    const gpu::driver_info driver = gpu::driver_version();
    if (driver.installed()) {
        CHECK(driver.reason.empty());
        CHECK(driver.supported_cuda.major >= 11);
    } else {
        CHECK(driver.supported_cuda == gpu::cuda_version{});
        CHECK_THAT(driver.reason, ContainsSubstring("no NVIDIA driver found"));
        CHECK_FALSE(driver.supports_runtime());
    }
}

TEST_CASE("a driver supports the runtime when its CUDA major version is not older", "[version]")
{
    const gpu::cuda_version runtime = gpu::runtime_version();
    CHECK(gpu::driver_info{runtime, {}}.supports_runtime());
    CHECK(gpu::driver_info{{runtime.major, 9}, {}}.supports_runtime());
    CHECK(gpu::driver_info{{runtime.major + 1, 0}, {}}.supports_runtime());
    CHECK_FALSE(gpu::driver_info{{runtime.major - 1, 9}, {}}.supports_runtime());
    CHECK_FALSE(gpu::driver_info{{}, "none"}.supports_runtime());
}

TEST_CASE("the minimum driver branch is known for CUDA 11 to 13", "[version]")
{
    CHECK(gpu::minimum_driver_for({13, 0}) == "580");
    CHECK(gpu::minimum_driver_for({12, 4}) == "525");
    CHECK(gpu::minimum_driver_for({11, 8}) == "450");
    CHECK(gpu::minimum_driver_for({99, 0}).empty());
}

TEST_CASE("CMake architecture lists parse into machine code and PTX", "[version]")
{
    const auto archs = gpu::parse_cuda_architectures("75-real;80-real;86-real;89-real;90");
    REQUIRE(archs.size() == 5);
    CHECK(archs[0] == gpu::cuda_architecture{75, true, false, ""});
    CHECK(archs[3] == gpu::cuda_architecture{89, true, false, ""});
    CHECK(archs[4] == gpu::cuda_architecture{90, true, true, ""});
    const auto special = gpu::parse_cuda_architectures("90a-real;75-virtual;;");
    REQUIRE(special.size() == 2);
    CHECK(special[0] == gpu::cuda_architecture{90, true, false, "a"});
    CHECK(special[1] == gpu::cuda_architecture{75, false, true, ""});
    CHECK(gpu::parse_cuda_architectures("").empty());
}

TEST_CASE("unresolvable or malformed architecture entries are rejected with the entry", "[version]")
{
    CHECK_THROWS_WITH(gpu::parse_cuda_architectures("native"), ContainsSubstring("'native'"));
    CHECK_THROWS_WITH(gpu::parse_cuda_architectures("80-real;all-major"),
                      ContainsSubstring("'all-major'"));
    CHECK_THROWS_WITH(gpu::parse_cuda_architectures("90-fast"),
                      ContainsSubstring("unknown suffix '-fast'"));
}

TEST_CASE("an architecture number beyond int is std::invalid_argument, as documented", "[version]")
{
    // std::stoi threw std::out_of_range (not an invalid_argument) for these.
    CHECK_THROWS_AS(gpu::parse_cuda_architectures("99999999999"), std::invalid_argument);
    CHECK_THROWS_WITH(gpu::parse_cuda_architectures("80;2147483648-real"),
                      ContainsSubstring("'2147483648-real'") && ContainsSubstring("beyond int"));
    CHECK(gpu::parse_cuda_architectures("2147483647")[0].sm == std::numeric_limits<int>::max());
    CHECK(gpu::parse_cuda_architectures("0090a-real")[0] ==
          gpu::cuda_architecture{90, true, false, "a"});
    // A long run of letters is one suffix, read in one pass.
    const std::string letters(100000, 'a');
    CHECK(gpu::parse_cuda_architectures("90" + letters)[0].suffix == letters);
}

TEST_CASE("the built architectures are what CMake was configured with", "[version]")
{
    std::string expected = EXPECTED_CUDA_ARCHITECTURES;
    std::replace(expected.begin(), expected.end(), ',', ';');
    CHECK(gpu::built_cuda_architectures_string() == expected);
    CHECK(gpu::built_cuda_architectures() == gpu::parse_cuda_architectures(expected));
}
