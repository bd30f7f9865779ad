// src/tools/nccl_checks.cpp: the diagnosis's NCCL checks on this machine's real NCCL, alone and
// composed into gpu::tools::diagnose.
#include "checks.hpp"

#include <gpu/tools/diagnose.hpp>
#include <gpu/tools/library_copies.hpp>

#include <gpu/device.hpp>
#include <gpu/nccl/version.hpp>

#include "catch.hpp"

#include <nccl.h>

#include <string>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

TEST_CASE("the NCCL checks: versions, copies on the library path, peer access", "[diagnostics]")
{
    const std::vector<gpu::tools::diagnostic> checks = gpu::tools::detail::nccl_checks();
    REQUIRE(checks.size() == 3);
    CHECK(checks[0].name == "NCCL");
    CHECK(checks[1].name == "NCCL copies on the library path");
    CHECK(checks[2].name == "GPU peer access");

    // ncclGetVersion answers without a GPU; the build-time code is there too.
    const gpu::nccl::version_info info = gpu::nccl::version();
    INFO(checks[0].detail);
    CHECK_THAT(
        checks[0].detail,
        StartsWith("NCCL " + info.loaded.to_string() + " loaded") &&
            ContainsSubstring("compiled against " + info.compiled.to_string()) &&
            ContainsSubstring("(NCCL_VERSION_CODE " + std::to_string(NCCL_VERSION_CODE) + ")"));
    CHECK((checks[0].status == gpu::tools::diagnostic_status::ok) == info.compatible());
    const std::optional<std::string> loaded = gpu::tools::loaded_library_path("libnccl");
    REQUIRE(loaded.has_value());
    CHECK_THAT(checks[0].detail, ContainsSubstring("from " + *loaded));
    CHECK_THAT(checks[1].detail,
               ContainsSubstring("libnccl.so.2") && ContainsSubstring("(loaded)"));
}

TEST_CASE("peer access: skipped without a GPU (caused by the GPUs check), a matrix with several",
          "[diagnostics]")
{
    const gpu::tools::diagnostic peers = gpu::tools::detail::nccl_checks()[2];
    INFO(peers.detail);
    const int count = gpu::device_count();
    if (count == 0) {
        CHECK(peers.status == gpu::tools::diagnostic_status::skipped);
        CHECK(peers.caused_by == "GPUs");
        const gpu::tools::diagnosis report = gpu::tools::diagnose();
        REQUIRE(report.find("GPU peer access") != nullptr);
        CHECK(report.find("GPU peer access")->status == gpu::tools::diagnostic_status::skipped);
        return;
    }
    CHECK(peers.status == gpu::tools::diagnostic_status::info);
    if (count == 1) {
        CHECK_THAT(peers.detail, StartsWith("one GPU: no peer to reach"));
    } else {
        // One row per GPU, each with a '-' on the diagonal.
        CHECK_THAT(peers.detail, StartsWith("peer access (row reaches column): 0:-"));
        std::string last_row = std::to_string(count - 1);
        last_row.insert(last_row.begin(), ' ');
        last_row += ':';
        CHECK_THAT(peers.detail, ContainsSubstring(last_row));
    }
}
