// gpu/dnn/numerics.hpp: NaN/Inf scans by bit pattern for FP32, FP16 and BF16 on the host, and
// on device memory where a GPU exists.
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

TEST_CASE("FP32 scans count NaN and Inf and find the first", "[dnn]")
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> values{1.0F, std::numeric_limits<float>::max(), -0.0F,
                                    std::numeric_limits<float>::denorm_min(), -inf, nan, inf,
                                    std::numeric_limits<float>::signaling_NaN()};
    const gpu::non_finite_report report =
        gpu::dnn::find_non_finite_on_host(bytes_of(values), values.size(), data_type::fp32);
    CHECK(report.elements == 8);
    CHECK(report.nan_count == 2);
    CHECK(report.inf_count == 2);
    REQUIRE(report.first_index.has_value());
    CHECK(*report.first_index == 4);
    CHECK_FALSE(report.all_finite());
    CHECK(report.to_string() == "2 NaN and 2 Inf in 8 elements, the first at index 4");

    const std::vector<float> finite{0.5F, -3.0F, 1e30F};
    const auto clean = gpu::dnn::find_non_finite_on_host(bytes_of(finite), 3, data_type::fp32);
    CHECK(clean.all_finite());
    CHECK_FALSE(clean.first_index.has_value());
}

TEST_CASE("FP16 and BF16 scans read the 16-bit patterns", "[dnn]")
{
    // FP16: 0x7C00 +Inf, 0xFC00 -Inf, 0x7E00 NaN, 0x7BFF max finite (65504), 0x0001 denormal.
    const std::vector<std::uint16_t> half{0x3C00, 0x7BFF, 0x0001, 0x7C00, 0xFC00, 0x7E00, 0x8000};
    const auto h = gpu::dnn::find_non_finite_on_host(bytes_of(half), half.size(), data_type::fp16);
    CHECK(h.inf_count == 2);
    CHECK(h.nan_count == 1);
    CHECK(*h.first_index == 3);
    // BF16: 0x7F80 +Inf, 0x7FC0 NaN, 0x7F7F max finite; 0x7C00 is a finite BF16 number.
    const std::vector<std::uint16_t> bf16{0x7C00, 0x7F7F, 0x3F80, 0x7FC0, 0xFF80};
    const auto b = gpu::dnn::find_non_finite_on_host(bytes_of(bf16), bf16.size(), data_type::bf16);
    CHECK(b.nan_count == 1);
    CHECK(b.inf_count == 1);
    CHECK(*b.first_index == 3);
}

TEST_CASE("a scan refuses a span shorter than the elements it is asked for", "[dnn]")
{
    const std::vector<std::uint16_t> two{0, 0};
    CHECK_THROWS_WITH(gpu::dnn::find_non_finite_on_host(bytes_of(two), 2, data_type::fp32),
                      ContainsSubstring("2 fp32 elements need 8 bytes, the span has 4"));
    CHECK_THROWS_AS(gpu::dnn::find_non_finite(nullptr, 5, data_type::fp32, gpu::stream_ref{}), std::invalid_argument);
    CHECK(gpu::dnn::find_non_finite(nullptr, 0, data_type::fp16, gpu::stream_ref{}).elements == 0);
}

TEST_CASE("a scan's byte count cannot wrap around", "[dnn]")
{
    // count * 4 wraps to 8: a multiplication would let a 16-byte span pass and scan far beyond.
    const std::vector<std::uint16_t> eight(8, 0);
    const std::size_t wrapping = std::numeric_limits<std::size_t>::max() / 4 + 3;
    CHECK_THROWS_WITH(gpu::dnn::find_non_finite_on_host(bytes_of(eight), wrapping, data_type::fp32),
                      ContainsSubstring(std::to_string(wrapping) + " x 4 bytes, the span has 16"));
    // On the device the count is refused before any copy or synchronisation.
    const std::uint16_t somewhere = 0;
    CHECK_THROWS_WITH(gpu::dnn::find_non_finite(&somewhere, wrapping, data_type::fp32, gpu::stream_ref{}),
                      ContainsSubstring("more than the address space holds"));
    CHECK_THROWS_WITH(gpu::dnn::find_non_finite_on_host(bytes_of(eight), 1,
                                                        static_cast<data_type>(3)),
                      ContainsSubstring("data_type value 3"));
}

TEST_CASE("scans answer in the core's report, which numerics_error carries", "[dnn]")
{
    STATIC_REQUIRE(std::is_same_v<decltype(gpu::dnn::find_non_finite(nullptr, 0, data_type::fp32, gpu::stream_ref{})),
                                  gpu::non_finite_report>);
    const std::vector<std::uint16_t> half{0x3C00, 0x3C00, 0x7E00}; // 1, 1, NaN
    const gpu::non_finite_report report =
        gpu::dnn::find_non_finite_on_host(bytes_of(half), half.size(), data_type::fp16);
    const gpu::numerics_error e("conv fp16", report, 0);
    CHECK_THAT(std::string(e.what()),
               StartsWith("conv fp16: non-finite output (1): 1 NaN and 0 Inf in 3 elements, the "
                          "first at index 2") &&
                   ContainsSubstring("gpu::dnn::find_non_finite"));
    CHECK(e.report().nan_count == 1);
}

TEST_CASE("device scans find NaN across chunk boundaries", "[dnn][gpu]")
{
    // 3 chunks of 4 MiB and a bit: the NaN sits in the second chunk.
    const std::size_t count = (std::size_t{3} << 20) + 17;
    std::vector<float> host(count, 1.0F);
    host[(std::size_t{1} << 20) + 5] = std::numeric_limits<float>::quiet_NaN();
    host[count - 1] = std::numeric_limits<float>::infinity();
    const auto device = gpu::device_buffer<float>::from_host(host);
    const auto report = gpu::dnn::find_non_finite(device.data(), count, data_type::fp32, device.stream());
    CHECK(report.elements == count);
    CHECK(report.nan_count == 1);
    CHECK(report.inf_count == 1);
    CHECK(*report.first_index == (std::size_t{1} << 20) + 5);
}
