// src/tools/dnn_checks.cpp: the diagnosis's cuDNN checks on this machine's real cuDNN, alone and
// composed into gpu::tools::diagnose.
#include "checks.hpp"

#include <gpu/tools/diagnose.hpp>
#include <gpu/tools/library_copies.hpp>

#include <gpu/device.hpp>
#include <gpu/dnn/version.hpp>

#include "catch.hpp"

#include <algorithm>
#include <string>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

TEST_CASE("the cuDNN checks: versions, handle, copies on the library path", "[diagnostics]")
{
    const std::vector<gpu::tools::diagnostic> checks = gpu::tools::detail::dnn_checks();
    REQUIRE(checks.size() == 3);
    CHECK(checks[0].name == "cuDNN");
    CHECK(checks[1].name == "cuDNN handle");
    CHECK(checks[2].name == "cuDNN copies on the library path");

    const gpu::dnn::version_info info = gpu::dnn::version();
    INFO(checks[0].detail);
    CHECK_THAT(checks[0].detail,
               StartsWith("cuDNN " + info.loaded.to_string() + " loaded") &&
                   ContainsSubstring("compiled against " + info.compiled.to_string()) &&
                   ContainsSubstring("built for CUDA " + info.loaded_for_cuda.to_string()));
    CHECK((checks[0].status == gpu::tools::diagnostic_status::ok) ==
          (info.compatible() && info.loaded_for_cuda.major == gpu::runtime_version().major));

    // The loaded copy is named and marked among the copies.
    const std::optional<std::string> loaded = gpu::tools::loaded_library_path("libcudnn");
    REQUIRE(loaded.has_value());
    CHECK_THAT(checks[0].detail, ContainsSubstring("from " + *loaded));
    CHECK_THAT(checks[2].detail,
               ContainsSubstring("libcudnn.so." + std::to_string(info.loaded.major)) &&
                   ContainsSubstring("(loaded)"));
}

TEST_CASE("without a GPU the handle check reports cuDNN's error, caused by the GPUs check",
          "[diagnostics]")
{
    const gpu::tools::diagnostic handle = gpu::tools::detail::dnn_checks()[1];
    INFO(handle.detail);
    if (gpu::is_available()) {
        CHECK(handle.status == gpu::tools::diagnostic_status::ok);
        return;
    }
    CHECK(handle.status == gpu::tools::diagnostic_status::error);
    CHECK_THAT(handle.detail, StartsWith("cudnnCreate") && ContainsSubstring("CUDNN_STATUS_"));
    CHECK_FALSE(handle.fix.empty());
    CHECK(handle.caused_by == "GPUs");

    // Composed into the diagnosis, the root cause leads and this fix is not repeated.
    const gpu::tools::diagnosis report = gpu::tools::diagnose();
    REQUIRE(report.find("cuDNN handle") != nullptr);
    REQUIRE(report.find("GPUs") != nullptr);
    CHECK(report.find("GPUs")->status == gpu::tools::diagnostic_status::error);
    const std::vector<std::string> fixes = report.recommendations();
    CHECK(std::find(fixes.begin(), fixes.end(), handle.fix) == fixes.end());
}

TEST_CASE("with a GPU the handle check creates a handle on the current device",
          "[diagnostics][gpu]")
{
    const gpu::tools::diagnostic handle = gpu::tools::detail::dnn_checks()[1];
    INFO(handle.detail);
    CHECK(handle.status == gpu::tools::diagnostic_status::ok);
    CHECK_THAT(handle.detail, ContainsSubstring(gpu::current_device().properties().name));
}
