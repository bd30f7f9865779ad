// gpu/device.hpp: availability, compute capabilities, kernel-image prediction, properties.
#include <gpu/device.hpp>
#include <gpu/error.hpp>

#include "catch.hpp"

#include <limits>
#include <stdexcept>
#include <string>

using Catch::Matchers::ContainsSubstring;
using gpu::compute_capability;
using gpu::kernel_image;

TEST_CASE("availability, device count and the reason agree", "[device]")
{
    if (gpu::is_available()) {
        CHECK(gpu::device_count() > 0);
        CHECK(gpu::unavailable_reason().empty());
        CHECK(gpu::devices().size() == static_cast<std::size_t>(gpu::device_count()));
    } else {
        CHECK(gpu::device_count() == 0);
        CHECK(gpu::devices().empty());
        const std::string reason = gpu::unavailable_reason();
        CHECK_THAT(reason, ContainsSubstring("cudaGetDeviceCount failed with"));
        CHECK_THAT(reason, ContainsSubstring("driver"));
    }
}

TEST_CASE("without a driver the reason names the missing driver and the branch to install",
          "[device]")
{
    if (gpu::is_available() || gpu::driver_version().installed()) {
        SUCCEED(
            "a driver is installed here; the no-driver message is covered on driverless machines");
        return;
    }
    const std::string reason = gpu::unavailable_reason();
    CHECK_THAT(reason, ContainsSubstring("cudaErrorInsufficientDriver (35)"));
    CHECK_THAT(reason, ContainsSubstring("no NVIDIA driver is loaded"));
    CHECK_THAT(reason, ContainsSubstring("branch 580 or newer"));
}

TEST_CASE("naming a device without CUDA throws the CUDA error with its hint", "[device]")
{
    if (gpu::is_available()) {
        const int count = gpu::device_count();
        CHECK_THROWS_WITH(gpu::device(-1), ContainsSubstring("ordinal -1 is out of range"));
        CHECK_THROWS_WITH(gpu::device(count),
                          ContainsSubstring(std::to_string(count) + " device(s) visible"));
        CHECK_THROWS_AS(gpu::device(count), std::invalid_argument);
    } else {
        CHECK_THROWS_AS(gpu::device(0), gpu::cuda_error);
        CHECK_THROWS_AS(gpu::device::current(), gpu::cuda_error);
        CHECK_THROWS_AS(gpu::current_device(), gpu::cuda_error);
    }
}

TEST_CASE("compute capabilities order by major then minor", "[device]")
{
    STATIC_REQUIRE(compute_capability{7, 5} < compute_capability{8, 0});
    STATIC_REQUIRE(compute_capability{8, 6} < compute_capability{8, 9});
    STATIC_REQUIRE(compute_capability{8, 9} < compute_capability{9, 0});
    STATIC_REQUIRE(compute_capability{9, 0} == compute_capability{9, 0});
    STATIC_REQUIRE(compute_capability{12, 0} > compute_capability{10, 0});
}

TEST_CASE("compute capabilities convert to and from CMake's integers", "[device]")
{
    STATIC_REQUIRE(compute_capability::from_int(86) == compute_capability{8, 6});
    STATIC_REQUIRE(compute_capability::from_int(120) == compute_capability{12, 0});
    STATIC_REQUIRE(compute_capability{9, 0}.as_int() == 90);
    CHECK(compute_capability{8, 9}.to_string() == "8.9");
}

TEST_CASE("a capability without an integer form is refused, not overflowed", "[device]")
{
    // nvidia-smi's answer or a user's numbers can be anything; as_int() overflowed for them.
    constexpr int max = std::numeric_limits<int>::max();
    STATIC_REQUIRE(compute_capability{max / 10, max % 10}.as_int() == max);
    STATIC_REQUIRE(compute_capability{9, 0}.has_int_form());
    STATIC_REQUIRE_FALSE(compute_capability{max / 10, max % 10 + 1}.has_int_form());
    STATIC_REQUIRE_FALSE(compute_capability{8, 10}.has_int_form()); // would read as 9.0
    STATIC_REQUIRE_FALSE(compute_capability{-1, 0}.has_int_form());
    STATIC_REQUIRE_FALSE(compute_capability{9, -1}.has_int_form());
    CHECK_THROWS_WITH(compute_capability({max, 9}).as_int(),
                      ContainsSubstring("compute_capability::as_int") &&
                          ContainsSubstring(std::to_string(max)) &&
                          ContainsSubstring("no integer form"));
    CHECK_THROWS_AS(compute_capability({8, 10}).as_int(), std::invalid_argument);
    CHECK_THROWS_AS(compute_capability({std::numeric_limits<int>::min(), 0}).as_int(),
                    std::invalid_argument);
    CHECK_THROWS_WITH(compute_capability::from_int(-86),
                      ContainsSubstring("negative compute capability -86"));
    STATIC_REQUIRE(compute_capability::from_int(max) == compute_capability{max / 10, max % 10});
    // The derived features compare capabilities, so they hold for any values.
    STATIC_REQUIRE(compute_capability{max, 9}.has_fp8());
    STATIC_REQUIRE_FALSE(compute_capability{-5, 0}.has_tensor_cores());
}

