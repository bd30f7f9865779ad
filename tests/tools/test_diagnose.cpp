// gpu/tools/diagnose.hpp and gpu/tools/library_copies.hpp: the diagnosis of this machine's real
// environment, compared with facts read here independently, and of fake environments (tools on
// a temporary search path, library copies on a temporary LD_LIBRARY_PATH).
#include <gpu/tools/diagnose.hpp>
#include <gpu/tools/library_copies.hpp>

#include "checks.hpp" // the private helpers the wrappers' checks share

#include <gpu/device.hpp>
#include <gpu/version.hpp>

#include "catch.hpp"
#include <scoped_env.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
namespace fs = std::filesystem;

namespace {

// A fresh folder under the system's temporary folder, removed at the end of the test.
struct temporary_folder {
    fs::path path;
    temporary_folder()
    {
        std::random_device random;
        path = fs::temp_directory_path() / ("cudagap-diagnose-" + std::to_string(random()));
        fs::create_directories(path);
    }
    ~temporary_folder()
    {
        std::error_code ec;
        fs::remove_all(path, ec);
    }
    temporary_folder(const temporary_folder&) = delete;
    temporary_folder& operator=(const temporary_folder&) = delete;

    // Writes an executable shell script called @p name with @p body.
    void tool(const std::string& name, const std::string& body) const
    {
        const fs::path file = path / name;
        std::ofstream(file) << "#!/bin/sh\n" << body << "\n";
        fs::permissions(file,
                        fs::perms::owner_all | fs::perms::group_read | fs::perms::others_read);
    }

    void file(const std::string& name, const std::string& content = "not really a library") const
    {
        std::ofstream(path / name) << content;
    }
};

// Restores an environment variable at the end of a test.
using scoped_environment = gpu::test::scoped_env;

// A copy: callers pass temporaries.
gpu::tools::diagnostic require_check(const gpu::tools::diagnosis& report, std::string_view name)
{
    const gpu::tools::diagnostic* check = report.find(name);
    if (check == nullptr) {
        throw std::runtime_error("the report has no check called " + std::string(name));
    }
    return *check;
}

bool on_path(const std::string& tool)
{
    const char* path = std::getenv("PATH");
    std::string folders = path == nullptr ? "" : path;
    std::size_t begin = 0;
    while (begin <= folders.size()) {
        const std::size_t end = std::min(folders.find(':', begin), folders.size());
        const std::string folder = folders.substr(begin, end - begin);
        begin = end + 1;
        std::error_code ec;
        if (!folder.empty() && fs::is_regular_file(fs::path(folder) / tool, ec)) {
            return true;
        }
    }
    return false;
}

// What the kernel-image check must say for a prediction of gpu::kernel_image_for.
gpu::tools::diagnostic_status expected_status(gpu::kernel_image image)
{
    switch (image) {
    case gpu::kernel_image::ptx_jit: return gpu::tools::diagnostic_status::warning;
    case gpu::kernel_image::missing: return gpu::tools::diagnostic_status::error;
    default: return gpu::tools::diagnostic_status::ok;
    }
}

// The checks gpu::tools::diagnose runs after @p cuda_checks: each built wrapper's three, or one skipped
// check for a wrapper this cudagap lacks, then the other platforms.
std::vector<std::string> wrapper_check_names(std::vector<std::string> names)
{
    if (CUDAGAP_TEST_WITH_BLAS) {
        names.insert(names.end(), {"cuBLAS", "cuBLAS handle", "cuBLAS copies on the library path"});
    } else {
        names.emplace_back("cuBLAS");
    }
    if (CUDAGAP_TEST_WITH_DNN) {
        names.insert(names.end(), {"cuDNN", "cuDNN handle", "cuDNN copies on the library path"});
    } else {
        names.emplace_back("cuDNN");
    }
    if (CUDAGAP_TEST_WITH_NCCL) {
        names.insert(names.end(), {"NCCL", "NCCL copies on the library path", "GPU peer access"});
    } else {
        names.emplace_back("NCCL");
    }
    names.insert(names.end(), {"ROCm", "Intel oneAPI"});
    return names;
}

gpu::tools::diagnosis diagnose_with_tools(const temporary_folder& tools)
{
    return gpu::tools::diagnose(
        {.search_path = tools.path.string(), .tool_timeout = std::chrono::milliseconds(5000)});
}

} // namespace

