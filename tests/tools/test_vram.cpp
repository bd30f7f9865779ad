// gpu/tools/vram.hpp: the advisor's tiers at every boundary and for real cards' reported sizes, the
// advice by capability, the usage warning, and (on a GPU) monitoring and clearing the pool.
#include <gpu/tools/vram.hpp>

#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include "pool_threshold.hpp"

#include "catch.hpp"

#include <cstddef>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {
constexpr std::size_t mib = std::size_t{1} << 20;
constexpr std::size_t gib = std::size_t{1} << 30;
} // namespace

TEST_CASE("each tier starts at 7/8 of the size it is sold as", "[vram]")
{
    // Written out, not computed: 7, 10.5, 21, 42 and 70 GiB.
    const std::vector<std::pair<gpu::tools::vram_tier, std::size_t>> floors = {
        {gpu::tools::vram_tier::under_8gb, 0},
        {gpu::tools::vram_tier::class_8gb, 7 * gib},
        {gpu::tools::vram_tier::class_12gb, 10 * gib + 512 * mib},
        {gpu::tools::vram_tier::class_24gb, 21 * gib},
        {gpu::tools::vram_tier::class_48gb, 42 * gib},
        {gpu::tools::vram_tier::class_80gb, 70 * gib},
    };
    for (std::size_t i = 0; i < floors.size(); ++i) {
        const auto [tier, floor] = floors[i];
        INFO("tier " << gpu::tools::to_string(tier));
        CHECK(gpu::tools::vram_tier_floor_bytes(tier) == floor);
        CHECK(gpu::tools::vram_tier_for(floor) == tier);
        if (i > 0) {
            CHECK(gpu::tools::vram_tier_for(floor - 1) == floors[i - 1].first);
        }
    }
    CHECK(gpu::tools::vram_tier_for(0) == gpu::tools::vram_tier::under_8gb);
    CHECK(gpu::tools::vram_tier_for(std::size_t{1} << 50) == gpu::tools::vram_tier::class_80gb);
}

TEST_CASE("real cards land in the class they are sold as, not the one below", "[vram]")
{
    // Totals as cudaMemGetInfo/nvidia-smi report them (MiB), which are below the box's number.
    const std::vector<std::tuple<const char*, std::size_t, gpu::tools::vram_tier>> cards = {
        {"GTX 1650 4 GB", 3911, gpu::tools::vram_tier::under_8gb},
        {"GTX 1070 8 GB", 8192, gpu::tools::vram_tier::class_8gb},
        {"RTX 4060 8 GB", 7805, gpu::tools::vram_tier::class_8gb},
        {"RTX 3060 12 GB", 12036, gpu::tools::vram_tier::class_12gb},
        {"RTX 4080 16 GB", 16376, gpu::tools::vram_tier::class_12gb},
        {"RTX 4090 24 GB", 24564, gpu::tools::vram_tier::class_24gb},
        {"L40S 48 GB, ECC on", 46068, gpu::tools::vram_tier::class_48gb},
        {"RTX A6000 48 GB", 48685, gpu::tools::vram_tier::class_48gb},
        {"H100 80 GB", 81559, gpu::tools::vram_tier::class_80gb},
        {"H200 141 GB", 143771, gpu::tools::vram_tier::class_80gb},
    };
    for (const auto& [name, total_mib, tier] : cards) {
        INFO(name);
        CHECK(gpu::tools::vram_tier_for(total_mib * mib) == tier);
    }
}

