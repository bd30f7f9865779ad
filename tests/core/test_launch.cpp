// gpu/launch.hpp and gpu/occupancy.hpp: configurations checked against a device's limits, the
// compile-time argument checks, the block-size search and the filling grid; on a GPU, launches
// of real kernels and the occupancy queries.
#include <gpu/device.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/launch.hpp>
#include <gpu/occupancy.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include "launch_kernels.hpp"

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

/// An H100-like device: what the host tests check configurations against.
gpu::launch_limits sample_limits()
{
    gpu::launch_limits limits;
    limits.device = 3;
    limits.max_threads_per_block = 1024;
    limits.max_block = {1024, 1024, 64};
    limits.max_grid = {2147483647u, 65535, 65535};
    limits.shared_bytes_per_block = 48 * 1024;
    limits.shared_bytes_per_block_optin = 227 * 1024;
    return limits;
}

gpu::occupancy_limits sample_occupancy()
{
    gpu::occupancy_limits limits;
    limits.max_threads_per_multiprocessor = 2048;
    limits.warp_size = 32;
    limits.max_threads_per_block = 1024;
    limits.kernel_max_threads_per_block = 1024;
    limits.multiprocessor_count = 132;
    return limits;
}

void kernel_of_two(float, std::size_t) {}

} // namespace

TEST_CASE("dims3 and launch_config read as CUDA's", "[launch]")
{
    constexpr gpu::dims3 unset{};
    STATIC_REQUIRE(unset.volume() == 1);
    STATIC_REQUIRE(gpu::dims3{4096, 4096, 64}.volume() == 4096ull * 4096 * 64);
    CHECK(gpu::dims3{2, 3, 4}.to_string() == "(2, 3, 4)");
    const gpu::launch_config config{.grid = {264}, .block = {256}, .dynamic_shared_bytes = 1024};
    CHECK(config.to_string() ==
          "grid (264, 1, 1) x block (256, 1, 1), 1024 B dynamic shared memory");
}

TEST_CASE("a configuration within the device's limits passes the check", "[launch]")
{
    const gpu::launch_limits limits = sample_limits();
    CHECK_NOTHROW(gpu::check({.grid = {1}, .block = {1}}, limits));
    CHECK_NOTHROW(gpu::check({.grid = {2147483647u, 65535, 65535}, .block = {1024}}, limits));
    CHECK_NOTHROW(gpu::check({.grid = {8}, .block = {16, 16, 4}}, limits));
    CHECK_NOTHROW(
        gpu::check({.grid = {1}, .block = {32}, .dynamic_shared_bytes = 227 * 1024}, limits));
}

TEST_CASE("a configuration beyond the device's limits names the value and the limit", "[launch]")
{
    const gpu::launch_limits limits = sample_limits();
    CHECK_THROWS_WITH(gpu::check({.grid = {1}, .block = {2048}}, limits),
                      ContainsSubstring("block.x is 2048 but device 3 allows at most 1024"));
    CHECK_THROWS_WITH(gpu::check({.grid = {1}, .block = {32, 32, 2}}, limits),
                      ContainsSubstring("(32, 32, 2) is 2048 threads but device 3 allows at "
                                        "most 1024 per block"));
    CHECK_THROWS_WITH(gpu::check({.grid = {1}, .block = {1, 1, 128}}, limits),
                      ContainsSubstring("block.z is 128 but device 3 allows at most 64"));
    CHECK_THROWS_WITH(gpu::check({.grid = {1, 65536}, .block = {32}}, limits),
                      ContainsSubstring("grid.y is 65536 but device 3 allows at most 65535") &&
                          ContainsSubstring("grid-stride loop"));
    CHECK_THROWS_WITH(gpu::check({.grid = {0}, .block = {32}}, limits),
                      ContainsSubstring("grid.x is 0"));
    CHECK_THROWS_WITH(gpu::check({.grid = {1}, .block = {32, 0}}, limits),
                      ContainsSubstring("block.y is 0"));
    CHECK_THROWS_WITH(
        gpu::check({.grid = {1}, .block = {32}, .dynamic_shared_bytes = 228 * 1024}, limits),
        ContainsSubstring("233472 B of dynamic shared memory") &&
            ContainsSubstring("at most 232448 B (opt-in included)"));
    CHECK_THROWS_AS(gpu::check({.grid = {1}, .block = {2048}}, limits), std::invalid_argument);
}

