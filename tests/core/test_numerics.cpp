// gpu/numerics.hpp and gpu/element_type.hpp: the NaN/Inf check of every wrapper. On the host: the
// report's words, numerics_error's place in the error family, its message and hint, the host
// scan (by the same bit rules as the kernel) and every argument check; on a GPU, the kernel
// counts every format, reads strided data without its padding, and waits for its stream; the
// flag check keeps the code of the first output that held NaN or Inf, also in a CUDA graph.
#include <gpu/capture.hpp>
#include <gpu/element_type.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include "finite_check_gate.hpp"

#include <array>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
using gpu::element_type;

namespace {
template <class T>
std::span<const std::byte> bytes_of(const std::vector<T>& values)
{
    return std::as_bytes(std::span<const T>(values));
}
} // namespace

TEST_CASE("a non-finite report says what was found", "[numerics]")
{
    const gpu::non_finite_report clean{.elements = 100, .first_index = std::nullopt};
    CHECK(clean.all_finite());
    CHECK(clean.to_string() == "all 100 elements are finite");

    const gpu::non_finite_report bad{
        .elements = 1000000, .nan_count = 3, .inf_count = 1, .first_index = 42};
    CHECK_FALSE(bad.all_finite());
    CHECK(bad.to_string() == "3 NaN and 1 Inf in 1000000 elements, the first at index 42");

    const gpu::non_finite_report inf_only{
        .elements = 8, .inf_count = 2, .first_index = std::nullopt};
    CHECK_FALSE(inf_only.all_finite());
    CHECK(inf_only.to_string() == "0 NaN and 2 Inf in 8 elements"); // no index when none is known
}

TEST_CASE("numerics_error is a gpu::error in the house format, with a hint", "[numerics]")
{
    STATIC_REQUIRE(std::is_base_of_v<gpu::error, gpu::numerics_error>);
    STATIC_REQUIRE(std::is_nothrow_copy_constructible_v<gpu::numerics_error>);

    const gpu::non_finite_report report{
        .elements = 1024, .nan_count = 2, .inf_count = 1, .first_index = 17};
    const gpu::numerics_error e("gpu::blas::gemm (FP16 inputs, 32x32x32)", report, 3);
    const std::string what = e.what();
    CHECK_THAT(what, StartsWith("gpu::blas::gemm (FP16 inputs, 32x32x32): non-finite output (3): "
                                "2 NaN and 1 Inf in 1024 elements, the first at index 17\nhint: "));
    // The hint says where NaN and Inf come from and why the check ran.
    CHECK_THAT(what, ContainsSubstring("inputs") && ContainsSubstring("65504") &&
                         ContainsSubstring("BF16") && ContainsSubstring("uninitialised") &&
                         ContainsSubstring("check_numerics") &&
                         ContainsSubstring("synchronisation") &&
                         ContainsSubstring("gpu::check_finite"));
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

TEST_CASE("element types have names and sizes", "[numerics]")
{
    STATIC_REQUIRE(gpu::element_size(element_type::fp32) == 4);
    STATIC_REQUIRE(gpu::element_size(element_type::fp64) == 8);
    STATIC_REQUIRE(gpu::element_size(element_type::fp16) == 2);
    STATIC_REQUIRE(gpu::element_size(element_type::bf16) == 2);
    CHECK(gpu::to_string(element_type::fp32) == "FP32");
    CHECK(gpu::to_string(element_type::fp64) == "FP64");
    CHECK(gpu::to_string(element_type::fp16) == "FP16");
    CHECK(gpu::to_string(element_type::bf16) == "BF16");
    CHECK(gpu::to_string(static_cast<element_type>(9)) == "unknown");
    CHECK(gpu::element_size(static_cast<element_type>(9)) == 0);
}

TEST_CASE("FP32 scans count NaN and Inf and find the first", "[numerics]")
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    const std::vector<float> values{1.0F,  std::numeric_limits<float>::max(),
                                    -0.0F, std::numeric_limits<float>::denorm_min(),
                                    -inf,  nan,
                                    inf,   std::numeric_limits<float>::signaling_NaN()};
    const gpu::non_finite_report report =
        gpu::check_finite_on_host(bytes_of(values), values.size(), element_type::fp32);
    CHECK(report.elements == 8);
    CHECK(report.nan_count == 2);
    CHECK(report.inf_count == 2);
    REQUIRE(report.first_index.has_value());
    CHECK(*report.first_index == 4);
    CHECK_FALSE(report.all_finite());
    CHECK(report.to_string() == "2 NaN and 2 Inf in 8 elements, the first at index 4");

    const std::vector<float> finite{0.5F, -3.0F, 1e30F};
    const auto clean = gpu::check_finite_on_host(bytes_of(finite), 3, element_type::fp32);
    CHECK(clean.all_finite());
    CHECK_FALSE(clean.first_index.has_value());
}