TEST_CASE("the small tiers: half precision and small batches below 12 GB", "[vram]")
{
    SECTION("under 8 GB: batch 1 with gradient checkpointing")
    {
        const gpu::tools::vram_advice advice = gpu::tools::advise_vram(6 * gib);
        CHECK(advice.tier == gpu::tools::vram_tier::under_8gb);
        CHECK(advice.precision == gpu::preferred_precision::fp16);
        CHECK(advice.batch_size == 1);
        CHECK(advice.gradient_checkpointing);
        CHECK_FALSE(advice.allow_tf32);
        CHECK_FALSE(advice.capability.has_value());
    }
    SECTION("8 GB class: batch 4, no checkpointing")
    {
        const gpu::tools::vram_advice advice = gpu::tools::advise_vram(8 * gib);
        CHECK(advice.tier == gpu::tools::vram_tier::class_8gb);
        CHECK(advice.precision == gpu::preferred_precision::fp16);
        CHECK(advice.batch_size == 4);
        CHECK_FALSE(advice.gradient_checkpointing);
    }
    SECTION("12 GB and more: FP32 with growing batches")
    {
        const std::vector<std::pair<std::size_t, int>> batches = {
            {12 * gib, 8}, {24 * gib, 16}, {48 * gib, 32}, {80 * gib, 64}, {141 * gib, 64}};
        for (const auto& [total, batch] : batches) {
            const gpu::tools::vram_advice advice = gpu::tools::advise_vram(total);
            INFO(gpu::format_bytes(total));
            CHECK(advice.precision == gpu::preferred_precision::fp32);
            CHECK(advice.batch_size == batch);
            CHECK_FALSE(advice.gradient_checkpointing);
        }
    }
}

TEST_CASE("the capability picks BF16 and TF32 where the GPU has them", "[vram]")
{
    const gpu::tools::vram_advice ampere =
        gpu::tools::advise_vram(6 * gib, gpu::compute_capability{8, 6});
    CHECK(ampere.precision == gpu::preferred_precision::bf16);
    CHECK(ampere.allow_tf32);
    CHECK_THAT(ampere.notes[1], ContainsSubstring("no loss scaling"));

    const gpu::tools::vram_advice turing =
        gpu::tools::advise_vram(6 * gib, gpu::compute_capability{7, 5});
    CHECK(turing.precision == gpu::preferred_precision::fp16);
    CHECK_FALSE(turing.allow_tf32);
    CHECK_THAT(turing.notes[1], ContainsSubstring("GradScaler"));

    const gpu::tools::vram_advice pascal =
        gpu::tools::advise_vram(8 * gib, gpu::compute_capability{6, 1});
    CHECK(pascal.precision == gpu::preferred_precision::fp16);
    CHECK_THAT(pascal.notes.back(), ContainsSubstring("no tensor cores"));

    const gpu::tools::vram_advice unknown = gpu::tools::advise_vram(6 * gib);
    CHECK_THAT(unknown.notes.back(), ContainsSubstring("use BF16 instead"));

    const gpu::tools::vram_advice hopper =
        gpu::tools::advise_vram(80 * gib, gpu::compute_capability{9, 0});
    CHECK(hopper.precision == gpu::preferred_precision::fp32);
    CHECK(hopper.allow_tf32);
    CHECK_THAT(hopper.notes.back(), ContainsSubstring("allow TF32"));
}

TEST_CASE("advice applies to a profile and describes itself", "[vram]")
{
    const gpu::tools::vram_advice advice =
        gpu::tools::advise_vram(6 * gib, gpu::compute_capability{8, 9});
    const gpu::profile applied = advice.apply_to(gpu::profile::development());
    CHECK(applied.precision == gpu::preferred_precision::bf16);
    CHECK(applied.allow_tf32);
    CHECK(applied.synchronous_checks); // the rest of the profile is kept
    CHECK(applied.name == "development");

    const std::vector<std::string> lines = advice.describe();
    REQUIRE(lines.size() >= 5);
    CHECK(lines[0] == "total VRAM: 6.00 GiB (under 8 GB)");
    CHECK(lines[1] == "precision: bf16");
    CHECK(lines[2] == "batch size: 1");
    CHECK(lines[3] == "gradient checkpointing: yes");
    CHECK(lines[4] == "TF32: allowed");
    CHECK(gpu::tools::advise_vram(6 * gib).describe()[4] == "TF32: unknown (no capability given)");
}