TEST_CASE("the diagnosis runs its checks in order, each with a detail", "[diagnose]")
{
    const gpu::tools::diagnosis report = gpu::tools::diagnose();
    const std::vector<std::string> expected = wrapper_check_names(
        {"nvidia-smi", "NVIDIA driver", "CUDA runtime", "GPUs", "kernel images", "nvcc"});
    REQUIRE(report.checks.size() == expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        INFO(report.checks[i].name << ": " << report.checks[i].detail);
        CHECK(report.checks[i].name == expected[i]);
        CHECK_FALSE(report.checks[i].detail.empty());
        if (report.checks[i].status == gpu::tools::diagnostic_status::error ||
            report.checks[i].status == gpu::tools::diagnostic_status::warning) {
            CHECK((!report.checks[i].fix.empty() || !report.checks[i].caused_by.empty()));
        }
    }
    CHECK(report.healthy() == (report.count(gpu::tools::diagnostic_status::error) == 0));
    CHECK(report.exit_code() == (report.healthy() ? 0 : 1));
}

TEST_CASE("the driver check agrees with cudaDriverGetVersion, read here directly", "[diagnose]")
{
    int encoded = 0;
    REQUIRE(cudaDriverGetVersion(&encoded) == cudaSuccess);
    const gpu::tools::diagnosis report = gpu::tools::diagnose();
    const gpu::tools::diagnostic driver = require_check(report, "NVIDIA driver");
    const gpu::cuda_version runtime = gpu::runtime_version();
    INFO(driver.detail);
    if (encoded == 0) {
        // This machine's case: the toolkit without a driver. The report must say exactly that.
        CHECK(driver.status == gpu::tools::diagnostic_status::error);
        CHECK_THAT(driver.detail,
                   ContainsSubstring("no NVIDIA driver") && ContainsSubstring("libcuda.so") &&
                       ContainsSubstring("CUDA " + runtime.to_string() + " runtime"));
        if (!fs::exists("/proc/driver/nvidia/version")) {
            CHECK_THAT(driver.detail, ContainsSubstring("no NVIDIA kernel module is loaded"));
            CHECK_THAT(driver.fix, ContainsSubstring("supports CUDA " + runtime.to_string()) &&
                                       ContainsSubstring("https://www.nvidia.com/drivers"));
            const std::string branch = gpu::minimum_driver_for(runtime);
            if (!branch.empty()) {
                CHECK_THAT(driver.fix, ContainsSubstring("branch " + branch + " or newer"));
            }
        }
        CHECK_FALSE(report.healthy());
        CHECK(report.exit_code() == 1);
    } else {
        const gpu::cuda_version supported = gpu::cuda_version::from_int(encoded);
        CHECK_THAT(driver.detail,
                   ContainsSubstring("supports CUDA up to " + supported.to_string()));
        CHECK((driver.status == gpu::tools::diagnostic_status::error) ==
              (supported.major < runtime.major));
    }
}

TEST_CASE("the GPU check agrees with cudaGetDeviceCount, read here directly", "[diagnose]")
{
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    static_cast<void>(cudaGetLastError());
    const gpu::tools::diagnosis report = gpu::tools::diagnose();
    const gpu::tools::diagnostic gpus = require_check(report, "GPUs");
    INFO(gpus.detail);
    if (status != cudaSuccess) {
        CHECK(gpus.status == gpu::tools::diagnostic_status::error);
        CHECK_THAT(gpus.detail,
                   StartsWith("cudaGetDeviceCount: " + std::string(cudaGetErrorName(status))));
        if (require_check(report, "NVIDIA driver").status == gpu::tools::diagnostic_status::error) {
            // The root cause leads: the GPU check points at the driver and adds no second fix.
            CHECK(gpus.caused_by == "NVIDIA driver");
        }
        const gpu::tools::diagnostic images = require_check(report, "kernel images");
        if (!on_path("nvidia-smi")) {
            CHECK(images.status == gpu::tools::diagnostic_status::skipped);
            CHECK_THAT(images.detail, ContainsSubstring("no GPU to compare against"));
        }
    } else {
        REQUIRE(count > 0);
        CHECK(gpus.status != gpu::tools::diagnostic_status::error);
        CHECK_THAT(gpus.detail, StartsWith(std::to_string(count) + " GPU(s)"));
        CHECK_THAT(gpus.detail, ContainsSubstring(gpu::device(0).properties().name));
        CHECK_THAT(require_check(report, "kernel images").detail, ContainsSubstring("GPU 0"));
    }
}

TEST_CASE("the runtime check names the loaded libcudart and the compiled version", "[diagnose]")
{
    const gpu::tools::diagnostic runtime = require_check(gpu::tools::diagnose(), "CUDA runtime");
    INFO(runtime.detail);
    CHECK(runtime.status != gpu::tools::diagnostic_status::error);
    CHECK_THAT(
        runtime.detail,
        ContainsSubstring("CUDA runtime " + gpu::runtime_version().to_string() + " loaded") &&
            ContainsSubstring("compiled against " + gpu::compiled_runtime_version().to_string()));
    const std::optional<std::string> loaded = gpu::tools::loaded_library_path("libcudart");
    if (loaded) {
        CHECK_THAT(runtime.detail, ContainsSubstring("from " + *loaded));
    } else {
        CHECK_THAT(runtime.detail, ContainsSubstring("linked statically"));
    }
}

