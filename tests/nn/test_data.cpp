// gpu/nn/data.hpp. On the host: the shuffle is a permutation of [0, count) for every count
// tried, the same for the same (seed, epoch) and different for another epoch or seed, and every
// argument check. On a GPU: the device's order equals the host reference, and a gathered batch
// equals a host normalisation of the same items in FP32, FP16 and BF16, the batch number
// advancing at each call and wrapping the last batch to the start.
#include <gpu/nn/data.hpp>

#include "catch.hpp"

#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;

namespace {

std::vector<std::uint32_t> host_order(std::uint64_t count, std::uint64_t seed, std::uint64_t epoch)
{
    std::vector<std::uint32_t> order;
    for (std::uint64_t i = 0; i < count; ++i) {
        order.push_back(nn::shuffled_index(i, count, seed, epoch));
    }
    return order;
}

} // namespace

TEST_CASE("the shuffle is a permutation, fixed by the seed and the epoch", "[nn][data]")
{
    for (const std::uint64_t count : {1ULL, 2ULL, 3ULL, 5ULL, 17ULL, 64ULL, 1000ULL, 60000ULL}) {
        std::vector<std::uint32_t> order = host_order(count, 42, 1);
        std::vector<std::uint32_t> sorted = order;
        std::sort(sorted.begin(), sorted.end());
        std::vector<std::uint32_t> identity(count);
        std::iota(identity.begin(), identity.end(), 0U);
        CHECK(sorted == identity);
        CHECK(host_order(count, 42, 1) == order);
        if (count >= 17) {
            CHECK(host_order(count, 42, 2) != order);
            CHECK(host_order(count, 43, 1) != order);
            CHECK(order != identity);
        }
    }
}

TEST_CASE("the data functions check their arguments", "[nn][data]")
{
    const gpu::stream_ref fake(
        reinterpret_cast<cudaStream_t>(std::uintptr_t{0x1000})); // never used
    CHECK_THROWS_WITH(nn::shuffled_index(0, 0, 1, 1),
                      ContainsSubstring("count 0 is not in [1, 4294967295]"));
    CHECK_THROWS_WITH(nn::shuffled_index(5, 5, 1, 1),
                      ContainsSubstring("position 5 is not below the count 5"));
    CHECK_THROWS_WITH(nn::shuffle_order(nullptr, 10, 1, 1, fake),
                      ContainsSubstring("order is null"));
    CHECK_THROWS_WITH(nn::shuffle_order(nullptr, 1ULL << 33, 1, 1, fake),
                      ContainsSubstring("count 8589934592"));

    std::uint8_t byte = 0;
    std::uint32_t number = 0;
    std::int32_t label = 0;
    float out = 0.0F;
    const nn::batch_source source{&byte, &byte, nullptr, 1, 1};
    CHECK_THROWS_WITH(
        nn::gather_batch(source, 0, {}, gpu::element_type::fp32, &out, &label, &number, fake),
        ContainsSubstring("batch 0 is not in [1, 2147483647]"));
    CHECK_THROWS_WITH(
        nn::gather_batch(source, 1, {}, gpu::element_type::fp64, &out, &label, &number, fake),
        ContainsSubstring("a batch of FP64; FP32, FP16 or BF16 are taken"));
    CHECK_THROWS_WITH(nn::gather_batch(source, 1, {0.0F, 0.0F}, gpu::element_type::fp32, &out,
                                       &label, &number, fake),
                      ContainsSubstring("std 0"));
    CHECK_THROWS_WITH(
        nn::gather_batch(source, 1, {}, gpu::element_type::fp32, &out, &label, nullptr, fake),
        ContainsSubstring("null pointers: batch_number"));
    CHECK_THROWS_WITH(nn::gather_batch({&byte, &byte, nullptr, 1, 0}, 1, {},
                                       gpu::element_type::fp32, &out, &label, &number, fake),
                      ContainsSubstring("item_elements 0"));
    CHECK_THROWS_WITH(nn::gather_batch({&byte, &byte, nullptr, 0, 1}, 1, {},
                                       gpu::element_type::fp32, &out, &label, &number, fake),
                      ContainsSubstring("count 0"));
}

