// gpu/blas/convert.hpp: argument checks without a GPU; on a GPU, every conversion rounds as the
// host conversions of cuda_fp16.h and cuda_bf16.h do, at the edges of each format too.
#include <gpu/blas/convert.hpp>

#include "catch.hpp"

#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include "stream_gate.hpp"
#include "test_support.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace blas = gpu::blas;

namespace {
// Edge values: zero and negative zero, FP16's subnormals and largest finite value (65504), a
// value that overflows FP16 (65520), ties to even, BF16's coarse mantissa, Inf and NaN.
const std::vector<float> edges = {0.0F,
                                  -0.0F,
                                  1.0F,
                                  -1.5F,
                                  5.96e-8F,
                                  6.1e-5F,
                                  65504.0F,
                                  65519.0F,
                                  65520.0F,
                                  1e10F,
                                  1.0009765625F,
                                  1.00048828125F,
                                  3.14159265F,
                                  -1e-30F,
                                  3.0e38F,
                                  std::numeric_limits<float>::infinity(),
                                  -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN()};

template <class T>
bool same_bits(const T& a, const T& b)
{
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Whether blas::convert can be called with these arguments.
template <class... Args>
concept convert_callable = requires(Args... args)
{
    blas::convert(args...);
};

// A stream handle for buffers that stay empty: they make no CUDA call, so it is never used.
gpu::stream_ref fake_stream(std::uintptr_t value)
{
    return gpu::stream_ref(reinterpret_cast<cudaStream_t>(value));
}
} // namespace

TEST_CASE("raw pointers carry no stream, so converting them takes one explicitly", "[blas]")
{
    STATIC_REQUIRE_FALSE(convert_callable<const float*, __half*, std::size_t>);
    STATIC_REQUIRE(convert_callable<const float*, __half*, std::size_t, gpu::stream_ref>);
    STATIC_REQUIRE(convert_callable<const gpu::device_buffer<float>&, gpu::device_buffer<__half>&>);
}

TEST_CASE("converted makes its buffer on the source's stream unless given one", "[blas]")
{
    const gpu::stream_ref home = fake_stream(0x1000);
    const gpu::stream_ref other = fake_stream(0x2000);
    const gpu::device_buffer<float> source(0, home); // empty: no CUDA call, but it names its stream
    REQUIRE(source.stream() == home);
    CHECK(blas::converted<__half>(source).stream() == home);
    CHECK(blas::converted<__nv_bfloat16>(source, other).stream() == other);
}

TEST_CASE("convert rejects null pointers before any launch and ignores empty ranges", "[blas]")
{
    float* const nothing = nullptr;
    __half* const no_half = nullptr;
    CHECK_NOTHROW(blas::convert(nothing, no_half, 0, gpu::legacy_default_stream));
    CHECK_THROWS_WITH(
        blas::convert(nothing, reinterpret_cast<__half*>(std::uintptr_t{0x1000}), 5,
                      gpu::legacy_default_stream),
        ContainsSubstring("gpu::blas::convert: FP32 to FP16 of 5 elements with a null source"));
    CHECK_THROWS_WITH(blas::convert(reinterpret_cast<const double*>(std::uintptr_t{0x1000}),
                                    static_cast<__nv_bfloat16*>(nullptr), 3,
                                    gpu::legacy_default_stream),
                      ContainsSubstring("FP64 to BF16 of 3 elements with a null target"));
    gpu::device_buffer<float> empty_float;
    gpu::device_buffer<__half> empty_half;
    CHECK_NOTHROW(blas::convert(empty_float, empty_half));
}

TEST_CASE("FP32 to FP16 and BF16 rounds exactly as the host conversions", "[blas][gpu]")
{
    const auto source = gpu::device_buffer<float>::from_host(edges, gpu::legacy_default_stream);
    const auto half = blas::converted<__half>(source).to_host();
    const auto bf16 = blas::converted<__nv_bfloat16>(source).to_host();
    for (std::size_t i = 0; i < edges.size(); ++i) {
        INFO("value " << edges[i]);
        const __half expected_half = __float2half(edges[i]);
        const __nv_bfloat16 expected_bf16 = __float2bfloat16(edges[i]);
        if (std::isnan(edges[i])) {
            CHECK(std::isnan(static_cast<float>(half[i])));
            CHECK(std::isnan(static_cast<float>(bf16[i])));
        } else {
            CHECK(same_bits(half[i], expected_half));
            CHECK(same_bits(bf16[i], expected_bf16));
        }
    }
    CHECK(std::isinf(static_cast<float>(half[8]))); // 65520 overflows FP16
    CHECK(static_cast<float>(half[6]) == 65504.0F);
}

namespace {
template <class T, class ToFloat>
void check_widening(ToFloat to_float)
{
    std::vector<T> narrow;
    for (const float v : edges) {
        narrow.push_back(T(v));
    }
    const auto source = gpu::device_buffer<T>::from_host(narrow, gpu::legacy_default_stream);
    const auto wide = blas::converted<float>(source).to_host();
    const auto as_double = blas::converted<double>(source).to_host();
    for (std::size_t i = 0; i < narrow.size(); ++i) {
        const float expected = to_float(narrow[i]);
        INFO("value " << edges[i] << " -> " << expected);
        if (std::isnan(expected)) {
            CHECK(std::isnan(wide[i]));
            CHECK(std::isnan(as_double[i]));
        } else {
            CHECK(same_bits(wide[i], expected));
            CHECK(as_double[i] == static_cast<double>(expected));
        }
    }
}
} // namespace

TEST_CASE("FP16 and BF16 widen back to FP32 and FP64 exactly", "[blas][gpu]")
{
    check_widening<__half>([](__half h) { return __half2float(h); });
    check_widening<__nv_bfloat16>([](__nv_bfloat16 b) { return __bfloat162float(b); });
}

TEST_CASE("buffers of different sizes are rejected with both sizes", "[blas][gpu]")
{
    gpu::device_buffer<float> from(10, gpu::legacy_default_stream);
    gpu::device_buffer<__half> to(9, gpu::legacy_default_stream);
    CHECK_THROWS_WITH(blas::convert(from, to), ContainsSubstring("gpu::blas::convert") &&
                                                   ContainsSubstring("10") &&
                                                   ContainsSubstring("9"));
}

TEST_CASE("convert and converted queue on the buffers' stream, not the legacy default stream",
          "[blas][gpu][gate]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::stream reader(gpu::stream_flags::non_blocking);
    const std::vector<float> values = gpu::test::random_floats(std::size_t{1} << 16, 5);
    const auto source = gpu::device_buffer<float>::from_host(values, s);
    gpu::device_buffer<__half> target(values.size(), s);
    const std::vector<__half> poison(values.size(),
                                     __float2half(std::numeric_limits<float>::quiet_NaN()));
    target.copy_from_host(poison);
    gpu::device_buffer<__half> made;
    {
        gpu::test::stream_gate gate(s);
        blas::convert(source, target); // the output's stream: s, held by the gate
        made = blas::converted<__half>(source);
        CHECK(made.stream() == s.ref());
        // Work queued on the legacy default stream would be done after this; s's is not.
        gpu::legacy_default_stream.synchronize();
        CHECK_FALSE(s.is_ready());
        // Nothing on s can write target while the gate holds it, so reading it elsewhere is safe.
        std::vector<__half> early(values.size());
        target.copy_to_host_async(early, reader);
        reader.synchronize();
        CHECK(std::isnan(__half2float(early.front())));
        CHECK(std::isnan(__half2float(early.back())));
        gate.open();
        s.synchronize();
        CHECK_FALSE(gate.timed_out()); // the checks above ran while the gate held s
    }
    const std::vector<__half> converted = target.to_host();
    const std::vector<__half> made_host = made.to_host();
    for (std::size_t i = 0; i < values.size(); i += 997) {
        INFO("element " << i);
        CHECK(same_bits(converted[i], __float2half(values[i])));
        CHECK(same_bits(made_host[i], __float2half(values[i])));
    }
}