TEST_CASE("FP16 and BF16 scans read the 16-bit patterns", "[numerics]")
{
    // FP16: 0x7C00 +Inf, 0xFC00 -Inf, 0x7E00 NaN, 0x7BFF max finite (65504), 0x0001 denormal.
    const std::vector<std::uint16_t> half{0x3C00, 0x7BFF, 0x0001, 0x7C00, 0xFC00, 0x7E00, 0x8000};
    const auto h = gpu::check_finite_on_host(bytes_of(half), half.size(), element_type::fp16);
    CHECK(h.inf_count == 2);
    CHECK(h.nan_count == 1);
    CHECK(*h.first_index == 3);
    // BF16: 0x7F80 +Inf, 0x7FC0 NaN, 0x7F7F max finite; 0x7C00 is a finite BF16 number.
    const std::vector<std::uint16_t> bf16{0x7C00, 0x7F7F, 0x3F80, 0x7FC0, 0xFF80};
    const auto b = gpu::check_finite_on_host(bytes_of(bf16), bf16.size(), element_type::bf16);
    CHECK(b.nan_count == 1);
    CHECK(b.inf_count == 1);
    CHECK(*b.first_index == 3);
}

TEST_CASE("FP64 scans read the 64-bit patterns, signalling NaN included", "[numerics]")
{
    const std::vector<double> values{1.0,
                                     std::numeric_limits<double>::max(),
                                     std::numeric_limits<double>::denorm_min(),
                                     std::numeric_limits<double>::signaling_NaN(),
                                     -std::numeric_limits<double>::infinity(),
                                     std::numeric_limits<double>::quiet_NaN()};
    const auto report =
        gpu::check_finite_on_host(bytes_of(values), values.size(), element_type::fp64);
    CHECK(report.nan_count == 2);
    CHECK(report.inf_count == 1);
    CHECK(report.first_index == std::optional<std::size_t>(3));
    // The same bytes read as FP32 are other numbers: the format decides.
    const auto as_fp32 =
        gpu::check_finite_on_host(bytes_of(values), 2 * values.size(), element_type::fp32);
    CHECK(as_fp32.elements == 12);
}

TEST_CASE("a scan refuses a span shorter than the elements it is asked for", "[numerics]")
{
    const std::vector<std::uint16_t> two{0, 0};
    CHECK_THROWS_WITH(
        gpu::check_finite_on_host(bytes_of(two), 2, element_type::fp32),
        ContainsSubstring(
            "gpu::check_finite_on_host: 2 FP32 elements need 8 bytes, the span has 4"));
    CHECK_THROWS_AS(gpu::check_finite(nullptr, 5, element_type::fp32, gpu::legacy_default_stream),
                    std::invalid_argument);
    CHECK_THROWS_WITH(
        gpu::check_finite(nullptr, 10, element_type::fp32, gpu::legacy_default_stream),
        ContainsSubstring("null data for 10 elements"));
    CHECK(gpu::check_finite(nullptr, 0, element_type::fp16, gpu::legacy_default_stream).elements ==
          0);
}

