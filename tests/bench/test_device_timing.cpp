// bench/harness/device_timing.hpp on the host: the flush sized from the device's L2 (twice it),
// allocated once and reused by every flush, each flush a whole write with a fresh value; the
// timer's arguments. The device side is in test_device_timing_gpu.cpp ([gpu]).
#include "device_timing.hpp"

#include <gpu/device.hpp>

#include "catch.hpp"

#include <memory>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace bench = gpu::bench;

namespace {

// A flush target that records what the flush asks of it.
struct counting_target final : bench::flush_target {
    struct log {
        std::vector<std::size_t> allocations;
        std::vector<unsigned char> writes;
    };
    std::shared_ptr<log> seen = std::make_shared<log>();
    void allocate(std::size_t bytes) override { seen->allocations.push_back(bytes); }
    void write(unsigned char value) override { seen->writes.push_back(value); }
};

} // namespace

TEST_CASE("a flush writes twice the L2 the device properties report", "[bench]")
{
    gpu::device_properties h200;
    h200.l2_cache_bytes = 50 * 1024 * 1024; // H100/H200: 50 MiB
    CHECK(bench::flush_bytes(h200.l2_cache_bytes) == std::size_t{100} << 20);
    CHECK(bench::flush_bytes(6 * 1024 * 1024) == std::size_t{12} << 20);
    CHECK_THROWS_WITH(bench::flush_bytes(0), ContainsSubstring("reports an L2 of 0 bytes") &&
                                                 ContainsSubstring("warm only"));
    CHECK_THROWS_AS(bench::flush_bytes(-1), std::invalid_argument);
    CHECK(to_string(bench::cache_state::cold) == "cold");
    CHECK(to_string(bench::cache_state::warm) == "warm");
}

TEST_CASE("the flush is sized from the device's properties", "[bench]")
{
    gpu::device_properties props;
    props.l2_cache_bytes = 50 * 1024 * 1024;
    auto target = std::make_unique<counting_target>();
    const std::shared_ptr<counting_target::log> seen = target->seen;
    const bench::l2_flush flush = bench::l2_flush::for_device(props, std::move(target));
    CHECK(flush.bytes() == std::size_t{100} << 20);
    CHECK(seen->allocations == std::vector<std::size_t>{std::size_t{100} << 20});
    props.l2_cache_bytes = 0; // a device that reports none: no flush, said why
    CHECK_THROWS_WITH(bench::l2_flush::for_device(props, std::make_unique<counting_target>()),
                      ContainsSubstring("cannot be sized"));
}

TEST_CASE("the flush buffer is sized and allocated once, then reused by every flush", "[bench]")
{
    auto target = std::make_unique<counting_target>();
    const std::shared_ptr<counting_target::log> seen = target->seen;
    bench::l2_flush flush(40 * 1024 * 1024, std::move(target));
    REQUIRE(seen->allocations.size() == 1);
    CHECK(seen->allocations[0] == std::size_t{80} << 20);
    CHECK(flush.bytes() == std::size_t{80} << 20);
    for (int i = 0; i < 600; ++i) {
        flush.flush();
    }
    CHECK(seen->allocations.size() == 1); // never reallocated per sample
    CHECK(seen->writes.size() == 600);
    CHECK(flush.flushes() == 600);
    for (std::size_t i = 1; i < seen->writes.size(); ++i) {
        INFO(i);
        CHECK(seen->writes[i] != seen->writes[i - 1]); // never the same value twice in a row
        CHECK(seen->writes[i] != 0);                   // nor a fresh allocation's zero
    }
    CHECK_THROWS_WITH(bench::l2_flush(1 << 20, nullptr), ContainsSubstring("target is null"));
    auto unsized = std::make_unique<counting_target>();
    const std::shared_ptr<counting_target::log> none = unsized->seen;
    CHECK_THROWS_AS(bench::l2_flush(0, std::move(unsized)), std::invalid_argument);
    CHECK(none->allocations.empty()); // nothing allocated for a flush that cannot be sized
}

TEST_CASE("per_call divides a series that timed several calls as one", "[bench]")
{
    const std::vector<double> samples{10.0, 20.0, 30.0};
    bench::series s = bench::series::of(gpu::summarize(samples));
    s.host_ms = 5.0;
    const bench::series divided = bench::per_call(s, 10);
    CHECK(divided.stats.median_ms == Approx(2.0));
    CHECK(divided.stats.max_ms == Approx(3.0));
    CHECK(*divided.host_ms == Approx(0.5));
    CHECK(divided.calls_per_sample == 10);
    CHECK(*divided.noise == Approx(*s.noise)); // the relative noise does not change
    CHECK_THROWS_WITH(bench::per_call(s, 0), ContainsSubstring("calls is 0"));
}

TEST_CASE("the device timer checks its arguments before any CUDA call", "[bench]")
{
    // Valid stream handles are not needed: every check comes first.
    CHECK_THROWS_WITH(
        bench::device_timer(gpu::legacy_default_stream, bench::stopping_rule{.min_samples = 0}),
        ContainsSubstring("min_samples is 0"));
}