TEST_CASE("usage above 90% warns, with the pool's cache and what others hold", "[vram]")
{
    gpu::tools::vram_usage usage;
    usage.device_id = 0;
    usage.device_memory = {10 * gib, 100 * gib}; // 90% used: the boundary does not warn
    CHECK_FALSE(usage.high());
    CHECK(usage.warning().empty());
    usage.device_memory = {5 * gib, 100 * gib};
    usage.pool = {true, 60 * gib, 40 * gib, 70 * gib, 0};
    CHECK(usage.high());
    const std::string warning = usage.warning();
    CHECK_THAT(warning, ContainsSubstring("95.0% of 100.00 GiB") &&
                            ContainsSubstring("caches 20.00 GiB") &&
                            ContainsSubstring("hold 35.00 GiB"));
    const std::vector<std::string> lines = usage.describe();
    REQUIRE(lines.size() == 4);
    CHECK_THAT(lines[1], ContainsSubstring("60.00 GiB (40.00 GiB in use, 20.00 GiB free but held"));
    CHECK_THAT(lines[2], ContainsSubstring("95.00 GiB used of 100.00 GiB (95.0%)"));
    CHECK_THAT(lines[3], ContainsSubstring("WARNING: VRAM usage is high"));
}

TEST_CASE("the advice for a real device uses its memory and capability", "[vram][gpu]")
{
    const gpu::device dev = gpu::current_device();
    const gpu::device_properties props = dev.properties();
    const gpu::tools::vram_advice advice = gpu::tools::advise_vram(dev);
    CHECK(advice.total_bytes == props.total_memory_bytes);
    REQUIRE(advice.capability.has_value());
    CHECK(*advice.capability == props.capability);
    CHECK(advice.tier == gpu::tools::vram_tier_for(props.total_memory_bytes));
}

// [serial]: it compares the device's free memory before and after, which any other process on
// the GPU changes; ctest runs it alone.
TEST_CASE("monitoring sees a buffer in all three views, and clearing returns the cache",
          "[vram][gpu][serial]")
{
    const gpu::device dev = gpu::current_device();
    REQUIRE(dev.properties().memory_pools_supported);
    // The pool caches freed memory across synchronisations only when its threshold says so.
    const gpu::test::scoped_release_threshold keep(gpu::memory_pool::device_default(dev),
                                                   gpu::memory_pool::keep_all);
    gpu::tools::clear_vram(dev); // start from an empty cache
    const gpu::tools::vram_usage empty = gpu::tools::measure_vram(dev);
    const std::size_t bytes = 256 * mib;
    {
        gpu::stream stream;
        gpu::device_buffer<char> buffer(bytes, stream);
        stream.synchronize();
        const gpu::tools::vram_usage busy = gpu::tools::measure_vram(dev);
        CHECK(busy.allocated.current_bytes >= empty.allocated.current_bytes + bytes);
        CHECK(busy.pool.used_bytes >= empty.pool.used_bytes + bytes);
        CHECK(busy.pool.reserved_bytes >= bytes);
        CHECK(busy.device_memory.used_bytes() >= empty.device_memory.used_bytes() + bytes);
        CHECK(busy.device_memory.total_bytes == dev.properties().total_memory_bytes);
        stream.synchronize();
    } // the buffer is freed to the pool, which keeps the memory
    const gpu::tools::vram_clear_result cleared = gpu::tools::clear_vram(dev);
    CHECK(cleared.before.allocated.current_bytes == empty.allocated.current_bytes);
    CHECK(cleared.before.pool.cached_bytes() >= bytes);
    CHECK(cleared.released_bytes() >= bytes);
    CHECK(cleared.after.pool.reserved_bytes + bytes <= cleared.before.pool.reserved_bytes);
    CHECK(cleared.after.device_memory.free_bytes > cleared.before.device_memory.free_bytes);
}
