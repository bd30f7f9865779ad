// src/tools/blas_checks.cpp: the diagnosis's cuBLAS checks on this machine's real cuBLAS, alone
// and composed into gpu::tools::diagnose.
#include "checks.hpp"

#include <gpu/tools/diagnose.hpp>
#include <gpu/tools/library_copies.hpp>

#include <gpu/blas/version.hpp>
#include <gpu/device.hpp>

#include "catch.hpp"

#include <algorithm>
#include <string>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

TEST_CASE("the cuBLAS checks: versions, handle, copies on the library path", "[diagnostics]")
{
    const std::vector<gpu::tools::diagnostic> checks = gpu::tools::detail::blas_checks();
    REQUIRE(checks.size() == 3);
    CHECK(checks[0].name == "cuBLAS");
    CHECK(checks[1].name == "cuBLAS handle");
    CHECK(checks[2].name == "cuBLAS copies on the library path");

    const gpu::blas::version_info info = gpu::blas::version();
    INFO(checks[0].detail);
    CHECK_THAT(checks[0].detail,
               StartsWith("cuBLAS " + info.loaded.to_string() + " loaded") &&
                   ContainsSubstring("with cuBLASLt " + std::to_string(info.loaded.major) + ".") &&
                   ContainsSubstring("compiled against " + info.compiled.to_string()));
    CHECK((checks[0].status == gpu::tools::diagnostic_status::ok) == info.compatible());

    const std::optional<std::string> loaded = gpu::tools::loaded_library_path("libcublas");
    REQUIRE(loaded.has_value());
    CHECK_THAT(checks[0].detail, ContainsSubstring("from " + *loaded));
    INFO(checks[2].detail);
    CHECK_THAT(checks[2].detail,
               ContainsSubstring("libcublas.so." + std::to_string(info.loaded.major)) &&
                   ContainsSubstring("libcublasLt.so." + std::to_string(info.loaded.major)) &&
                   ContainsSubstring("(loaded)"));
}

TEST_CASE("without a GPU the cuBLAS handle check reports the error, caused by the GPUs check",
          "[diagnostics]")
{
    const gpu::tools::diagnostic handle = gpu::tools::detail::blas_checks()[1];
    INFO(handle.detail);
    if (gpu::is_available()) {
        CHECK(handle.status == gpu::tools::diagnostic_status::ok);
        return;
    }
    CHECK(handle.status == gpu::tools::diagnostic_status::error);
    CHECK_THAT(handle.detail, StartsWith("cublasCreate") && ContainsSubstring("CUBLAS_STATUS_"));
    CHECK_FALSE(handle.fix.empty());
    CHECK(handle.caused_by == "GPUs");

    const gpu::tools::diagnosis report = gpu::tools::diagnose();
    REQUIRE(report.find("cuBLAS handle") != nullptr);
    const std::vector<std::string> fixes = report.recommendations();
    CHECK(std::find(fixes.begin(), fixes.end(), handle.fix) == fixes.end());
}

TEST_CASE("with a GPU the cuBLAS handle check creates a handle and reads its math mode",
          "[diagnostics][gpu]")
{
    const gpu::tools::diagnostic handle = gpu::tools::detail::blas_checks()[1];
    INFO(handle.detail);
    CHECK(handle.status == gpu::tools::diagnostic_status::ok);
    CHECK_THAT(handle.detail, ContainsSubstring(gpu::current_device().properties().name) &&
                                  ContainsSubstring("math mode default"));
}