TEST_CASE("derived capabilities follow the architecture generations", "[device]")
{
    const compute_capability pascal{6, 1};
    const compute_capability volta{7, 0};
    const compute_capability turing{7, 5};
    const compute_capability ampere{8, 0};
    const compute_capability ada{8, 9};
    const compute_capability hopper{9, 0};
    CHECK_FALSE(pascal.has_tensor_cores());
    CHECK(volta.has_tensor_cores());
    CHECK_FALSE(volta.has_tf32());
    CHECK(turing.has_tensor_cores());
    CHECK_FALSE(turing.has_bf16());
    CHECK(ampere.has_tf32());
    CHECK(ampere.has_bf16());
    CHECK_FALSE(ampere.has_fp8());
    CHECK(ada.has_fp8());
    CHECK(hopper.has_fp8());
    CHECK(hopper.has_tf32());
}

TEST_CASE("architecture names", "[device]")
{
    CHECK(compute_capability{7, 0}.architecture_name() == "Volta");
    CHECK(compute_capability{7, 5}.architecture_name() == "Turing");
    CHECK(compute_capability{8, 6}.architecture_name() == "Ampere");
    CHECK(compute_capability{8, 9}.architecture_name() == "Ada");
    CHECK(compute_capability{9, 0}.architecture_name() == "Hopper");
    CHECK(compute_capability{10, 0}.architecture_name() == "Blackwell");
    CHECK(compute_capability{1, 0}.architecture_name() == "unknown");
}

TEST_CASE("kernel images: machine code runs on the same major with an equal or newer minor",
          "[device]")
{
    const auto built = gpu::parse_cuda_architectures("75-real;80-real");
    CHECK(gpu::kernel_image_for({8, 0}, built) == kernel_image::native);
    CHECK(gpu::kernel_image_for({8, 6}, built) == kernel_image::native);
    CHECK(gpu::kernel_image_for({7, 5}, built) == kernel_image::native);
    CHECK(gpu::kernel_image_for({7, 0}, built) == kernel_image::missing);
    CHECK(gpu::kernel_image_for({9, 0}, built) == kernel_image::missing);
    CHECK(gpu::kernel_image_for({6, 1}, built) == kernel_image::missing);
}

TEST_CASE("kernel images: PTX is JIT-compiled on its capability and every newer one", "[device]")
{
    const auto built = gpu::parse_cuda_architectures("75-real;80-real;86-real;89-real;90");
    CHECK(gpu::kernel_image_for({9, 0}, built) == kernel_image::native);
    CHECK(gpu::kernel_image_for({10, 0}, built) == kernel_image::ptx_jit);
    CHECK(gpu::kernel_image_for({12, 0}, built) == kernel_image::ptx_jit);
    CHECK(gpu::kernel_image_for({7, 0}, built) == kernel_image::missing);
    const auto ptx_only = gpu::parse_cuda_architectures("75-virtual");
    CHECK(gpu::kernel_image_for({8, 0}, ptx_only) == kernel_image::ptx_jit);
    CHECK(gpu::kernel_image_for({7, 0}, ptx_only) == kernel_image::missing);
}

TEST_CASE("kernel images: architecture-specific code runs only on that capability", "[device]")
{
    const auto built = gpu::parse_cuda_architectures("90a-real");
    CHECK(gpu::kernel_image_for({9, 0}, built) == kernel_image::native);
    CHECK(gpu::kernel_image_for({10, 0}, built) == kernel_image::missing);
}

TEST_CASE("kernel images: a build without kernels needs none", "[device]")
{
    CHECK(gpu::kernel_image_for({6, 0}, {}) == kernel_image::not_needed);
}

TEST_CASE("the library's own check uses its built architectures", "[device]")
{
    const auto built = gpu::built_cuda_architectures();
    for (const compute_capability cc :
         {compute_capability{7, 5}, compute_capability{9, 0}, compute_capability{12, 0}}) {
        CHECK(gpu::kernel_image_for(cc) == gpu::kernel_image_for(cc, built));
    }
}

TEST_CASE("memory_info arithmetic", "[device]")
{
    constexpr gpu::memory_info info{25, 100};
    STATIC_REQUIRE(info.used_bytes() == 75);
    CHECK(info.used_fraction() == Approx(0.75));
    CHECK(gpu::memory_info{}.used_fraction() == 0.0);
}

TEST_CASE("peak memory bandwidth from clock and bus width", "[device]")
{
    gpu::device_properties props;
    props.memory_clock_rate_khz = 2'619'000;
    props.memory_bus_width_bits = 5120;
    // 2 transfers x 2.619 GHz x 640 bytes.
    CHECK(props.peak_memory_bandwidth_gbps() == Approx(3352.32));
}