// ---- [gpu] ------------------------------------------------------------------------------------

TEST_CASE("the device's shuffle equals the host's", "[nn][data][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    for (const std::uint64_t count : {1ULL, 7ULL, 2000ULL, 60000ULL}) {
        gpu::device_buffer<std::uint32_t> order(count, s);
        nn::shuffle_order(order.data(), count, 42, 3, s);
        CHECK(order.to_host() == host_order(count, 42, 3));
    }
}

namespace {

float read_value(const std::vector<std::byte>& bytes, std::size_t i, gpu::element_type type)
{
    if (type == gpu::element_type::fp16) {
        __half h;
        std::memcpy(&h, bytes.data() + 2 * i, 2);
        return __half2float(h);
    }
    if (type == gpu::element_type::bf16) {
        __nv_bfloat16 b;
        std::memcpy(&b, bytes.data() + 2 * i, 2);
        return __bfloat162float(b);
    }
    float f;
    std::memcpy(&f, bytes.data() + 4 * i, 4);
    return f;
}

} // namespace

TEST_CASE("a gathered batch is the shuffled items normalised, and the batch number advances",
          "[nn][data][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    constexpr std::uint64_t count = 10;
    constexpr std::uint64_t elements = 6;
    constexpr std::int64_t batch = 4;
    std::vector<std::uint8_t> pixels(count * elements);
    std::vector<std::uint8_t> labels(count);
    for (std::size_t i = 0; i < pixels.size(); ++i) {
        pixels[i] = static_cast<std::uint8_t>((i * 37) % 256);
    }
    for (std::size_t i = 0; i < count; ++i) {
        labels[i] = static_cast<std::uint8_t>(i % 10);
    }
    auto device_pixels = gpu::device_buffer<std::uint8_t>::from_host(pixels, s);
    auto device_labels = gpu::device_buffer<std::uint8_t>::from_host(labels, s);
    gpu::device_buffer<std::uint32_t> order(count, s);
    nn::shuffle_order(order.data(), count, 7, 1, s);
    const std::vector<std::uint32_t> expected_order = host_order(count, 7, 1);
    const nn::normalization norm{0.2860F, 0.3530F};
    for (const gpu::element_type type :
         {gpu::element_type::fp32, gpu::element_type::fp16, gpu::element_type::bf16}) {
        CAPTURE(gpu::to_string(type));
        gpu::device_buffer<std::byte> out(
            static_cast<std::size_t>(batch) * elements * gpu::element_size(type), s);
        gpu::device_buffer<std::int32_t> out_labels(static_cast<std::size_t>(batch), s);
        gpu::device_buffer<std::uint32_t> number(1, s);
        number.fill_zero_async(s);
        for (std::uint32_t call = 0; call < 3; ++call) { // the third batch wraps: items 8, 9, 0, 1
            nn::gather_batch(
                {device_pixels.data(), device_labels.data(), order.data(), count, elements}, batch,
                norm, type, out.data(), out_labels.data(), number.data(), s);
            const std::vector<std::byte> values = out.to_host();
            const std::vector<std::int32_t> got_labels = out_labels.to_host();
            for (std::int64_t r = 0; r < batch; ++r) {
                const std::uint32_t item =
                    expected_order[(call * batch + static_cast<std::uint64_t>(r)) % count];
                CHECK(got_labels[static_cast<std::size_t>(r)] == labels[item]);
                for (std::uint64_t e = 0; e < elements; ++e) {
                    const float want =
                        (static_cast<float>(pixels[item * elements + e]) / 255.0F - norm.mean) /
                        norm.std;
                    const float tolerance = type == gpu::element_type::fp32   ? 1e-5F
                                            : type == gpu::element_type::fp16 ? 2e-3F
                                                                              : 2e-2F;
                    CHECK(std::abs(
                              read_value(values, static_cast<std::size_t>(r) * elements + e, type) -
                              want) <= tolerance * std::max(1.0F, std::abs(want)));
                }
            }
            CHECK(number.to_host() == std::vector<std::uint32_t>{call + 1});
        }
    }
}
