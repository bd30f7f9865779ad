// gpu/nvtx.hpp, for real on the host: NVTX loads the recorder (nvtx_recorder.cpp) named by
// NVTX_INJECTION64_PATH, as it loads a profiler, and the tests read back the names, domains,
// colours and nesting that reached NVTX (tests/support/nvtx_recording.hpp sets the variable
// while this program loads, before any NVTX call can initialise NVTX without it).
#include <gpu/memory_ledger.hpp>
#include <gpu/nvtx.hpp>
#include <gpu/profile.hpp>

#include "catch.hpp"
#include "nvtx_recording.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

using recorder = gpu::test::nvtx_recorder;

recorder& fresh(bool on = true)
{
    return gpu::test::start_nvtx_recording(on);
}

} // namespace

TEST_CASE("ranges reach NVTX with their names, nested, in cudagap's domain", "[nvtx]")
{
    recorder& r = fresh();
    {
        const gpu::nvtx::range outer("captured_step replay", gpu::nvtx::colours::graph);
        CHECK(outer.active());
        {
            const int layer = 1;
            const gpu::nvtx::range inner(
                [&] { return "nn fc" + std::to_string(layer) + " backward"; });
            gpu::nvtx::mark("checkpoint");
            CHECK(gpu::nvtx::innermost_range() == "nn fc1 backward");
            CHECK(gpu::nvtx::open_ranges() ==
                  std::vector<std::string>{"captured_step replay", "nn fc1 backward"});
        }
        CHECK(gpu::nvtx::innermost_range() == "captured_step replay");
    }
    CHECK(gpu::nvtx::innermost_range().empty());
    // NVTX loaded the recorder through NVTX_INJECTION64_PATH at the first call.
    REQUIRE(r.initialised() == 1);
    CHECK(r.lines() == "push cudagap captured_step replay #ff6a1b9a\n"
                       "push cudagap nn fc1 backward\n"
                       "mark cudagap checkpoint\n"
                       "pop cudagap\n"
                       "pop cudagap\n");
}

TEST_CASE("a program's own domain and colours reach NVTX", "[nvtx]")
{
    recorder& r = fresh();
    static const gpu::nvtx::domain mine("my_program");
    {
        const gpu::nvtx::range load("load data", gpu::nvtx::colour{0xff112233}, mine);
        gpu::nvtx::mark([] { return std::string("batch 7"); }, gpu::nvtx::colours::user, mine);
    }
    CHECK(mine.name() == "my_program");
    CHECK(r.lines() == "push my_program load data #ff112233\n"
                       "mark my_program batch 7 #ff546e7a\n"
                       "pop my_program\n");
}

TEST_CASE("off means free: no NVTX call, no name built, no stack", "[nvtx]")
{
    recorder& r = fresh(false);
    int built = 0;
    {
        const gpu::nvtx::range named("gemm 4096x4096x4096 bf16");
        const gpu::nvtx::range lazy([&] {
            ++built;
            return std::string("all_reduce 12 MiB");
        });
        gpu::nvtx::mark([&] {
            ++built;
            return std::string("never");
        });
        CHECK_FALSE(named.active());
        CHECK_FALSE(lazy.active());
        CHECK(gpu::nvtx::open_ranges().empty());
    }
    CHECK(built == 0);
    CHECK(r.lines().empty());
    CHECK_FALSE(gpu::nvtx::enabled());
}

TEST_CASE("a range open when ranges are turned off still ends", "[nvtx]")
{
    recorder& r = fresh();
    {
        const gpu::nvtx::range open("conv fwd [32,3,224,224] implicit_precomp_gemm");
        gpu::nvtx::enable(false);
        const gpu::nvtx::range skipped("skipped");
    }
    CHECK(r.lines() == "push cudagap conv fwd [32,3,224,224] implicit_precomp_gemm\n"
                       "pop cudagap\n");
    CHECK(gpu::nvtx::open_ranges().empty());
}

TEST_CASE("the memory ledger records the innermost range while ranges are on", "[nvtx]")
{
    fresh();
    gpu::memory_ledger ledger;
    ledger.start_recording();
    int a = 0;
    int b = 0;
    {
        const gpu::nvtx::range step("train step");
        const gpu::nvtx::range layer("nn fc1 backward");
        ledger.record_allocation(0, &a, 256, gpu::memory_tag::user());
    }
    ledger.record_allocation(0, &b, 128, gpu::memory_tag::user());
    gpu::nvtx::enable(false);
    {
        const gpu::nvtx::range off("not recorded");
        static_cast<void>(ledger.record_free(0, &a));
    }
    const auto [events, dropped] = ledger.stop_recording();
    CHECK(dropped == 0);
    std::vector<std::string> ranges;
    for (const gpu::memory_event& event : events) {
        if (event.kind != gpu::memory_event_kind::initial) {
            ranges.push_back(event.range);
        }
    }
    CHECK(ranges == std::vector<std::string>{"nn fc1 backward", "", ""});
}

TEST_CASE("the profiles turn ranges on for development and testing", "[nvtx][profile]")
{
    fresh(false);
    gpu::nvtx::apply(gpu::profile::development());
    CHECK(gpu::nvtx::enabled());
    gpu::nvtx::apply(gpu::profile::production());
    CHECK_FALSE(gpu::nvtx::enabled());
    gpu::nvtx::apply(gpu::profile::testing());
    CHECK(gpu::nvtx::enabled());
    gpu::nvtx::apply(gpu::profile::defaults());
    CHECK_FALSE(gpu::nvtx::enabled());
}

TEST_CASE("sizes in range names read as people write them", "[nvtx]")
{
    CHECK(gpu::nvtx::size_name(512) == "512 B");
    CHECK(gpu::nvtx::size_name(12 * 1024) == "12 KiB");
    CHECK(gpu::nvtx::size_name(12u << 20) == "12 MiB");
    CHECK(gpu::nvtx::size_name(3u << 29) == "1.5 GiB");
    CHECK(gpu::nvtx::size_name(1000) == "1000 B");
    CHECK(gpu::nvtx::size_name(1536) == "1.5 KiB");
}

// Run three times by ctest: as the other cases (the environment as ctest's, normally neither
// variable set), and by entries of their own with CUDAGAP_NVTX=1 and with
// CUDAGAP_PROFILE=development (tests/core/CMakeLists.txt).
TEST_CASE("the environment read at load decides whether ranges start on", "[nvtx]")
{
    const char* nvtx = std::getenv("CUDAGAP_NVTX");
    const char* profile = std::getenv("CUDAGAP_PROFILE");
    const std::string chosen = profile == nullptr ? "" : profile;
    const bool expected = nvtx != nullptr && *nvtx != '\0'
                              ? std::string(nvtx) != "0"
                              : (chosen == "development" || chosen == "dev" ||
                                 chosen == "testing" || chosen == "test");
    CHECK(gpu::nvtx::enabled_by_environment() == expected);
}