TEST_CASE("a device's properties are sane", "[device][gpu]")
{
    const gpu::device dev = gpu::current_device();
    const gpu::device_properties props = dev.properties();
    CHECK(props.id == dev.id());
    CHECK_FALSE(props.name.empty());
    CHECK(props.total_memory_bytes > (std::size_t{1} << 30));
    CHECK(props.capability >= compute_capability{7, 5});
    CHECK(props.capability == dev.capability());
    CHECK(props.multiprocessor_count > 0);
    CHECK(props.clock_rate_khz > 0);
    CHECK(props.memory_clock_rate_khz > 0);
    CHECK(props.memory_bus_width_bits > 0);
    CHECK(props.l2_cache_bytes > 0);
    CHECK(props.max_threads_per_block >= 1024);
    CHECK_FALSE(props.pci_bus_id.empty());
    CHECK(props.peak_memory_bandwidth_gbps() > 100.0);
    CHECK(gpu::kernel_image_for(props.capability) != kernel_image::missing);
}

TEST_CASE("memory() reports free within total", "[device][gpu]")
{
    const gpu::memory_info info = gpu::current_device().memory();
    CHECK(info.total_bytes > 0);
    CHECK(info.free_bytes <= info.total_bytes);
}

TEST_CASE("scoped_device switches and restores the current device", "[device][gpu]")
{
    const int before = gpu::current_device().id();
    const int other = gpu::device_count() > 1 ? (before + 1) % gpu::device_count() : before;
    {
        const gpu::scoped_device guard{gpu::device(other)};
        CHECK(gpu::current_device().id() == other);
    }
    CHECK(gpu::current_device().id() == before);
    gpu::device(before).make_current();
    gpu::device(before).synchronize();
    CHECK(gpu::current_device() == gpu::device(before));
}

TEST_CASE("two objects of different devices are refused with both devices named", "[device]")
{
    CHECK_NOTHROW(gpu::detail::require_same_device("op", "the event", 1, "the stream", 1));
    try {
        gpu::detail::require_same_device("gpu::event::record", "the event", 1, "the stream", 0);
        FAIL("objects of devices 1 and 0 were accepted together");
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        CHECK_THAT(what, ContainsSubstring("gpu::event::record"));
        CHECK_THAT(what, ContainsSubstring("the event belongs to device 1"));
        CHECK_THAT(what, ContainsSubstring("the stream to device 0"));
    }
}

TEST_CASE("a device is never its own peer, and enabling that is refused before CUDA", "[device]")
{
    // device_from_cuda makes no CUDA call, so this runs without a driver too.
    const gpu::device zero = gpu::detail::device_from_cuda(0);
    CHECK(zero.id() == 0);
    CHECK_FALSE(zero.can_access_peer(zero));
    CHECK_THROWS_WITH(zero.enable_peer_access(zero), ContainsSubstring("is its own peer"));
}

TEST_CASE("the non-throwing scoped_device keeps its failure and restores nothing", "[device]")
{
    if (gpu::is_available()) {
        SUCCEED("CUDA is available here; switching is covered by the [gpu] tests");
        return;
    }
    {
        const gpu::scoped_device on(gpu::detail::device_from_cuda(0), std::nothrow);
        CHECK(on.status() != cudaSuccess);
    } // the destructor makes no call: there is nothing to restore
    CHECK_THROWS_AS(gpu::scoped_device(gpu::detail::device_from_cuda(0)), gpu::cuda_error);
}

TEST_CASE("scoped_device restores the caller's device even when switched inside", "[device][gpu]")
{
    const gpu::device before = gpu::current_device();
    {
        const gpu::scoped_device guard(before, std::nothrow);
        CHECK(guard.status() == cudaSuccess);
        gpu::device(gpu::device_count() - 1).make_current();
    }
    CHECK(gpu::current_device() == before);
}

TEST_CASE("peer access on one device: the matrix is all 'self'", "[device][gpu]")
{
    const gpu::device dev = gpu::current_device();
    CHECK_FALSE(dev.can_access_peer(dev));
    CHECK_THROWS_AS(dev.enable_peer_access(dev), std::invalid_argument);
    CHECK(gpu::current_device() == dev);
}

TEST_CASE("peer access between two devices is idempotent and keeps the caller's device",
          "[device][multi-gpu]")
{
    const gpu::device zero(0);
    const gpu::device one(1);
    const gpu::scoped_device on(zero);
    if (!one.can_access_peer(zero)) {
        CHECK_THROWS_WITH(one.enable_peer_access(zero), ContainsSubstring("cannot reach device"));
        return;
    }
    one.enable_peer_access(zero);
    CHECK(gpu::current_device() == zero);        // enabled with device 1 current, then restored
    CHECK_NOTHROW(one.enable_peer_access(zero)); // already enabled: not an error
    CHECK(cudaGetLastError() == cudaSuccess);    // and the sticky status was cleared
}