TEST_CASE("launch takes the kernel's arguments, converted, and refuses others at compile time",
          "[launch]")
{
    using kernel = decltype(&kernel_of_two);
    STATIC_REQUIRE(gpu::kernel_accepts<kernel, float, std::size_t>);
    STATIC_REQUIRE(gpu::kernel_accepts<kernel, double, int>); // converted, as <<<>>> does
    STATIC_REQUIRE(gpu::kernel_accepts<kernel, const float&, unsigned&>);
    STATIC_REQUIRE_FALSE(gpu::kernel_accepts<kernel, float>);           // one too few
    STATIC_REQUIRE_FALSE(gpu::kernel_accepts<kernel, float, int, int>); // one too many
    STATIC_REQUIRE_FALSE(gpu::kernel_accepts<kernel, float, float*>);   // no conversion
    STATIC_REQUIRE(gpu::kernel_accepts<void (*)()>);
    STATIC_REQUIRE_FALSE(gpu::kernel_accepts<void (*)(), int>);
    STATIC_REQUIRE_FALSE(gpu::kernel_accepts<int, int>); // not a kernel pointer
}

TEST_CASE("the block-size search keeps the most threads resident, as CUDA's does", "[occupancy]")
{
    gpu::occupancy_limits limits = sample_occupancy();
    // Threads alone limit residency: 1024 fills the multiprocessor (2 blocks) and ends the search.
    std::vector<int> tried;
    auto by_threads = [&](int size) {
        tried.push_back(size);
        return 2048 / size;
    };
    gpu::block_size_choice choice = gpu::detail::search_block_size(limits, 0, by_threads);
    CHECK(choice.block_size == 1024);
    CHECK(choice.blocks_per_multiprocessor == 2);
    CHECK(choice.min_grid_size == 2 * 132);
    CHECK(tried == std::vector<int>{1024});

    // Shared memory limits large blocks to one resident: 512 x 3 beats 1024 x 1.
    auto by_shared_memory = [](int size) { return size > 512 ? 1 : 3; };
    choice = gpu::detail::search_block_size(limits, 0, by_shared_memory);
    CHECK(choice.block_size == 512);
    CHECK(choice.min_grid_size == 3 * 132);

    // A tie keeps the larger block (it is found first and only a better one replaces it).
    auto tie = [](int size) { return size == 768 ? 2 : (size == 512 ? 3 : 0); };
    CHECK(gpu::detail::search_block_size(limits, 0, tie).block_size == 768);

    // The kernel's own limit (registers) and the caller's cap bound the search; an unaligned
    // cap is tried itself first, then whole warps below it.
    limits.kernel_max_threads_per_block = 256;
    tried.clear();
    CHECK(gpu::detail::search_block_size(limits, 0, [&](int size) {
              tried.push_back(size);
              return 1;
          }).block_size == 256);
    CHECK(tried.front() == 256);
    tried.clear();
    CHECK(gpu::detail::search_block_size(limits, 100, [&](int size) {
              tried.push_back(size);
              return 1;
          }).block_size == 100);
    CHECK(tried == std::vector<int>{100, 96, 64, 32});
}

TEST_CASE("the block-size search refuses bad limits and kernels that fit nowhere", "[occupancy]")
{
    gpu::occupancy_limits limits = sample_occupancy();
    CHECK_THROWS_WITH(gpu::detail::search_block_size(limits, 0, [](int) { return 0; }),
                      ContainsSubstring("no block size up to 1024 threads fits"));
    CHECK_THROWS_WITH(gpu::detail::search_block_size(limits, -1, [](int) { return 1; }),
                      ContainsSubstring("block_size_limit is -1"));
    limits.warp_size = 0;
    CHECK_THROWS_WITH(gpu::detail::search_block_size(limits, 0, [](int) { return 1; }),
                      ContainsSubstring("warp_size is 0"));
}

TEST_CASE("the filling grid covers the elements, capped at what runs at once", "[occupancy]")
{
    CHECK(gpu::detail::filling_grid(1000, 256, 264, 2147483647u) == 4);
    CHECK(gpu::detail::filling_grid(1024, 256, 264, 2147483647u) == 4);
    CHECK(gpu::detail::filling_grid(1, 256, 264, 2147483647u) == 1);
    CHECK(gpu::detail::filling_grid(std::size_t{1} << 30, 256, 264, 2147483647u) == 264);
    CHECK(gpu::detail::filling_grid(std::size_t{1} << 30, 256, 1 << 20, 65535) == 65535);
    CHECK_THROWS_WITH(gpu::detail::filling_grid(0, 256, 264, 65535),
                      ContainsSubstring("0 elements"));
    CHECK_THROWS_WITH(gpu::detail::filling_grid(10, 0, 264, 65535),
                      ContainsSubstring("block size 0"));
}

// --- on a GPU ---------------------------------------------------------------------------------

