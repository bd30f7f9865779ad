// The gpu:: names of the tools, from before they moved into gpu::tools: they still compile,
// deprecated, for one release, and name the same types and functions as gpu::tools.
#include <gpu/tools.hpp>

#include "catch.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static_assert(std::is_same_v<gpu::diagnostic_status, gpu::tools::diagnostic_status>);
static_assert(std::is_same_v<gpu::diagnostic, gpu::tools::diagnostic>);
static_assert(std::is_same_v<gpu::diagnosis, gpu::tools::diagnosis>);
static_assert(std::is_same_v<gpu::diagnose_options, gpu::tools::diagnose_options>);
static_assert(std::is_same_v<gpu::library_copy, gpu::tools::library_copy>);
static_assert(std::is_same_v<gpu::vram_tier, gpu::tools::vram_tier>);
static_assert(std::is_same_v<gpu::vram_advice, gpu::tools::vram_advice>);
static_assert(std::is_same_v<gpu::vram_usage, gpu::tools::vram_usage>);
static_assert(std::is_same_v<gpu::vram_clear_result, gpu::tools::vram_clear_result>);

namespace {
// Whether two names of a function of type F name the same function; F picks the overload. A
// function, because GCC calls a direct comparison of the two tautological.
template <class F>
constexpr bool same_function(F* old_name, F* new_name)
{
    return old_name == new_name;
}
} // namespace

// The functions kept by using-declarations are the gpu::tools functions themselves.
static_assert(same_function<gpu::tools::diagnosis(const gpu::tools::diagnose_options&)>(
    &gpu::diagnose, &gpu::tools::diagnose));
static_assert(same_function<std::string_view(gpu::tools::diagnostic_status) noexcept>(
    &gpu::to_string, &gpu::tools::to_string));
static_assert(same_function<std::string_view(gpu::tools::vram_tier) noexcept>(
    &gpu::to_string, &gpu::tools::to_string));
static_assert(same_function<std::size_t(gpu::tools::vram_tier) noexcept>(
    &gpu::vram_tier_floor_bytes, &gpu::tools::vram_tier_floor_bytes));
static_assert(
    same_function<gpu::tools::vram_advice(std::size_t, std::optional<gpu::compute_capability>)>(
        &gpu::advise_vram, &gpu::tools::advise_vram));
static_assert(same_function<gpu::tools::vram_advice(gpu::device)>(&gpu::advise_vram,
                                                                  &gpu::tools::advise_vram));
static_assert(same_function<gpu::tools::vram_usage(gpu::device)>(&gpu::measure_vram,
                                                                 &gpu::tools::measure_vram));
static_assert(same_function<gpu::tools::vram_clear_result(gpu::device)>(&gpu::clear_vram,
                                                                        &gpu::tools::clear_vram));

TEST_CASE("the gpu:: names of the diagnosis build and read the same reports", "[tools]")
{
    const gpu::diagnosis report{.checks = {{.name = "old",
                                            .status = gpu::diagnostic_status::error,
                                            .detail = "broken",
                                            .fix = "mend it"}}};
    const gpu::tools::diagnosis& same = report;
    CHECK(same.worst() == gpu::tools::diagnostic_status::error);
    CHECK(same.recommendations() == std::vector<std::string>{"mend it"});
    CHECK(gpu::to_string(gpu::diagnostic_status::warning) == "warning");
    const gpu::diagnose_options options{.search_path = ""};
    CHECK(options.tool_timeout == gpu::tools::diagnose_options{}.tool_timeout);
}

TEST_CASE("the gpu:: names of the VRAM advisor give the advice of gpu::tools", "[tools]")
{
    constexpr std::size_t gib = std::size_t{1} << 30;
    // Three sizes in three tiers, so that a wrapper forwarding a constant could not pass.
    for (const std::size_t total : {6 * gib, 24 * gib, 80 * gib}) {
        INFO(total << " bytes");
        CHECK(gpu::vram_tier_for(total) == gpu::tools::vram_tier_for(total));
        const gpu::vram_advice old_name = gpu::advise_vram(total, gpu::compute_capability{8, 0});
        CHECK(old_name.describe() ==
              gpu::tools::advise_vram(total, gpu::compute_capability{8, 0}).describe());
    }
    CHECK(gpu::vram_tier_for(6 * gib) == gpu::vram_tier::under_8gb);
    CHECK(gpu::vram_tier_for(80 * gib) == gpu::vram_tier::class_80gb);
}

TEST_CASE("the gpu:: names of the library-copy search find what gpu::tools finds", "[tools]")
{
    // libc: loaded by every process, so the old names have something to find.
    const std::optional<std::string> loaded = gpu::loaded_library_path("libc");
    REQUIRE(loaded.has_value());
    CHECK(loaded == gpu::tools::loaded_library_path("libc"));
    const std::vector<gpu::library_copy> copies = gpu::find_library_copies("libc");
    CHECK_FALSE(copies.empty());
    CHECK(copies == gpu::tools::find_library_copies("libc"));
    const gpu::diagnostic check = gpu::check_library_copies("libc copies", {"libc"}, "LIBC_ROOT");
    CHECK(check.name == "libc copies");
    CHECK(check == gpu::tools::check_library_copies("libc copies", {"libc"}, "LIBC_ROOT"));
}

#pragma GCC diagnostic pop
