// gpu/dnn/numerics.hpp: the overload of the core's NaN/Inf check on a data_type (the scans
// themselves are tested in tests/core/test_numerics.cpp), its argument checks on the host, the
// 0.1 names that forward to it, and on a GPU a large tensor checked by the core's kernel.
#include <gpu/dnn/numerics.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>

#include "catch.hpp"

#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using gpu::dnn::data_type;

namespace {
template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& values)
{
    return std::as_bytes(std::span<const T>(values));
}
} // namespace

TEST_CASE("every data_type maps onto the core's element type of its size", "[dnn]")
{
    CHECK(gpu::dnn::to_element_type(data_type::fp32) == gpu::element_type::fp32);
    CHECK(gpu::dnn::to_element_type(data_type::fp16) == gpu::element_type::fp16);
    CHECK(gpu::dnn::to_element_type(data_type::bf16) == gpu::element_type::bf16);
    for (const data_type type : {data_type::fp32, data_type::fp16, data_type::bf16}) {
        CHECK(gpu::element_size(gpu::dnn::to_element_type(type)) == gpu::dnn::element_size(type));
    }
    CHECK_THROWS_WITH(gpu::dnn::to_element_type(static_cast<data_type>(3)),
                      ContainsSubstring("data_type value 3"));
}

TEST_CASE("a check refuses bad arguments before touching the GPU", "[dnn]")
{
    CHECK_THROWS_AS(gpu::dnn::check_finite(nullptr, 5, data_type::fp32, gpu::legacy_default_stream),
                    std::invalid_argument);
    CHECK(
        gpu::dnn::check_finite(nullptr, 0, data_type::fp16, gpu::legacy_default_stream).elements ==
        0);
    // count * 4 wraps around: refused before any allocation, copy or synchronisation.
    const std::size_t wrapping = std::numeric_limits<std::size_t>::max() / 4 + 3;
    const std::uint16_t somewhere = 0;
    CHECK_THROWS_WITH(
        gpu::dnn::check_finite(&somewhere, wrapping, data_type::fp32, gpu::legacy_default_stream),
        ContainsSubstring("more than the address space holds"));
    CHECK_THROWS_WITH(gpu::dnn::check_finite(&somewhere, 1, static_cast<data_type>(3),
                                             gpu::legacy_default_stream),
                      ContainsSubstring("data_type value 3"));
}

// The 0.1 names stay one release, deprecated; they must still answer as before.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST_CASE("the 0.1 names find_non_finite and find_non_finite_on_host still work", "[dnn]")
{
    const std::vector<std::uint16_t> half{0x3C00, 0x7C00, 0x7E00}; // 1, Inf, NaN
    const auto report =
        gpu::dnn::find_non_finite_on_host(bytes_of(half), half.size(), data_type::fp16);
    CHECK(report.inf_count == 1);
    CHECK(report.nan_count == 1);
    CHECK(*report.first_index == 1);
    const std::vector<std::uint16_t> two{0, 0};
    CHECK_THROWS_WITH(gpu::dnn::find_non_finite_on_host(bytes_of(two), 2, data_type::fp32),
                      ContainsSubstring("2 FP32 elements need 8 bytes, the span has 4"));
    CHECK_THROWS_AS(
        gpu::dnn::find_non_finite(nullptr, 5, data_type::fp32, gpu::legacy_default_stream),
        std::invalid_argument);
    CHECK(gpu::dnn::find_non_finite(nullptr, 0, data_type::fp16, gpu::legacy_default_stream)
              .elements == 0);
}
#pragma GCC diagnostic pop

TEST_CASE("checks answer in the core's report, which numerics_error carries", "[dnn]")
{
    STATIC_REQUIRE(std::is_same_v<decltype(gpu::dnn::check_finite(nullptr, 0, data_type::fp32,
                                                                  gpu::legacy_default_stream)),
                                  gpu::non_finite_report>);
    const std::vector<std::uint16_t> half{0x3C00, 0x3C00, 0x7E00}; // 1, 1, NaN
    const gpu::non_finite_report report = gpu::check_finite_on_host(
        bytes_of(half), half.size(), gpu::dnn::to_element_type(data_type::fp16));
    const gpu::numerics_error e("conv fp16", report, 0);
    CHECK_THAT(std::string(e.what()),
               StartsWith("conv fp16: non-finite output (1): 1 NaN and 0 Inf in 3 elements, the "
                          "first at index 2") &&
                   ContainsSubstring("gpu::check_finite"));
    CHECK(e.report().nan_count == 1);
}

TEST_CASE("device checks find NaN and Inf anywhere in a large tensor", "[dnn][gpu]")
{
    // 12 MiB and a bit (the 0.1 scan copied 4 MiB chunks): the NaN sits in the second 4 MiB.
    const std::size_t count = (std::size_t{3} << 20) + 17;
    std::vector<float> host(count, 1.0F);
    host[(std::size_t{1} << 20) + 5] = std::numeric_limits<float>::quiet_NaN();
    host[count - 1] = std::numeric_limits<float>::infinity();
    const auto device = gpu::device_buffer<float>::from_host(host, gpu::legacy_default_stream);
    const auto report =
        gpu::dnn::check_finite(device.data(), count, data_type::fp32, device.stream());
    CHECK(report.elements == count);
    CHECK(report.nan_count == 1);
    CHECK(report.inf_count == 1);
    CHECK(*report.first_index == (std::size_t{1} << 20) + 5);
}