TEST_CASE("kernel images name the architectures this library was built for", "[diagnose]")
{
    const gpu::tools::diagnostic images = require_check(gpu::tools::diagnose(), "kernel images");
    const std::string built = gpu::built_cuda_architectures_string();
    if (!built.empty()) {
        CHECK_THAT(images.detail, ContainsSubstring("CMAKE_CUDA_ARCHITECTURES=" + built));
    }
}

TEST_CASE("nvidia-smi missing without a driver is an error that follows from the driver",
          "[diagnose]")
{
    const temporary_folder empty;
    const gpu::tools::diagnosis report = diagnose_with_tools(empty);
    const gpu::tools::diagnostic smi = require_check(report, "nvidia-smi");
    CHECK_THAT(smi.detail, StartsWith("nvidia-smi is not on the search path"));
    if (gpu::is_available()) {
        CHECK(smi.status == gpu::tools::diagnostic_status::warning);
        CHECK_THAT(smi.fix, ContainsSubstring("NVIDIA_DRIVER_CAPABILITIES"));
    } else {
        CHECK(smi.status == gpu::tools::diagnostic_status::error);
        if (!gpu::driver_version().installed()) {
            CHECK(smi.caused_by == "NVIDIA driver");
        }
    }
    CHECK(require_check(report, "ROCm").status == gpu::tools::diagnostic_status::info);
}

TEST_CASE("nvidia-smi's query is parsed: GPU, driver, memory and compute capability", "[diagnose]")
{
    const temporary_folder tools;
    tools.tool("nvidia-smi", "echo 'NVIDIA H200, 570.124.06, 143771 MiB, 9.0'");
    const gpu::tools::diagnosis report = diagnose_with_tools(tools);
    const gpu::tools::diagnostic smi = require_check(report, "nvidia-smi");
    INFO(smi.detail);
    CHECK(smi.status == gpu::tools::diagnostic_status::ok);
    CHECK_THAT(smi.detail,
               ContainsSubstring("1 GPU(s): NVIDIA H200, driver 570.124.06, 143771 MiB, "
                                 "compute capability 9.0"));
    const gpu::tools::diagnostic images = require_check(report, "kernel images");
    if (!gpu::is_available() && !gpu::built_cuda_architectures_string().empty()) {
        // CUDA cannot list the GPU here, so nvidia-smi's capability predicts the kernel images.
        CHECK_THAT(images.detail,
                   ContainsSubstring("nvidia-smi GPU 0 (NVIDIA H200), compute capability 9.0"));
        CHECK(images.status == expected_status(gpu::kernel_image_for({9, 0})));
    }
}

TEST_CASE("a GPU the build has no image for is predicted from nvidia-smi's capability",
          "[diagnose]")
{
    if (gpu::is_available() || gpu::built_cuda_architectures().empty()) {
        // With a GPU the check looks at CUDA's devices instead; without kernels there is nothing
        // to predict. Both are covered by the real-environment tests.
        SUCCEED("CUDA's own devices are checked instead");
        return;
    }
    const temporary_folder tools;
    SECTION("older than every built architecture: no kernel image, an error and the rebuild")
    {
        tools.tool("nvidia-smi", "echo 'Tesla K80, 470.57.02, 11441 MiB, 3.7'");
        const gpu::tools::diagnostic images =
            require_check(diagnose_with_tools(tools), "kernel images");
        INFO(images.detail);
        REQUIRE(gpu::kernel_image_for({3, 7}) == gpu::kernel_image::missing);
        CHECK(images.status == gpu::tools::diagnostic_status::error);
        CHECK_THAT(images.detail, ContainsSubstring("no kernel image is available"));
        CHECK_THAT(images.fix, ContainsSubstring("-DCMAKE_CUDA_ARCHITECTURES=37"));
    }
    SECTION("newer than every machine code: PTX JIT, a warning and the -real to add")
    {
        tools.tool("nvidia-smi", "echo 'NVIDIA B200, 580.65.06, 183359 MiB, 10.0'");
        const gpu::tools::diagnostic images =
            require_check(diagnose_with_tools(tools), "kernel images");
        INFO(images.detail);
        const gpu::kernel_image expected = gpu::kernel_image_for({10, 0});
        CHECK(images.status == expected_status(expected));
        if (expected == gpu::kernel_image::ptx_jit) {
            CHECK_THAT(images.fix, ContainsSubstring("100-real") &&
                                       ContainsSubstring(gpu::built_cuda_architectures_string()));
        }
    }
}