TEST_CASE("a scan's byte count cannot wrap around", "[numerics]")
{
    // count * 4 wraps to 8: a multiplication would let a 16-byte span pass and scan far beyond.
    const std::vector<std::uint16_t> eight(8, 0);
    const std::size_t wrapping = std::numeric_limits<std::size_t>::max() / 4 + 3;
    CHECK_THROWS_WITH(gpu::check_finite_on_host(bytes_of(eight), wrapping, element_type::fp32),
                      ContainsSubstring(std::to_string(wrapping) + " x 4 bytes, the span has 16"));
    // On the device the count is refused before any allocation, launch or synchronisation.
    const std::uint16_t somewhere = 0;
    CHECK_THROWS_WITH(
        gpu::check_finite(&somewhere, wrapping, element_type::fp32, gpu::legacy_default_stream),
        ContainsSubstring("more than the address space holds"));
    // Above 2^63 bytes the kernel's signed offsets would wrap: refused too.
    const std::size_t above_offsets = (std::size_t{1} << 62);
    CHECK_THROWS_WITH(gpu::check_finite(&somewhere, above_offsets, element_type::fp16,
                                        gpu::legacy_default_stream),
                      ContainsSubstring("more than the address space holds"));
    CHECK_THROWS_WITH(
        gpu::check_finite_on_host(bytes_of(eight), 1, static_cast<element_type>(7)),
        ContainsSubstring("element_type value 7 is none of FP32, FP64, FP16 and BF16"));
    CHECK_THROWS_WITH(
        gpu::check_finite(&somewhere, 1, static_cast<element_type>(7), gpu::legacy_default_stream),
        ContainsSubstring("gpu::check_finite: element_type value 7"));
}

TEST_CASE("the flag check refuses bad arguments before the GPU, each named", "[numerics]")
{
    const float somewhere = 0.0F;
    std::uint32_t flag_storage = 0;
    std::uint32_t* const flag = &flag_storage;
    const auto s = gpu::legacy_default_stream;
    CHECK_THROWS_WITH(gpu::flag_non_finite(&somewhere, 1, static_cast<element_type>(7), flag, 1, s),
                      ContainsSubstring("gpu::flag_non_finite: element_type value 7"));
    CHECK_THROWS_WITH(gpu::flag_non_finite(nullptr, 10, element_type::fp16, flag, 1, s),
                      ContainsSubstring("gpu::flag_non_finite: null data for 10 elements"));
    CHECK_THROWS_WITH(gpu::flag_non_finite(&somewhere, 10, element_type::fp32, nullptr, 1, s),
                      ContainsSubstring("gpu::flag_non_finite: the flag is null"));
    CHECK_THROWS_WITH(gpu::flag_non_finite(&somewhere, 10, element_type::fp32, flag, 0, s),
                      ContainsSubstring("code 0 is the flag's \"nothing found\""));
    CHECK_THROWS_WITH(
        gpu::flag_non_finite(&somewhere, std::size_t{1} << 62, element_type::fp16, flag, 1, s),
        ContainsSubstring("more than the address space holds"));
    // Nothing to check: nothing is launched (no GPU needed), the flag is not touched.
    CHECK_NOTHROW(gpu::flag_non_finite(nullptr, 0, element_type::fp32, flag, 3, s));
    CHECK(flag_storage == 0);
}

namespace {
// An address as the checks write it in their messages, e.g. 0x7ffd2c1e4a01.
std::string address_text(const void* p)
{
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx",
                  static_cast<unsigned long long>(reinterpret_cast<std::uintptr_t>(p)));
    return text;
}
} // namespace

