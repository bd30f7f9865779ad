// gpu/profile.hpp: the three presets, their names and the CUDAGAP_PROFILE variable.
#include <gpu/profile.hpp>

#include "catch.hpp"

#include <cstdlib>
#include <stdexcept>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("the development preset debugs: synchronous and numeric checks, FP32", "[profile]")
{
    const gpu::profile p = gpu::profile::development();
    CHECK(p.name == "development");
    CHECK(p.synchronous_checks);
    CHECK(p.check_numerics);
    CHECK_FALSE(p.allow_tf32);
    CHECK(p.precision == gpu::preferred_precision::fp32);
    CHECK_FALSE(p.benchmark);
    CHECK_FALSE(p.deterministic);
    CHECK_FALSE(p.seed.has_value());
}

TEST_CASE("the production preset is fast: TF32, FP16, benchmarked algorithms", "[profile]")
{
    const gpu::profile p = gpu::profile::production();
    CHECK(p.name == "production");
    CHECK_FALSE(p.synchronous_checks);
    CHECK_FALSE(p.check_numerics);
    CHECK(p.allow_tf32);
    CHECK(p.precision == gpu::preferred_precision::fp16);
    CHECK(p.benchmark);
    CHECK_FALSE(p.deterministic);
}

TEST_CASE("the testing preset is reproducible: deterministic, no TF32, seed 42", "[profile]")
{
    const gpu::profile p = gpu::profile::testing();
    CHECK(p.name == "testing");
    CHECK(p.deterministic);
    CHECK_FALSE(p.allow_tf32);
    CHECK_FALSE(p.benchmark);
    REQUIRE(p.seed.has_value());
    CHECK(*p.seed == 42);
}

TEST_CASE("presets are found by full and short names", "[profile]")
{
    CHECK(gpu::profile_from_name("development") == gpu::profile::development());
    CHECK(gpu::profile_from_name("prod") == gpu::profile::production());
    CHECK(gpu::profile_from_name("test") == gpu::profile::testing());
    CHECK(gpu::profile_names().size() == 3);
    CHECK_THROWS_WITH(gpu::profile_from_name("fast"),
                      ContainsSubstring("unknown profile 'fast'") &&
                          ContainsSubstring("development, production and testing"));
}

TEST_CASE("CUDAGAP_PROFILE selects a preset and rejects unknown names", "[profile]")
{
    ::unsetenv("CUDAGAP_PROFILE");
    CHECK_FALSE(gpu::profile_from_environment().has_value());
    ::setenv("CUDAGAP_PROFILE", "testing", 1);
    CHECK(gpu::profile_from_environment() == gpu::profile::testing());
    ::setenv("CUDAGAP_PROFILE", "turbo", 1);
    CHECK_THROWS_WITH(gpu::profile_from_environment(),
                      ContainsSubstring("CUDAGAP_PROFILE") && ContainsSubstring("'turbo'"));
    ::unsetenv("CUDAGAP_PROFILE");
}

TEST_CASE("describe lists every setting", "[profile]")
{
    const auto lines = gpu::profile::testing().describe();
    REQUIRE(lines.size() == 9);
    CHECK(lines[0] == "profile: testing");
    CHECK(lines[3] == "TF32 for FP32 data: off");
    CHECK(lines[5] == "benchmark algorithms (time the candidates, run the fastest): no");
    CHECK(lines[7] == "random seed: 42");
    CHECK(lines[8] == "NVTX ranges naming the work: yes");
    CHECK(gpu::profile::production().describe()[8] == "NVTX ranges naming the work: no");
    CHECK(gpu::profile::production().describe()[3] == "TF32 for FP32 data: allowed");
    CHECK(gpu::profile::production().describe()[5] ==
          "benchmark algorithms (time the candidates, run the fastest): yes");
    CHECK(gpu::to_string(gpu::preferred_precision::bf16) == "bf16");
}

TEST_CASE("defaults, tags and the selection order: command line, environment, defaults",
          "[profile]")
{
    const gpu::profile defaults = gpu::profile::defaults();
    CHECK(defaults.name == "default");
    CHECK_FALSE(defaults.synchronous_checks);
    CHECK_FALSE(defaults.allow_tf32);
    CHECK_FALSE(defaults.benchmark);
    CHECK_FALSE(defaults.deterministic);
    CHECK(defaults.tag() == "DEFAULT");
    CHECK(gpu::profile::development().tag() == "DEV");
    CHECK(gpu::profile::production().tag() == "PROD");
    CHECK(gpu::profile::testing().tag() == "TEST");
    CHECK(gpu::profile{}.tag() == "CUSTOM");

    ::unsetenv("CUDAGAP_PROFILE");
    CHECK(gpu::select_profile() == gpu::profile::defaults());
    CHECK(gpu::select_profile("prod") == gpu::profile::production());
    ::setenv("CUDAGAP_PROFILE", "testing", 1);
    CHECK(gpu::select_profile() == gpu::profile::testing());
    CHECK(gpu::select_profile("development") ==
          gpu::profile::development()); // the command line wins
    ::setenv("CUDAGAP_PROFILE", "turbo", 1);
    CHECK_THROWS_WITH(gpu::select_profile(),
                      ContainsSubstring("CUDAGAP_PROFILE") && ContainsSubstring("'turbo'"));
    CHECK_THROWS_WITH(gpu::select_profile("fast"), ContainsSubstring("unknown profile 'fast'"));
    ::unsetenv("CUDAGAP_PROFILE");
}