TEST_CASE("a garbled compute capability from nvidia-smi is left out, never overflowed",
          "[diagnose]")
{
    // std::stoi read "214748365.9" as 214748365, and as_int() then overflowed (undefined
    // behaviour) predicting kernel images; a sign, spaces, trailing text or a two-digit minor
    // were read too. Now only digits.digits that have an integer form are a capability.
    const temporary_folder tools;
    tools.tool("nvidia-smi", "echo 'GPU A, 570.1, 1 MiB, 214748365.9'\n"
                             "echo 'GPU B, 570.1, 1 MiB, 99999999999.0'\n"
                             "echo 'GPU C, 570.1, 1 MiB, -1.5'\n"
                             "echo 'GPU D, 570.1, 1 MiB, 8.10'\n"
                             "echo 'GPU E, 570.1, 1 MiB, +9.0'\n"
                             "echo 'GPU F, 570.1, 1 MiB, 9.0x'\n"
                             "echo 'GPU G, 570.1, 1 MiB, [N/A]'\n"
                             "echo 'GPU H, 570.1, 1 MiB, 9.0'");
    const gpu::tools::diagnosis report = diagnose_with_tools(tools);
    const gpu::tools::diagnostic smi = require_check(report, "nvidia-smi");
    INFO(smi.detail);
    CHECK(smi.status == gpu::tools::diagnostic_status::ok);
    CHECK_THAT(
        smi.detail,
        ContainsSubstring("8 GPU(s): GPU A, driver 570.1, 1 MiB; GPU B, driver 570.1, 1 MiB; "));
    CHECK_THAT(smi.detail,
               ContainsSubstring("GPU G, driver 570.1, 1 MiB; GPU H, driver 570.1, 1 MiB, "
                                 "compute capability 9.0"));
    CHECK(smi.detail.find("compute capability") == smi.detail.rfind("compute capability"));
    const gpu::tools::diagnostic images = require_check(report, "kernel images");
    INFO(images.detail);
    CHECK(images.detail.find("GPU A") == std::string::npos);
    CHECK(images.detail.find("-1") == std::string::npos);
    if (!gpu::is_available() && !gpu::built_cuda_architectures_string().empty()) {
        CHECK_THAT(images.detail,
                   ContainsSubstring("nvidia-smi GPU 7 (GPU H), compute capability 9.0"));
    }
}

TEST_CASE("a failing or hanging nvidia-smi is an error with what it said", "[diagnose]")
{
    const temporary_folder tools;
    SECTION("it fails")
    {
        tools.tool("nvidia-smi", "echo \"NVIDIA-SMI has failed because it couldn't communicate "
                                 "with the NVIDIA driver.\"; exit 9");
        const gpu::tools::diagnostic smi = require_check(diagnose_with_tools(tools), "nvidia-smi");
        CHECK(smi.status == gpu::tools::diagnostic_status::error);
        CHECK_THAT(smi.detail, ContainsSubstring("failed (exit 9)") &&
                                   ContainsSubstring("couldn't communicate"));
        CHECK_THAT(smi.fix, ContainsSubstring("dmesg"));
    }
    SECTION("it hangs, and is killed at the timeout")
    {
        tools.tool("nvidia-smi", "exec sleep 30");
        const auto start = std::chrono::steady_clock::now();
        const gpu::tools::diagnosis report = gpu::tools::diagnose(
            {.search_path = tools.path.string(), .tool_timeout = std::chrono::milliseconds(300)});
        CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
        const gpu::tools::diagnostic smi = require_check(report, "nvidia-smi");
        CHECK(smi.status == gpu::tools::diagnostic_status::error);
        CHECK_THAT(smi.detail, ContainsSubstring("did not answer within"));
    }
}

TEST_CASE("nvcc's release is read and compared with the toolkit cudagap was built with",
          "[diagnose]")
{
    const temporary_folder tools;
    const gpu::cuda_version compiled = gpu::compiled_runtime_version();
    SECTION("the same major version: ok")
    {
        tools.tool("nvcc", "echo 'Cuda compilation tools, release " + compiled.to_string() + ", V" +
                               compiled.to_string() + ".88'");
        const gpu::tools::diagnostic nvcc = require_check(diagnose_with_tools(tools), "nvcc");
        CHECK(nvcc.status == gpu::tools::diagnostic_status::ok);
        CHECK_THAT(nvcc.detail,
                   StartsWith("Cuda compilation tools, release " + compiled.to_string()) &&
                       ContainsSubstring((tools.path / "nvcc").string()));
    }
    SECTION("another major version: a warning to put the right toolkit first")
    {
        const std::string other = std::to_string(compiled.major - 1) + ".4";
        tools.tool("nvcc",
                   "echo 'Cuda compilation tools, release " + other + ", V" + other + ".131'");
        const gpu::tools::diagnostic nvcc = require_check(diagnose_with_tools(tools), "nvcc");
        CHECK(nvcc.status == gpu::tools::diagnostic_status::warning);
        CHECK_THAT(nvcc.detail, ContainsSubstring("release " + other));
        CHECK_THAT(nvcc.fix, ContainsSubstring("CUDA " + compiled.to_string() +
                                               " toolkit's bin folder first"));
    }
    SECTION("not on the search path but in a toolkit folder: add it to PATH")
    {
        const gpu::tools::diagnostic nvcc = require_check(diagnose_with_tools(tools), "nvcc");
        CHECK(nvcc.status == gpu::tools::diagnostic_status::warning);
        if (fs::exists("/usr/local/cuda/bin/nvcc") && std::getenv("CUDA_HOME") == nullptr &&
            std::getenv("CUDA_PATH") == nullptr && std::getenv("CUDAToolkit_ROOT") == nullptr) {
            CHECK_THAT(nvcc.fix, StartsWith("add /usr/local/cuda/bin to PATH"));
        }
    }
}