// A kernel that reads an element at an address not a multiple of its size faults on the GPU
// (cudaErrorMisalignedAddress, which ends the CUDA context): refused on the host instead.
TEST_CASE("the checks refuse data not aligned to its element size, naming the address",
          "[numerics]")
{
    alignas(16) std::array<std::byte, 64> storage{};
    std::uint32_t flag_storage = 0;
    const auto s = gpu::legacy_default_stream;
    const std::byte* const odd = storage.data() + 1;
    CHECK_THROWS_AS(gpu::flag_non_finite(odd, 4, element_type::fp16, &flag_storage, 1, s),
                    std::invalid_argument);
    CHECK_THROWS_WITH(gpu::flag_non_finite(odd, 4, element_type::fp16, &flag_storage, 1, s),
                      ContainsSubstring("gpu::flag_non_finite: data at " + address_text(odd) +
                                        " is not aligned to its 2-byte FP16 elements"));
    CHECK_THROWS_WITH(
        gpu::flag_non_finite(storage.data() + 4, 4, element_type::fp64, &flag_storage, 1, s),
        ContainsSubstring("data at " + address_text(storage.data() + 4) +
                          " is not aligned to its 8-byte FP64 elements"));
    CHECK_THROWS_WITH(
        gpu::flag_non_finite(storage.data() + 2, 4, element_type::fp32, &flag_storage, 1, s),
        ContainsSubstring("not aligned to its 4-byte FP32 elements"));
    CHECK_THROWS_WITH(gpu::check_finite(odd, 4, element_type::bf16, s),
                      ContainsSubstring("gpu::check_finite: data at " + address_text(odd) +
                                        " is not aligned to its 2-byte BF16 elements"));
    CHECK(flag_storage == 0);
    // Nothing to check: nothing is read, so no address is wrong.
    CHECK_NOTHROW(gpu::flag_non_finite(odd, 0, element_type::fp32, &flag_storage, 1, s));
}

TEST_CASE("strided checks refuse bad extents and counts beyond 64 bits before the GPU",
          "[numerics]")
{
    using gpu::detail::strided_elements;
    const float somewhere = 0.0F;
    const auto check = [&](const strided_elements& where) {
        return gpu::detail::check_finite_strided(&somewhere, element_type::fp32, where,
                                                 gpu::legacy_default_stream);
    };
    CHECK_THROWS_WITH(
        check({.batch = 1, .batch_stride = 0, .runs = 3, .run_length = 4, .run_stride = 2}),
        ContainsSubstring("invalid extents") && ContainsSubstring("3 runs of 4 (stride 2)"));
    CHECK_THROWS_AS(
        check({.batch = -1, .batch_stride = 0, .runs = 1, .run_length = 1, .run_stride = 1}),
        std::invalid_argument);
    // 2^40 x 2^40 elements: a count that wrapped to 0 was once reported all finite.
    const std::int64_t big = std::int64_t{1} << 40;
    CHECK_THROWS_WITH(
        check({.batch = 1, .batch_stride = 0, .runs = big, .run_length = big, .run_stride = big}),
        ContainsSubstring("their element count is more than 64 bits can count"));
    // Few elements, spread further apart than any memory reaches.
    CHECK_THROWS_WITH(check({.batch = 3,
                             .batch_stride = std::int64_t{1} << 62,
                             .runs = 1,
                             .run_length = 1,
                             .run_stride = 1}),
                      ContainsSubstring("span more memory than exists"));
    CHECK_THROWS_WITH(
        gpu::detail::check_finite_strided(
            nullptr, element_type::fp32,
            {.batch = 2, .batch_stride = 8, .runs = 2, .run_length = 3, .run_stride = 4},
            gpu::legacy_default_stream),
        ContainsSubstring("null data for 12 elements"));
    const auto empty =
        check({.batch = 4, .batch_stride = 9, .runs = 0, .run_length = 3, .run_stride = 3});
    CHECK(empty.elements == 0);
    CHECK(empty.all_finite());
}

