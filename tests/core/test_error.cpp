// gpu/error.hpp: status names, messages, hints, stickiness and the checking macro, against the
// real CUDA runtime (which answers these questions without a GPU).
#include <gpu/error.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/device.hpp>
#include <gpu/version.hpp>

#include "catch.hpp"

#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

namespace {
const std::vector<std::pair<cudaError_t, std::string>> every_cuda_status = {
#include "cuda_error_codes.inc"
};
} // namespace

TEST_CASE("every cudaError_t of this toolkit has its symbolic name", "[error]")
{
    REQUIRE(every_cuda_status.size() > 100);
    for (const auto& [status, name] : every_cuda_status) {
        INFO("status " << static_cast<int>(status));
        CHECK(gpu::cuda_status_name(status) == name);
        CHECK_FALSE(gpu::cuda_status_message(status).empty());
    }
}

TEST_CASE("the statuses of the common-error table are named", "[error]")
{
    CHECK(gpu::cuda_status_name(cudaErrorMemoryAllocation) == "cudaErrorMemoryAllocation");
    CHECK(gpu::cuda_status_name(cudaErrorInsufficientDriver) == "cudaErrorInsufficientDriver");
    CHECK(gpu::cuda_status_name(cudaErrorNoKernelImageForDevice) ==
          "cudaErrorNoKernelImageForDevice");
    CHECK(gpu::cuda_status_name(cudaErrorIllegalAddress) == "cudaErrorIllegalAddress");
    CHECK(static_cast<int>(cudaErrorMemoryAllocation) == 2);
    CHECK(static_cast<int>(cudaErrorInsufficientDriver) == 35);
    CHECK(static_cast<int>(cudaErrorNoKernelImageForDevice) == 209);
    CHECK(static_cast<int>(cudaErrorIllegalAddress) == 700);
}

TEST_CASE("an unknown status gets a numeric name instead of a misleading one", "[error]")
{
    CHECK(gpu::cuda_status_name(static_cast<cudaError_t>(12345)) == "cudaError(12345)");
}

TEST_CASE("sticky statuses are the ones CUDA documents as corrupting the context", "[error]")
{
    for (const cudaError_t sticky :
         {cudaErrorIllegalAddress, cudaErrorLaunchFailure, cudaErrorAssert, cudaErrorLaunchTimeout,
          cudaErrorHardwareStackError, cudaErrorIllegalInstruction, cudaErrorMisalignedAddress,
          cudaErrorInvalidAddressSpace, cudaErrorInvalidPc}) {
        INFO(gpu::cuda_status_name(sticky));
        CHECK(gpu::is_sticky(sticky));
    }
    for (const cudaError_t recoverable :
         {cudaSuccess, cudaErrorMemoryAllocation, cudaErrorInvalidValue,
          cudaErrorInsufficientDriver, cudaErrorNoKernelImageForDevice, cudaErrorNotReady,
          cudaErrorLaunchOutOfResources}) {
        INFO(gpu::cuda_status_name(recoverable));
        CHECK_FALSE(gpu::is_sticky(recoverable));
    }
}

TEST_CASE("the hint for an insufficient driver names both CUDA versions and the fix", "[error]")
{
    const std::string hint = gpu::hint_for(cudaErrorInsufficientDriver);
    CHECK_THAT(hint, ContainsSubstring("CUDA " + gpu::runtime_version().to_string() + " runtime"));
    CHECK_THAT(hint,
               ContainsSubstring("branch " + gpu::minimum_driver_for(gpu::runtime_version())));
    CHECK_THAT(hint, ContainsSubstring("nvidia.com/drivers"));
    const gpu::driver_info driver = gpu::driver_version();
    if (driver.installed()) {
        CHECK_THAT(hint,
                   ContainsSubstring("supports CUDA up to " + driver.supported_cuda.to_string()));
    } else {
        CHECK_THAT(hint, ContainsSubstring("no NVIDIA driver is loaded"));
        CHECK_THAT(hint, ContainsSubstring("cudagap-doctor"));
    }
}

TEST_CASE("the hint for out of memory says what to reduce", "[error]")
{
    const std::string hint = gpu::hint_for(cudaErrorMemoryAllocation);
    CHECK_THAT(hint, ContainsSubstring("out of memory"));
    CHECK_THAT(hint, ContainsSubstring("batch"));
    CHECK_THAT(hint, ContainsSubstring("FP16/BF16"));
    CHECK_THAT(hint, ContainsSubstring("nvidia-smi"));
}

TEST_CASE("the out-of-memory hint for a device quotes that device's memory", "[error][gpu]")
{
    for (const gpu::device& dev : gpu::devices()) {
        const std::string hint = gpu::hint_for(cudaErrorMemoryAllocation, dev.id());
        CHECK_THAT(hint, ContainsSubstring("on device " + std::to_string(dev.id()) + " with "));
        CHECK_THAT(hint,
                   ContainsSubstring(" free of " + gpu::format_bytes(dev.memory().total_bytes)));
    }
}