TEST_CASE("other platforms are reported as information", "[diagnose]")
{
    const temporary_folder tools;
    tools.tool("rocm-smi", "exit 0");
    tools.tool("sycl-ls", "exit 0");
    const gpu::tools::diagnosis report = diagnose_with_tools(tools);
    const gpu::tools::diagnostic rocm = require_check(report, "ROCm");
    const gpu::tools::diagnostic oneapi = require_check(report, "Intel oneAPI");
    CHECK(rocm.status == gpu::tools::diagnostic_status::info);
    CHECK(oneapi.status == gpu::tools::diagnostic_status::info);
    CHECK_THAT(rocm.detail,
               ContainsSubstring("AMD ROCm is installed (" + (tools.path / "rocm-smi").string()));
    CHECK_THAT(oneapi.detail, ContainsSubstring("Intel oneAPI (SYCL) is installed"));
}

TEST_CASE("a wrapper this cudagap was built without is a skipped check that says how to get it",
          "[diagnose]")
{
    const gpu::tools::diagnosis report = gpu::tools::diagnose();
    for (const auto& [wrapper, built] : {std::pair{"cuBLAS", CUDAGAP_TEST_WITH_BLAS != 0},
                                         std::pair{"cuDNN", CUDAGAP_TEST_WITH_DNN != 0},
                                         std::pair{"NCCL", CUDAGAP_TEST_WITH_NCCL != 0}}) {
        const gpu::tools::diagnostic* check = report.find(wrapper);
        REQUIRE(check != nullptr);
        INFO(check->name << ": " << check->detail);
        CHECK((check->status == gpu::tools::diagnostic_status::skipped) == !built);
        CHECK(check->detail.rfind("this cudagap was built without it", 0) ==
              (built ? std::string::npos : 0));
    }
}

TEST_CASE("a group of checks that throws becomes one failed check, not a lost report", "[diagnose]")
{
    const std::vector<gpu::tools::diagnostic> fine = gpu::tools::detail::run_checks("group", [] {
        return std::vector<gpu::tools::diagnostic>{
            {"group check", gpu::tools::diagnostic_status::ok, "fine", "", ""}};
    });
    REQUIRE(fine.size() == 1);
    CHECK(fine[0].name == "group check");
    const std::vector<gpu::tools::diagnostic> thrown =
        gpu::tools::detail::run_checks("cuBLAS", []() -> std::vector<gpu::tools::diagnostic> {
            throw std::runtime_error("boom");
        });
    REQUIRE(thrown.size() == 1);
    CHECK(thrown[0].name == "cuBLAS");
    CHECK(thrown[0].status == gpu::tools::diagnostic_status::error);
    CHECK_THAT(thrown[0].detail, ContainsSubstring("a check threw: boom"));
}