namespace {
// The host scan and the kernel agree element by element on the same bytes.
template <class T>
void check_like_the_host(element_type type, const std::vector<T>& host)
{
    const auto buffer = gpu::device_buffer<T>::from_host(host, gpu::legacy_default_stream);
    const gpu::non_finite_report device =
        gpu::check_finite(buffer.data(), buffer.size(), type, buffer.stream());
    const gpu::non_finite_report reference =
        gpu::check_finite_on_host(bytes_of(host), host.size(), type);
    CHECK(device.elements == reference.elements);
    CHECK(device.nan_count == reference.nan_count);
    CHECK(device.inf_count == reference.inf_count);
    CHECK(device.first_index == reference.first_index);
    CHECK_FALSE(device.all_finite());
}
} // namespace

TEST_CASE("the kernel counts every format as the host scan does", "[numerics][gpu]")
{
    std::vector<float> f(10000, 1.0F);
    f[17] = std::numeric_limits<float>::quiet_NaN();
    f[4000] = std::numeric_limits<float>::infinity();
    f[9999] = std::numeric_limits<float>::signaling_NaN();
    check_like_the_host(element_type::fp32, f);
    std::vector<double> d(5000, -2.0);
    d[4999] = -std::numeric_limits<double>::infinity();
    d[123] = std::numeric_limits<double>::quiet_NaN();
    check_like_the_host(element_type::fp64, d);
    // 16-bit patterns: 0x3C00 is 1.0 in FP16; 0x7C00 is FP16 Inf but a finite BF16 number.
    std::vector<std::uint16_t> h(3000, 0x3C00);
    h[5] = 0x7E00;
    h[6] = 0x7C00;
    h[2999] = 0xFC00;
    check_like_the_host(element_type::fp16, h);
    std::vector<std::uint16_t> b(3000, 0x7C00);
    b[1000] = 0x7FC0;
    b[2000] = 0xFF80;
    check_like_the_host(element_type::bf16, b);
}

TEST_CASE("large checks find NaN and Inf anywhere in many blocks of the grid", "[numerics][gpu]")
{
    // More elements than one pass of the grid (4096 blocks of 256 threads) covers.
    const std::size_t count = (std::size_t{3} << 20) + 17;
    std::vector<float> host(count, 1.0F);
    host[(std::size_t{1} << 20) + 5] = std::numeric_limits<float>::quiet_NaN();
    host[count - 1] = std::numeric_limits<float>::infinity();
    const auto device = gpu::device_buffer<float>::from_host(host, gpu::legacy_default_stream);
    const auto report =
        gpu::check_finite(device.data(), count, element_type::fp32, device.stream());
    CHECK(report.elements == count);
    CHECK(report.nan_count == 1);
    CHECK(report.inf_count == 1);
    CHECK(*report.first_index == (std::size_t{1} << 20) + 5);
}

TEST_CASE("strided checks read blocks and runs, never the padding between them", "[numerics][gpu]")
{
    // 2 blocks 20 elements apart, each 3 runs of 4 elements 6 apart; everything else is NaN.
    std::vector<float> host(40, std::numeric_limits<float>::quiet_NaN());
    for (int block = 0; block < 2; ++block) {
        for (int run = 0; run < 3; ++run) {
            for (int i = 0; i < 4; ++i) {
                host[static_cast<std::size_t>(block * 20 + run * 6 + i)] = 1.0F;
            }
        }
    }
    auto buffer = gpu::device_buffer<float>::from_host(host, gpu::legacy_default_stream);
    const gpu::detail::strided_elements where{
        .batch = 2, .batch_stride = 20, .runs = 3, .run_length = 4, .run_stride = 6};
    const auto clean = gpu::detail::check_finite_strided(buffer.data(), element_type::fp32, where,
                                                         buffer.stream());
    CHECK(clean.elements == 24u);
    CHECK(clean.all_finite());
    host[20 + 13] = -std::numeric_limits<float>::infinity();    // block 1, run 2, element 1
    host[20 + 6 + 3] = std::numeric_limits<float>::quiet_NaN(); // block 1, run 1, element 3
    buffer.copy_from_host(host);
    const auto found = gpu::detail::check_finite_strided(buffer.data(), element_type::fp32, where,
                                                         buffer.stream());
    CHECK(found.nan_count == 1u);
    CHECK(found.inf_count == 1u);
    CHECK(found.first_index == std::optional<std::size_t>(29)); // storage offset, padding counted
}