TEST_CASE("the hint for a missing kernel image names the built architectures and the fix",
          "[error]")
{
    const std::string hint = gpu::hint_for(cudaErrorNoKernelImageForDevice, -1);
    CHECK_THAT(hint, ContainsSubstring("this build of cudagap has kernels for"));
    CHECK_THAT(hint, ContainsSubstring("-DCMAKE_CUDA_ARCHITECTURES="));
    const std::string built = gpu::built_cuda_architectures_string();
    CHECK_THAT(hint, ContainsSubstring("CMAKE_CUDA_ARCHITECTURES=" +
                                       (built.empty() ? std::string("none") : built)));
    for (const auto& arch : gpu::built_cuda_architectures()) {
        if (arch.has_sass) {
            CHECK_THAT(hint, ContainsSubstring("sm_" + std::to_string(arch.sm)));
        }
    }
}

TEST_CASE("the hint for a sticky error says the process must restart", "[error]")
{
    for (const cudaError_t status : {cudaErrorIllegalAddress, cudaErrorLaunchFailure}) {
        const std::string hint = gpu::hint_for(status);
        CHECK_THAT(hint, ContainsSubstring("process must restart"));
        CHECK_THAT(hint, ContainsSubstring("compute-sanitizer"));
    }
}

TEST_CASE("statuses without specific advice get no hint rather than a vague one", "[error]")
{
    CHECK(gpu::hint_for(cudaErrorNotReady).empty());
    CHECK(gpu::hint_for(cudaErrorInvalidValue).empty());
}

TEST_CASE("other common statuses get specific hints", "[error]")
{
    CHECK_THAT(gpu::hint_for(cudaErrorNoDevice), ContainsSubstring("CUDA_VISIBLE_DEVICES"));
    CHECK_THAT(gpu::hint_for(cudaErrorStubLibrary), ContainsSubstring("LD_LIBRARY_PATH"));
    CHECK_THAT(gpu::hint_for(cudaErrorCudartUnloading), ContainsSubstring("static destructors"));
    CHECK_THAT(gpu::hint_for(cudaErrorInvalidResourceHandle), ContainsSubstring("moved-from"));
}

TEST_CASE("cuda_error reads '<api>: <name> (<code>): <message>' then the hint", "[error]")
{
    const gpu::cuda_error e(cudaErrorInsufficientDriver, "cudaGetDeviceCount(&n)",
                            "update the driver", -1, std::source_location::current());
    const std::string what = e.what();
    CHECK(what == "cudaGetDeviceCount(&n): cudaErrorInsufficientDriver (35): " +
                      gpu::cuda_status_message(cudaErrorInsufficientDriver) +
                      "\nhint: update the driver");
    CHECK(e.api() == "cudaGetDeviceCount(&n)");
    CHECK(e.status() == cudaErrorInsufficientDriver);
    CHECK(e.code() == 35);
    CHECK(e.status_name() == "cudaErrorInsufficientDriver");
    CHECK(e.hint() == "update the driver");
    CHECK(e.device() == -1);
    CHECK_FALSE(e.is_sticky());
}

TEST_CASE("an error without a hint has no hint line", "[error]")
{
    const gpu::cuda_error e(cudaErrorInvalidValue, "cudaMemset(p, 0, n)", "", 0,
                            std::source_location::current());
    CHECK_THAT(std::string(e.what()), !ContainsSubstring("hint:"));
    CHECK(e.device() == 0);
}

TEST_CASE("cuda_error::is_sticky follows the status", "[error]")
{
    const gpu::cuda_error e(cudaErrorIllegalAddress, "kernel",
                            gpu::hint_for(cudaErrorIllegalAddress), 0,
                            std::source_location::current());
    CHECK(e.is_sticky());
}

TEST_CASE("GPU_CUDA_CHECK passes cudaSuccess and throws with the expression and location",
          "[error]")
{
    CHECK_NOTHROW(GPU_CUDA_CHECK(cudaSuccess));
    const int line = __LINE__ + 2;
    try {
        GPU_CUDA_CHECK(static_cast<cudaError_t>(cudaErrorInvalidValue));
        FAIL("GPU_CUDA_CHECK did not throw");
    } catch (const gpu::cuda_error& e) {
        CHECK(e.status() == cudaErrorInvalidValue);
        CHECK_THAT(e.api(), ContainsSubstring("cudaErrorInvalidValue"));
        CHECK(static_cast<int>(e.where().line()) == line);
        CHECK_THAT(std::string(e.where().file_name()), ContainsSubstring("test_error.cpp"));
    }
}