TEST_CASE("recommendations lead with root causes, errors first, each fix once", "[diagnose]")
{
    gpu::tools::diagnosis report;
    report.checks = {
        {"a", gpu::tools::diagnostic_status::warning, "w", "fix the warning", ""},
        {"driver", gpu::tools::diagnostic_status::error, "broken", "install the driver", ""},
        {"handle", gpu::tools::diagnostic_status::error, "cannot create", "install the driver",
         "driver"},
        {"follows", gpu::tools::diagnostic_status::error, "also broken", "do not show me",
         "driver"},
        {"other", gpu::tools::diagnostic_status::error, "x", "fix other", ""},
        {"fine", gpu::tools::diagnostic_status::ok, "ok", "", ""},
        {"info", gpu::tools::diagnostic_status::info, "fyi", "", ""},
    };
    CHECK(report.recommendations() ==
          std::vector<std::string>{"install the driver", "fix other", "fix the warning"});
    CHECK(report.count(gpu::tools::diagnostic_status::error) == 4);
    CHECK(report.worst() == gpu::tools::diagnostic_status::error);
    CHECK_FALSE(report.healthy());
    CHECK(report.exit_code() == 1);

    const std::vector<std::string> lines = report.describe();
    CHECK(lines[0] == "[WARN] a: w");
    CHECK(lines[1] == "       fix: fix the warning");
    CHECK(lines[2] == "[FAIL] driver: broken");
    CHECK(lines[4] == "[FAIL] handle: cannot create");
    CHECK(lines[5] == "       (follows from: driver)");
    CHECK_THAT(lines.back(), ContainsSubstring("3. fix the warning"));

    gpu::tools::diagnosis only_warnings;
    only_warnings.checks = {{"a", gpu::tools::diagnostic_status::warning, "w", "fix", ""},
                            {"b", gpu::tools::diagnostic_status::skipped, "no GPU", "", ""}};
    CHECK(only_warnings.healthy());
    CHECK(only_warnings.exit_code() == 0);
    CHECK(only_warnings.exit_code(true) == 1);
    CHECK(only_warnings.worst() == gpu::tools::diagnostic_status::warning);

    gpu::tools::diagnosis clean;
    clean.checks = {{"a", gpu::tools::diagnostic_status::ok, "fine", "", ""}};
    CHECK(clean.recommendations().empty());
    CHECK(clean.describe().back() == "Your CUDA environment is ready.");
    CHECK(gpu::tools::to_string(gpu::tools::diagnostic_status::skipped) == "skipped");
}

TEST_CASE("a status outside the enumeration is described, not looked up past a table", "[diagnose]")
{
    // describe() indexed a five-entry table with the status: a status cast from a number (a
    // report read back from JSON, say) read past its end.
    gpu::tools::diagnosis report;
    report.checks = {
        {"odd", static_cast<gpu::tools::diagnostic_status>(7), "seven", "fix it", ""},
        {"negative", static_cast<gpu::tools::diagnostic_status>(-1), "minus one", "", ""},
        {"fine", gpu::tools::diagnostic_status::ok, "ok", "", ""}};
    const std::vector<std::string> lines = report.describe();
    REQUIRE(lines.size() >= 4);
    CHECK(lines[0] == "[ ?? ] odd: seven");
    CHECK(lines[1] == "       fix: fix it");
    CHECK(lines[2] == "[ ?? ] negative: minus one");
    CHECK(lines[3] == "[ OK ] fine: ok");
    CHECK(gpu::tools::to_string(static_cast<gpu::tools::diagnostic_status>(7)) == "unknown");
}

TEST_CASE("library copies: one per file, duplicates of a version warn with the fix", "[diagnose]")
{
    const temporary_folder first;
    const temporary_folder second;
    first.file("libcudagapfake.so.3.1.0", "copy one");
    fs::create_symlink("libcudagapfake.so.3.1.0", first.path / "libcudagapfake.so.3");
    fs::create_symlink("libcudagapfake.so.3", first.path / "libcudagapfake.so");
    first.file("libcudagapfake_ops.so.3", "a different library");
    fs::create_symlink("missing.so.3", first.path / "libcudagapfake.so.2"); // dangling: no copy
    const scoped_environment path("LD_LIBRARY_PATH", first.path.string());

    std::vector<gpu::tools::library_copy> copies =
        gpu::tools::find_library_copies("libcudagapfake");
    REQUIRE(copies.size() == 1);
    CHECK(copies[0].soname_version == "3.1.0");
    CHECK(copies[0].resolved_path ==
          fs::canonical(first.path / "libcudagapfake.so.3.1.0").string());
    CHECK_FALSE(copies[0].loaded);
    const gpu::tools::diagnostic single =
        gpu::tools::check_library_copies("fake copies", {"libcudagapfake"}, "FAKE_ROOT");
    CHECK(single.status == gpu::tools::diagnostic_status::ok);
    CHECK_THAT(single.detail, StartsWith("libcudagapfake.so.3:"));

    second.file("libcudagapfake.so.3", "copy two");
    second.file("libcudagapfake.so.4", "another major version");
    const scoped_environment both("LD_LIBRARY_PATH",
                                  first.path.string() + ":" + second.path.string());
    copies = gpu::tools::find_library_copies("libcudagapfake");
    CHECK(copies.size() == 3);
    const gpu::tools::diagnostic duplicate =
        gpu::tools::check_library_copies("fake copies", {"libcudagapfake"}, "FAKE_ROOT");
    INFO(duplicate.detail);
    CHECK(duplicate.status == gpu::tools::diagnostic_status::warning);
    CHECK_THAT(duplicate.detail,
               ContainsSubstring("2 copies of libcudagapfake.so.3:") &&
                   ContainsSubstring((second.path / "libcudagapfake.so.3").string()) &&
                   ContainsSubstring("libcudagapfake.so.4: "));
    CHECK_THAT(duplicate.fix,
               ContainsSubstring("LD_LIBRARY_PATH") && ContainsSubstring("set FAKE_ROOT"));
}