TEST_CASE("a device check waits for the work queued on its stream", "[numerics][gpu][gate]")
{
    gpu::test::check_waits_for_its_stream(
        [](const gpu::device_buffer<float>& buffer, gpu::stream_ref stream) {
            return gpu::check_finite(buffer.data(), buffer.size(), element_type::fp32, stream);
        });
}

namespace {
std::uint32_t flag_value(const gpu::device_buffer<std::uint32_t>& flag)
{
    return flag.to_host().at(0);
}
} // namespace

TEST_CASE("the flag keeps the code of the first check that found NaN or Inf", "[numerics][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    // Large enough for many blocks; the non-finite elements sit in the last block.
    const std::size_t n = (std::size_t{1} << 20) + 3;
    std::vector<float> clean(n, 1.0F);
    std::vector<float> with_inf = clean;
    with_inf[n - 1] = -std::numeric_limits<float>::infinity();
    std::vector<std::uint16_t> half(n, 0x3C00); // 1.0 in FP16, and 0x3C00 is finite in BF16 too
    half[n - 2] = 0x7E00;                       // an FP16 NaN
    std::vector<double> wide(1000, 2.0);
    wide[999] = std::numeric_limits<double>::signaling_NaN();
    const auto a = gpu::device_buffer<float>::from_host(clean, s);
    const auto b = gpu::device_buffer<std::uint16_t>::from_host(half, s);
    const auto c = gpu::device_buffer<float>::from_host(with_inf, s);
    const auto d = gpu::device_buffer<double>::from_host(wide, s);
    gpu::device_buffer<std::uint32_t> flag(1, s);
    flag.fill_zero_async(s);
    gpu::flag_non_finite(a.data(), n, element_type::fp32, flag.data(), 1, s);
    CHECK(flag_value(flag) == 0); // finite: left at 0
    gpu::flag_non_finite(b.data(), n, element_type::bf16, flag.data(), 2, s);
    CHECK(flag_value(flag) == 0); // the same bits are finite BF16 numbers
    gpu::flag_non_finite(b.data(), n, element_type::fp16, flag.data(), 3, s);
    gpu::flag_non_finite(c.data(), n, element_type::fp32, flag.data(), 4, s);
    CHECK(flag_value(flag) == 3); // the first that found one, not the last
    flag.fill_zero_async(s);
    gpu::flag_non_finite(c.data(), n - 1, element_type::fp32, flag.data(), 5,
                         s); // the Inf is beyond n - 1
    gpu::flag_non_finite(d.data(), wide.size(), element_type::fp64, flag.data(), 6, s);
    gpu::flag_non_finite(c.data(), n, element_type::fp32, flag.data(), 7, s);
    CHECK(flag_value(flag) == 6);
}

TEST_CASE("flag checks are captured in a CUDA graph and flag at the replay", "[numerics][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    std::vector<float> host(4096, 0.5F);
    auto x = gpu::device_buffer<float>::from_host(host, s);
    gpu::device_buffer<std::uint32_t> flag(1, s);
    flag.fill_zero_async(s);
    const gpu::graph g = gpu::capture(s, [&](gpu::stream_ref captured) {
        gpu::flag_non_finite(x.data(), x.size(), element_type::fp32, flag.data(), 9, captured);
    });
    gpu::graph_exec exec(g);
    exec.launch(s);
    CHECK(flag_value(flag) == 0);
    host[100] = std::numeric_limits<float>::quiet_NaN();
    x.copy_from_host(host); // the replay reads the buffer's new contents
    exec.launch(s);
    CHECK(flag_value(flag) == 9);
}