TEST_CASE("GPU_CUDA_CHECK on a real call without a driver gives the driver hint", "[error]")
{
    int count = 0;
    if (gpu::is_available()) {
        CHECK_NOTHROW(GPU_CUDA_CHECK(cudaGetDeviceCount(&count)));
        CHECK(count > 0);
        return;
    }
    try {
        GPU_CUDA_CHECK(cudaGetDeviceCount(&count));
        FAIL("cudaGetDeviceCount succeeded although no device is usable");
    } catch (const gpu::cuda_error& e) {
        CHECK_THAT(std::string(e.what()), StartsWith("cudaGetDeviceCount(&count): "));
        CHECK_THAT(std::string(e.what()), ContainsSubstring("\nhint: "));
        CHECK(e.device() == -1);
    }
}

TEST_CASE("out_of_memory carries requested, free and total bytes in numbers and words", "[error]")
{
    constexpr std::size_t pib = std::size_t{1} << 50;
    constexpr std::size_t gib = std::size_t{1} << 30;
    const gpu::out_of_memory e("cudaMallocAsync(&p, n, s)", pib, 3 * gib, 80 * gib, 0,
                               std::source_location::current());
    CHECK(e.requested_bytes() == pib);
    CHECK(e.free_bytes() == 3 * gib);
    CHECK(e.total_bytes() == 80 * gib);
    CHECK(e.status() == cudaErrorMemoryAllocation);
    const std::string what = e.what();
    CHECK_THAT(what, StartsWith("cudaMallocAsync(&p, n, s): cudaErrorMemoryAllocation (2): "));
    CHECK_THAT(what,
               ContainsSubstring("requested 1.00 PiB on device 0 with 3.00 GiB free of 80.00 GiB"));
    // Nothing in the ledger holds device 0 here: the holders line says so, and the generic fix
    // follows.
    CHECK_THAT(what, ContainsSubstring("who holds device 0: nothing the ledger tracks"));
    CHECK_THAT(what, ContainsSubstring("reduce the batch"));
}

TEST_CASE("out_of_memory names the device's holders from the ledger and the largest one's fix",
          "[error]")
{
    // Device 9 of the process's ledger, which no other test uses; the pointers are never
    // dereferenced (the ledger only keys on them).
    constexpr int device = 9;
    constexpr std::size_t mib = std::size_t{1} << 20;
    gpu::memory_ledger& ledger = gpu::memory_ledger::global();
    alignas(4) static char activations[1], parameters[1];
    const auto activations_tag = gpu::memory_tag::standard(gpu::memory_category::activations);
    ledger.record_allocation(device, activations, 300 * mib, activations_tag);
    ledger.record_allocation(device, parameters, 100 * mib,
                             gpu::memory_tag::standard(gpu::memory_category::parameters));
    const gpu::out_of_memory e("cudaMallocAsync(&p, n, s)", 64 * mib, 0, 0, device,
                               std::source_location::current());
    CHECK(ledger.record_free(device, activations).has_value());
    CHECK(ledger.record_free(device, parameters).has_value());
    const std::string what = e.what();
    CHECK_THAT(what, ContainsSubstring("requested 64.00 MiB on device 9"));
    CHECK_THAT(what, ContainsSubstring("who holds device 9: activations 300.00 MiB"));
    CHECK_THAT(what, ContainsSubstring("parameters 100.00 MiB"));
    CHECK_THAT(what, ContainsSubstring("fix for activations, the largest: lower the batch size"));
    CHECK_THAT(what, !ContainsSubstring("cudagap holds"));
}

TEST_CASE("every cudagap error is a gpu::error and a std::runtime_error", "[error]")
{
    STATIC_REQUIRE(std::is_base_of_v<gpu::error, gpu::cuda_error>);
    STATIC_REQUIRE(std::is_base_of_v<gpu::cuda_error, gpu::out_of_memory>);
    STATIC_REQUIRE(std::is_base_of_v<std::runtime_error, gpu::error>);
    STATIC_REQUIRE(std::is_nothrow_copy_constructible_v<gpu::cuda_error>);
    STATIC_REQUIRE(std::is_nothrow_copy_constructible_v<gpu::out_of_memory>);
}

TEST_CASE("format_bytes uses binary units with two decimals", "[error]")
{
    CHECK(gpu::format_bytes(0) == "0 B");
    CHECK(gpu::format_bytes(1023) == "1023 B");
    CHECK(gpu::format_bytes(1024) == "1.00 KiB");
    CHECK(gpu::format_bytes(1536) == "1.50 KiB");
    CHECK(gpu::format_bytes(std::size_t{3} << 29) == "1.50 GiB");
    CHECK(gpu::format_bytes(std::size_t{1} << 50) == "1.00 PiB");
}
