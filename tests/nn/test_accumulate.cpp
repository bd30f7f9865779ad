// gpu/nn/accumulate.hpp: argument checks without a GPU; on a GPU, FP32/FP16/BF16 gradients added
// into FP32 and column sums, against float64 references, and the additions a device flag skips.
#include <gpu/nn/accumulate.hpp>

#include "catch.hpp"
#include <element_cast.hpp>
#include <test_support.hpp>

#include <gpu/capture.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;
using gpu::element_type;

TEST_CASE("accumulation checks its arguments before launching anything", "[nn]")
{
    float* const to = reinterpret_cast<float*>(std::uintptr_t{0x1000});
    const void* const from = reinterpret_cast<const void*>(std::uintptr_t{0x2000});
    const auto stream = gpu::legacy_default_stream;
    CHECK_THROWS_WITH(
        nn::accumulate(from, element_type::fp64, to, 4, stream),
        ContainsSubstring("gpu::nn::accumulate: gradients of type FP64 (1) are not accumulated"));
    CHECK_THROWS_WITH(nn::accumulate(nullptr, element_type::fp16, to, 4, stream),
                      ContainsSubstring("4 elements with a null source"));
    CHECK_THROWS_WITH(nn::accumulate(from, element_type::fp16, nullptr, 4, stream),
                      ContainsSubstring("4 elements with a null target"));
    CHECK_NOTHROW(
        nn::accumulate(nullptr, element_type::fp16, nullptr, 0, stream)); // nothing to add
    CHECK_THROWS_WITH(
        nn::accumulate_column_sums(from, static_cast<element_type>(8), 2, 3, to, stream),
        ContainsSubstring("gpu::nn::accumulate_column_sums: gradients of type unknown (8)"));
    CHECK_THROWS_WITH(nn::accumulate_column_sums(nullptr, element_type::fp32, 2, 3, to, stream),
                      ContainsSubstring("6 elements with a null source"));
    CHECK_THROWS_WITH(nn::accumulate_column_sums(from, element_type::fp32, std::size_t{1} << 40,
                                                 std::size_t{1} << 40, to, stream),
                      ContainsSubstring("overflow"));
    CHECK_NOTHROW(nn::accumulate_column_sums(nullptr, element_type::bf16, 0, 3, nullptr, stream));
    const float* const skip = reinterpret_cast<const float*>(std::uintptr_t{0x3000});
    CHECK_THROWS_WITH(nn::accumulate_unless(nullptr, from, element_type::fp32, to, 1, stream),
                      ContainsSubstring("gpu::nn::accumulate_unless: the skip flag is null"));
    CHECK_THROWS_WITH(nn::accumulate_unless(skip, from, element_type::fp64, to, 1, stream),
                      ContainsSubstring("gpu::nn::accumulate_unless: gradients of type FP64 (1)"));
    CHECK_THROWS_WITH(nn::accumulate_unless(skip, from, element_type::fp32, nullptr, 2, stream),
                      ContainsSubstring("2 elements with a null target"));
    CHECK_NOTHROW(nn::accumulate_unless(skip, nullptr, element_type::fp32, nullptr, 0, stream));
}

namespace {

template <class T>
constexpr element_type type_of = std::is_same_v<T, __half>          ? element_type::fp16
                                 : std::is_same_v<T, __nv_bfloat16> ? element_type::bf16
                                                                    : element_type::fp32;

template <class T>
void check_accumulation(std::size_t rows, std::size_t cols)
{
    const gpu::stream stream;
    const auto [gradient, values] = gpu::test::rounded_random<T>(rows * cols, 11);
    const std::vector<float> start = gpu::test::random_floats(rows * cols, 12);
    auto from = gpu::device_buffer<T>::from_host(gradient, stream);
    auto to = gpu::device_buffer<float>::from_host(start, stream);
    nn::accumulate(from.data(), type_of<T>, to.data(), rows * cols, stream);
    std::vector<double> expected(rows * cols);
    for (std::size_t i = 0; i < expected.size(); ++i) {
        expected[i] = start[i] + values[i];
    }
    CHECK(gpu::test::relative_error<float>(to.to_host(), expected) < 1e-6);

    const std::vector<float> bias_start = gpu::test::random_floats(cols, 13);
    auto bias = gpu::device_buffer<float>::from_host(bias_start, stream);
    nn::accumulate_column_sums(from.data(), type_of<T>, rows, cols, bias.data(), stream);
    std::vector<double> sums(bias_start.begin(), bias_start.end());
    for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t j = 0; j < cols; ++j) {
            sums[j] += values[i * cols + j];
        }
    }
    CHECK(gpu::test::relative_error<float>(bias.to_host(), sums) < 1e-5);
}

} // namespace

TEST_CASE("FP32, FP16 and BF16 gradients are added into FP32, element by element and by column",
          "[nn][gpu]")
{
    for (const auto& [rows, cols] :
         {std::pair<std::size_t, std::size_t>{1, 1}, {37, 45}, {1000, 3}, {3, 1000}}) {
        INFO(rows << " x " << cols);
        check_accumulation<float>(rows, cols);
        check_accumulation<__half>(rows, cols);
        check_accumulation<__nv_bfloat16>(rows, cols);
    }
}

TEST_CASE("column sums are the same from run to run", "[nn][gpu]")
{
    const gpu::stream stream;
    const std::vector<float> dy = gpu::test::random_floats(4096 * 33, 14);
    auto from = gpu::device_buffer<float>::from_host(dy, stream);
    auto first = gpu::device_buffer<float>::from_host(std::vector<float>(33, 0.0F), stream);
    auto second = gpu::device_buffer<float>::from_host(std::vector<float>(33, 0.0F), stream);
    nn::accumulate_column_sums(from.data(), element_type::fp32, 4096, 33, first.data(), stream);
    nn::accumulate_column_sums(from.data(), element_type::fp32, 4096, 33, second.data(), stream);
    CHECK(first.to_host() == second.to_host());
}

TEST_CASE("accumulate_unless adds only while the device flag is 0, read at each replay",
          "[nn][gpu]")
{
    gpu::stream stream(gpu::stream_flags::non_blocking);
    const std::vector<float> values{1.5F, -2.0F, 4.0F};
    auto from = gpu::device_buffer<float>::from_host(values, stream);
    auto to = gpu::device_buffer<float>::from_host(std::vector<float>(3, 10.0F), stream);
    auto flag = gpu::device_buffer<float>::from_host(std::vector<float>{0.0F}, stream);
    nn::accumulate_unless(flag.data(), from.data(), element_type::fp32, to.data(), 3, stream);
    CHECK(to.to_host() == std::vector<float>{11.5F, 8.0F, 14.0F});
    flag.copy_from_host(std::vector<float>{1.0F}); // as the scaler sets it for a skipped step
    nn::accumulate_unless(flag.data(), from.data(), element_type::fp32, to.data(), 3, stream);
    CHECK(to.to_host() == std::vector<float>{11.5F, 8.0F, 14.0F});
    // Captured once, the flag decides at every replay.
    const gpu::graph g = gpu::capture(stream, [&](gpu::stream_ref s) {
        nn::accumulate_unless(flag.data(), from.data(), element_type::fp32, to.data(), 3, s);
    });
    gpu::graph_exec exec(g);
    exec.launch(stream);
    CHECK(to.to_host() == std::vector<float>{11.5F, 8.0F, 14.0F});
    flag.copy_from_host(std::vector<float>{0.0F});
    exec.launch(stream);
    CHECK(to.to_host() == std::vector<float>{13.0F, 6.0F, 18.0F});
}
