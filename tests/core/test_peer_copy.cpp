// gpu/peer_copy.hpp, and the device rule of device memory: buffers and pools record their
// device, allocate, free, memset and trim there, and leave the caller's device current.
#include <gpu/device.hpp>
#include <gpu/memory.hpp>
#include <gpu/peer_copy.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("a pool referred to without its device says so, and with one it records it",
          "[memory][device]")
{
    auto* fake = reinterpret_cast<cudaMemPool_t>(std::uintptr_t{0x1000});
    CHECK_THROWS_WITH(gpu::memory_pool(fake).device(),
                      ContainsSubstring("memory_pool(pool, device)"));
    const gpu::memory_pool named(fake, gpu::detail::device_from_cuda(2));
    CHECK(named.device().id() == 2);
    CHECK(named == gpu::memory_pool(fake)); // one pool, however it is referred to
}

TEST_CASE("copying empty buffers between devices queues nothing", "[memory][device]")
{
    gpu::device_buffer<float> to;
    const gpu::device_buffer<float> from;
    // Both sizes are 0: no CUDA call, so this runs without a driver too.
    CHECK_NOTHROW(gpu::copy_peer_async(to, from, gpu::legacy_default_stream));
}

TEST_CASE("a buffer records its device, and allocating, zeroing and freeing keep the caller's",
          "[memory][device][gpu]")
{
    const gpu::device current = gpu::current_device();
    gpu::stream s;
    {
        gpu::device_buffer<int> buffer(256, s);
        CHECK(buffer.device() == current);
        CHECK(gpu::current_device() == current);
        buffer.fill_zero();
        CHECK(gpu::current_device() == current);
        const gpu::device_buffer<int> empty(0, s);
        CHECK(empty.device() == current); // no memory: the stream's device
    }
    CHECK(gpu::current_device() == current);
    if (current.properties().memory_pools_supported) {
        const gpu::memory_pool pool = gpu::memory_pool::current(current);
        CHECK(pool.device() == current);
        pool.trim_to(0);
        CHECK(gpu::current_device() == current);
    }
}

TEST_CASE("copy_peer_async checks sizes and copies between buffers", "[memory][device][gpu]")
{
    gpu::stream s;
    std::vector<float> values(1000);
    std::iota(values.begin(), values.end(), 1.0F);
    const auto from = gpu::device_buffer<float>::from_host(values, s);
    gpu::device_buffer<float> to(values.size(), s);
    gpu::device_buffer<float> shorter(values.size() - 1, s);
    CHECK_THROWS_WITH(gpu::copy_peer_async(shorter, from, s),
                      ContainsSubstring("999") && ContainsSubstring("1000"));
    gpu::copy_peer_async(to, from, s); // one device is two ends of a peer copy too
    CHECK(to.to_host() == values);
}

TEST_CASE("buffers on two devices: made on device 1 while 0 is current, copied peer to peer",
          "[memory][device][multi-gpu]")
{
    const gpu::scoped_device on(gpu::device(0));
    const gpu::device zero(0);
    const gpu::device one(1);
    if (one.can_access_peer(zero)) {
        one.enable_peer_access(zero);
    }
    gpu::stream s0(zero);
    gpu::stream s1(one);
    std::vector<float> values(1 << 16);
    std::iota(values.begin(), values.end(), 0.0F);
    const auto source = gpu::device_buffer<float>::from_host(values, s0);
    gpu::device_buffer<float> target(values.size(), s1); // device 1, device 0 current
    CHECK(target.device() == one);
    CHECK(gpu::current_device() == zero);
    target.fill_zero(); // the memset runs on device 1
    gpu::copy_peer_async(target, source, s1);
    s1.synchronize();
    CHECK(target.to_host() == values);
    CHECK(gpu::memory_pool::current(one).device() == one);
    gpu::trim_memory_pool(one);
    CHECK(gpu::current_device() == zero);
}
