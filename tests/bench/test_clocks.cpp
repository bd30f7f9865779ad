// bench/harness/clocks.hpp: judging a case by its clock readings (a fall, a throttle reason
// other than idle), the reasons' names, and NVML loaded at run time: a missing library, a
// failing one, and a stand-in (fake_nvml.cpp) whose clocks the test changes between readings.
#include "clocks.hpp"

#include "catch.hpp"
#include <scoped_env.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <string>
#include <vector>

#ifndef CUDAGAP_FAKE_NVML
#error "CUDAGAP_FAKE_NVML must name the stand-in NVML library (tests/bench/CMakeLists.txt)"
#endif

using Catch::Matchers::ContainsSubstring;
namespace bench = gpu::bench;

namespace {

using gpu::test::scoped_env;

bench::clock_reading reading(int sm, std::uint64_t reasons = 0)
{
    return {sm, 2619, reasons};
}

} // namespace

TEST_CASE("a case whose SM clock fell beyond the tolerance is flagged", "[bench]")
{
    const bench::clock_check steady = bench::check_clocks(reading(1980), reading(1980));
    CHECK_FALSE(steady.flagged());
    CHECK(steady.summary() == "1980 MHz");
    // A boosting GPU steps its clock up and down by a bin or two: 1.5% is within 2%.
    CHECK_FALSE(bench::check_clocks(reading(1980), reading(1950)).flagged());
    const bench::clock_check fell = bench::check_clocks(reading(1980), reading(1755));
    CHECK(fell.clock_fell);
    CHECK(fell.flagged());
    CHECK(fell.summary() == "FLAGGED: SM 1980->1755 MHz");
    // Rising from an idle clock is no fall.
    CHECK_FALSE(
        bench::check_clocks(reading(345, bench::throttle::gpu_idle), reading(1980)).flagged());
    CHECK(bench::check_clocks(reading(1980), reading(1900), 0.05).flagged() == false);
}

TEST_CASE("a throttle reason other than idle at a case's end flags it", "[bench]")
{
    const bench::clock_check idle =
        bench::check_clocks(reading(1980), reading(1980, bench::throttle::gpu_idle));
    CHECK_FALSE(idle.flagged());
    const bench::clock_check capped = bench::check_clocks(
        reading(1980), reading(1980, bench::throttle::gpu_idle | bench::throttle::sw_power_cap |
                                         bench::throttle::hw_thermal));
    CHECK(capped.flagged());
    CHECK_FALSE(capped.clock_fell);
    CHECK(capped.throttled_by == std::vector<std::string>{"SW power cap", "HW thermal slowdown"});
    CHECK(capped.summary() == "FLAGGED: SW power cap, HW thermal slowdown");
    const bench::clock_check both =
        bench::check_clocks(reading(1980), reading(1500, bench::throttle::hw_slowdown));
    CHECK(both.summary() == "FLAGGED: SM 1980->1500 MHz, HW slowdown");
    // Nothing read: nothing to flag, and the table says so.
    const bench::clock_check none = bench::check_clocks({}, {});
    CHECK_FALSE(none.flagged());
    CHECK(none.summary() == "-");
}

TEST_CASE("throttle reasons have names, and an unknown bit its value", "[bench]")
{
    CHECK(bench::throttle_reason_names(0).empty());
    CHECK(bench::throttle_reason_names(0x1 | 0x4 | 0x20) ==
          std::vector<std::string>{"GPU idle", "SW power cap", "SW thermal slowdown"});
    CHECK(bench::throttle_reason_names(0x100 | 0x800) ==
          std::vector<std::string>{"display clock setting", "0x800"});
}

TEST_CASE("without NVML the monitor reads nothing and says why", "[bench]")
{
    const bench::clock_monitor missing("0000:3B:00.0", "libcudagap-no-such-nvml.so.1");
    CHECK_FALSE(missing.available());
    CHECK_THAT(missing.unavailable_reason(),
               ContainsSubstring("libcudagap-no-such-nvml.so.1 could not be loaded"));
    CHECK(missing.driver_version().empty());
    CHECK_FALSE(missing.read().any());

    const scoped_env fail("FAKE_NVML_INIT_FAIL", "1");
    const bench::clock_monitor failing("0000:3B:00.0", CUDAGAP_FAKE_NVML);
    CHECK_FALSE(failing.available());
    CHECK_THAT(failing.unavailable_reason(), ContainsSubstring("nvmlInit_v2 failed"));
}

TEST_CASE("the monitor loads NVML at run time and reads the clocks and reasons", "[bench]")
{
    // Held open here too, so that the counter survives the monitor's dlclose.
    void* fake = dlopen(CUDAGAP_FAKE_NVML, RTLD_NOW | RTLD_LOCAL);
    REQUIRE(fake != nullptr);
    const auto shutdowns = reinterpret_cast<int (*)()>(dlsym(fake, "fake_nvml_shutdowns"));
    REQUIRE(shutdowns != nullptr);
    const int before = shutdowns();
    {
        const bench::clock_monitor nvml("0000:3B:00.0", CUDAGAP_FAKE_NVML);
        REQUIRE(nvml.available());
        CHECK(nvml.unavailable_reason().empty());
        CHECK(nvml.driver_version() == "999.88.77-fake");
        const bench::clock_reading first = nvml.read();
        CHECK(first.sm_mhz == 1980);
        CHECK(first.memory_mhz == 2619);
        CHECK(first.throttle_reasons == 0U); // through the older entry point
        const scoped_env sm("FAKE_NVML_SM_MHZ", "1710");
        const scoped_env reasons("FAKE_NVML_REASONS", "0x4");
        const bench::clock_check check = bench::check_clocks(first, nvml.read());
        CHECK(check.summary() == "FLAGGED: SM 1980->1710 MHz, SW power cap");
        const scoped_env broken("FAKE_NVML_MEM_MHZ", "fail");
        const bench::clock_reading partial = nvml.read();
        CHECK(partial.sm_mhz == 1710);
        CHECK_FALSE(partial.memory_mhz.has_value());
    }
    CHECK(shutdowns() == before + 1);
    dlclose(fake);

    const bench::clock_monitor elsewhere("0000:AA:00.0", CUDAGAP_FAKE_NVML);
    CHECK_FALSE(elsewhere.available());
    CHECK_THAT(elsewhere.unavailable_reason(), ContainsSubstring("PCI bus id 0000:AA:00.0"));
    CHECK(elsewhere.driver_version() == "999.88.77-fake"); // the driver is still known
    CHECK_FALSE(elsewhere.read().any());
}