namespace {

// A Python environment with NVIDIA-style wheels, and a python3 on PATH that names it as the
// real one does (`import nvidia; print(*nvidia.__path__)`): nvidia/cudagapfake/lib holds
// libcudagapfake.so.3 of the wheel nvidia-cudagapfake-cu13 3.2.1, nvidia/cu13/lib (the CUDA 13
// wheels' shared folder) holds libcudagapfake.so.4 of another wheel and libcudagapfake.so.5,
// which no RECORD lists.
struct fake_python_environment {
    temporary_folder site;
    temporary_folder bin;
    std::optional<scoped_environment> path;

    fake_python_environment()
    {
        const fs::path nvidia = site.path / "nvidia";
        fs::create_directories(nvidia / "cudagapfake" / "lib");
        fs::create_directories(nvidia / "cu13" / "lib");
        fs::create_directories(nvidia / "cudagapfake" / "include");
        std::ofstream(nvidia / "cudagapfake" / "lib" / "libcudagapfake.so.3") << "wheel copy";
        std::ofstream(nvidia / "cu13" / "lib" / "libcudagapfake.so.4") << "cu13 copy";
        std::ofstream(nvidia / "cu13" / "lib" / "libcudagapfake.so.5") << "listed nowhere";
        record("nvidia_cudagapfake_cu13-3.2.1.dist-info",
               "nvidia/cudagapfake/__init__.py,,\n"
               "nvidia/cudagapfake/lib/libcudagapfake.so.3,sha256=abc,10\n");
        record("nvidia_cudagapfake_four_cu13-4.0.0.dist-info",
               "\"nvidia/cu13/lib/libcudagapfake.so.4\",sha256=def,9\n");
        record("numpy-2.0.0.dist-info", "nvidia/cu13/lib/libcudagapfake.so.5,,\n"); // not NVIDIA's
        // What python3 prints: the package folder, and lines that are no folder (skipped).
        bin.tool("python3", "echo '" + nvidia.string() + "'\necho 'not a folder'\necho /no/such");
        path.emplace("PATH", bin.path.string() + ":" + std::string(std::getenv("PATH")));
    }

    void record(const std::string& dist_info, const std::string& lines) const
    {
        fs::create_directories(site.path / dist_info);
        std::ofstream(site.path / dist_info / "RECORD") << lines;
    }
};

const gpu::tools::library_copy* copy_named(const std::vector<gpu::tools::library_copy>& copies,
                                           const std::string& file)
{
    const auto found =
        std::find_if(copies.begin(), copies.end(), [&](const gpu::tools::library_copy& c) {
            return fs::path(c.path).filename() == file && c.from_wheel;
        });
    return found == copies.end() ? nullptr : &*found;
}

} // namespace

TEST_CASE("library copies: NVIDIA's pip wheels in python3's environment are found and named",
          "[diagnose]")
{
    const fake_python_environment python;
    const temporary_folder loader;
    loader.file("libcudagapfake.so.3", "the loader's copy");
    const scoped_environment library_path("LD_LIBRARY_PATH", loader.path.string());

    const std::vector<gpu::tools::library_copy> copies =
        gpu::tools::find_library_copies("libcudagapfake");
    INFO(copies.size() << " copies");
    REQUIRE(copies.size() == 4);
    CHECK_FALSE(copies[0].from_wheel); // the loader's folders come first
    CHECK(copies[0].wheel.empty());
    const gpu::tools::library_copy* three = copy_named(copies, "libcudagapfake.so.3");
    const gpu::tools::library_copy* four = copy_named(copies, "libcudagapfake.so.4");
    const gpu::tools::library_copy* five = copy_named(copies, "libcudagapfake.so.5");
    REQUIRE(three != nullptr);
    REQUIRE(four != nullptr);
    REQUIRE(five != nullptr);
    CHECK(three->wheel == "nvidia-cudagapfake-cu13 3.2.1");
    CHECK(four->wheel == "nvidia-cudagapfake-four-cu13 4.0.0");
    CHECK(five->wheel.empty()); // numpy's RECORD is not read: only nvidia_* wheels are
    CHECK(three->describe() ==
          (python.site.path / "nvidia/cudagapfake/lib/libcudagapfake.so.3").string() +
              " (pip wheel nvidia-cudagapfake-cu13 3.2.1)");
    CHECK_THAT(five->describe(),
               ContainsSubstring("libcudagapfake.so.5 (in a pip wheel's folder)"));

    // The loader's copy and the wheel's are two copies of libcudagapfake.so.3: a warning that
    // names the wheel, and a fix that says what a wheel's copy is for.
    const gpu::tools::diagnostic check =
        gpu::tools::check_library_copies("fake copies", {"libcudagapfake"}, "FAKE_ROOT");
    INFO(check.detail);
    CHECK(check.status == gpu::tools::diagnostic_status::warning);
    CHECK_THAT(check.detail, ContainsSubstring("2 copies of libcudagapfake.so.3: " +
                                               (loader.path / "libcudagapfake.so.3").string() +
                                               " " + three->describe()) &&
                                 ContainsSubstring("libcudagapfake.so.4: " + four->describe()));
    CHECK_THAT(check.fix, ContainsSubstring("A copy from a pip wheel is the one PyTorch"));
}