TEST_CASE("launch runs a kernel with its arguments converted to the parameter types",
          "[launch][gpu]")
{
    const gpu::stream s;
    const std::size_t n = 100'003;
    std::vector<float> x(n);
    std::vector<float> y(n);
    for (std::size_t i = 0; i < n; ++i) {
        x[i] = static_cast<float>(i % 97) * 0.5f;
        y[i] = static_cast<float>(i % 13) + 1.0f;
    }
    auto dx = gpu::device_buffer<float>::from_host(x, s);
    auto dy = gpu::device_buffer<float>::from_host(y, s);
    const gpu::device dev = gpu::device::current();
    const gpu::launch_config config = gpu::filling_config(dev, gpu::test::saxpy(), n);
    // A double for the float and an int for the size_t: converted before their addresses go
    // to cudaLaunchKernel.
    gpu::launch(s, config, gpu::test::saxpy(), 2.0, dx.data(), dy.data(), static_cast<int>(n));
    const std::vector<float> out = dy.to_host();
    for (std::size_t i = 0; i < n; ++i) {
        REQUIRE(out[i] == 2.0f * x[i] + y[i]);
    }

    gpu::device_buffer<std::uint64_t> widths(2, s);
    const std::int16_t narrow = -3;
    gpu::launch(s, {.grid = {1}, .block = {1}}, gpu::test::widths(), 7, narrow, widths.data());
    const std::vector<std::uint64_t> read = widths.to_host();
    CHECK(read[0] == 7u);
    CHECK(static_cast<std::int64_t>(read[1]) == -3);
}

TEST_CASE("launch passes the grid and block as configured, and launches without parameters",
          "[launch][gpu]")
{
    const gpu::stream s;
    gpu::device_buffer<unsigned> shape(6, s);
    shape.fill_zero_async(s);
    gpu::launch(s, {.grid = {3, 2, 1}, .block = {8, 4, 2}}, gpu::test::shape(), shape.data());
    CHECK(shape.to_host() == std::vector<unsigned>{3, 2, 1, 8, 4, 2});

    static_cast<void>(gpu::test::read_flag(true));
    gpu::launch(s, {.grid = {1}, .block = {1}}, gpu::test::raise_flag());
    s.synchronize();
    CHECK(gpu::test::read_flag(true) == 1);
}

TEST_CASE("launch refuses a configuration beyond the stream's device", "[launch][gpu]")
{
    const gpu::stream s;
    const gpu::launch_limits limits = gpu::launch_limits::of(gpu::device::current().id());
    CHECK(limits.max_threads_per_block >= 1024);
    CHECK(limits.shared_bytes_per_block_optin >= limits.shared_bytes_per_block);
    gpu::device_buffer<unsigned> shape(6, s);
    CHECK_THROWS_WITH(gpu::launch(s, {.grid = {1}, .block = {limits.max_threads_per_block * 2}},
                                  gpu::test::shape(), shape.data()),
                      ContainsSubstring("but device"));
    // Within the device's opt-in limit but beyond the kernel's default of 48 KiB: CUDA refuses
    // it, and the message names the kernel's own limit and the fix.
    CHECK_THROWS_WITH(gpu::launch(s,
                                  {.grid = {1},
                                   .block = {32},
                                   .dynamic_shared_bytes = limits.shared_bytes_per_block + 1024},
                                  gpu::test::shape(), shape.data()),
                      ContainsSubstring("gpu::allow_dynamic_shared_memory"));
}

TEST_CASE("occupancy queries answer for a real kernel", "[occupancy][gpu]")
{
    const gpu::device dev = gpu::device::current();
    const gpu::block_size_choice choice = gpu::best_block_size(dev, gpu::test::saxpy());
    CHECK(choice.block_size > 0);
    CHECK(choice.block_size <= 1024);
    CHECK(choice.block_size % 32 == 0);
    CHECK(choice.min_grid_size ==
          choice.blocks_per_multiprocessor * dev.properties().multiprocessor_count);
    CHECK(gpu::active_blocks_per_multiprocessor(dev, gpu::test::saxpy(), choice.block_size) ==
          choice.blocks_per_multiprocessor);
    const gpu::launch_config small = gpu::filling_config(dev, gpu::test::saxpy(), 1000);
    CHECK(small.block.x == static_cast<unsigned>(choice.block_size));
    CHECK(small.grid.x == (1000 + small.block.x - 1) / small.block.x);
    const gpu::launch_config large = gpu::filling_config(dev, gpu::test::saxpy(), 1u << 30);
    CHECK(large.grid.x == static_cast<unsigned>(choice.min_grid_size));
    CHECK(gpu::device::current() == dev);
}