TEST_CASE("library copies: a wheel folder on LD_LIBRARY_PATH counts once, as the wheel's",
          "[diagnose]")
{
    const fake_python_environment python;
    const fs::path wheel_lib = python.site.path / "nvidia" / "cudagapfake" / "lib";
    const scoped_environment library_path("LD_LIBRARY_PATH", wheel_lib.string());
    const std::vector<gpu::tools::library_copy> copies =
        gpu::tools::find_library_copies("libcudagapfake");
    REQUIRE(copies.size() == 3);
    CHECK(copies[0].path == (wheel_lib / "libcudagapfake.so.3").string());
    CHECK(copies[0].from_wheel);
    CHECK(copies[0].wheel == "nvidia-cudagapfake-cu13 3.2.1");
    const gpu::tools::diagnostic check =
        gpu::tools::check_library_copies("fake copies", {"libcudagapfake"}, "FAKE_ROOT");
    CHECK(check.status == gpu::tools::diagnostic_status::ok);
    CHECK_THAT(check.fix, !ContainsSubstring("pip wheel"));
}

TEST_CASE("library copies: no python3, a failing one, or no NVIDIA wheel adds no copy",
          "[diagnose]")
{
    const temporary_folder loader;
    loader.file("libcudagapfake.so.3", "the loader's copy");
    const scoped_environment library_path("LD_LIBRARY_PATH", loader.path.string());
    const temporary_folder bin;
    for (const char* script : {"exit 1", "echo 'ModuleNotFoundError' >&2", ""}) {
        INFO("python3: '" << script << "'");
        const temporary_folder fresh; // a new python3 path: no answer of another one is reused
        fresh.tool("python3", script);
        const scoped_environment path("PATH", fresh.path.string());
        const std::vector<gpu::tools::library_copy> copies =
            gpu::tools::find_library_copies("libcudagapfake");
        REQUIRE(copies.size() == 1);
        CHECK_FALSE(copies[0].from_wheel);
    }
    const scoped_environment no_python("PATH", bin.path.string()); // an empty folder
    CHECK(gpu::tools::find_library_copies("libcudagapfake").size() == 1);
}

TEST_CASE("the loaded copy of a library is found and marked", "[diagnose]")
{
    const std::optional<std::string> libc = gpu::tools::loaded_library_path("libc");
    REQUIRE(libc.has_value());
    CHECK_THAT(*libc, ContainsSubstring("libc.so"));
    CHECK_FALSE(gpu::tools::loaded_library_path("libcudagap_not_a_library").has_value());
    const std::vector<gpu::tools::library_copy> copies = gpu::tools::find_library_copies("libc");
    CHECK(std::any_of(copies.begin(), copies.end(),
                      [](const gpu::tools::library_copy& c) { return c.loaded; }));
}

TEST_CASE("record_failure turns a thrown library error into a failed check", "[diagnose]")
{
    gpu::tools::diagnostic check{.name = "cuBLAS handle"};
    const gpu::error failure("cublasCreate(&raw)", "CUBLAS_STATUS_NOT_INITIALIZED", 1,
                             "the library was not initialized", "install a driver", -1,
                             std::source_location::current());
    gpu::tools::detail::record_failure(check, failure);
    CHECK(check.status == gpu::tools::diagnostic_status::error);
    CHECK(check.detail ==
          "cublasCreate(&raw): CUBLAS_STATUS_NOT_INITIALIZED (1): the library was not initialized");
    CHECK(check.fix == "install a driver");
    CHECK(check.caused_by == (gpu::is_available() ? "" : "GPUs"));

    gpu::tools::diagnostic without_hint{.name = "cuDNN handle"};
    gpu::tools::detail::record_failure(
        without_hint, gpu::error("cudnnCreate(&raw)", "CUDNN_STATUS_INTERNAL_ERROR", 4000,
                                 "internal", "", 0, std::source_location::current()));
    CHECK(without_hint.fix == "run cudagap-doctor on a machine with a GPU");
}
