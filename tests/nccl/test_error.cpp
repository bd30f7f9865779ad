// gpu/nccl/error.hpp, version.hpp and types.hpp: status names, messages, hints, GPU_NCCL_CHECK
// and the versions, against the real NCCL (which answers these without a GPU).
#include <gpu/nccl/error.hpp>
#include <gpu/nccl/types.hpp>
#include <gpu/nccl/version.hpp>

#include "catch.hpp"

#include <cuda_bf16.h> // first: nccl.h declares ncclBfloat16 only when the bf16 types exist
#include <nccl.h>

#include <chrono>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::EndsWith;
using Catch::Matchers::StartsWith;

namespace {
const std::vector<std::pair<ncclResult_t, std::string>> every_nccl_status = {
#include "nccl_status_codes.inc"
};

gpu::nccl::detail::hint_facts facts_with_gpu()
{
    gpu::nccl::detail::hint_facts facts;
    facts.gpu_available = true;
    facts.nccl = {{2, 28, 9}, {2, 28, 9}};
    return facts;
}

std::string hint(ncclResult_t status, std::string_view says = {}, std::string_view context = {})
{
    return gpu::nccl::detail::hint_for(status, says, context, facts_with_gpu());
}
} // namespace

TEST_CASE("every ncclResult_t of this NCCL has its name, NCCL's sentence and a hint", "[nccl]")
{
    REQUIRE(every_nccl_status.size() >= 8);
    for (const auto& [status, name] : every_nccl_status) {
        INFO(name);
        CHECK(gpu::nccl::status_name(status) == name);
        const std::string message = gpu::nccl::status_message(status);
        CHECK_FALSE(message.empty());
        CHECK(message != "unknown result code");
        // NCCL's advice to set NCCL_DEBUG moves to the hint, which always gives it.
        CHECK_THAT(message, !ContainsSubstring("NCCL_DEBUG"));
        if (status != ncclSuccess) {
            CHECK_THAT(hint(status),
                       EndsWith("set NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET "
                                "for the set-up) on every rank to see what NCCL did"));
        }
    }
    CHECK(gpu::nccl::status_message(ncclInvalidUsage) == "invalid usage");
    CHECK(gpu::nccl::status_message(ncclUnhandledCudaError) == "unhandled cuda error");
    CHECK(gpu::nccl::detail::hint_for(ncclSuccess, {}, {}, facts_with_gpu()).empty());
}

TEST_CASE("an unknown NCCL status gets a numeric name", "[nccl]")
{
    CHECK(gpu::nccl::status_name(static_cast<ncclResult_t>(99)) == "ncclResult(99)");
    CHECK_THAT(hint(static_cast<ncclResult_t>(99)),
               StartsWith("an NCCL status that this cudagap does not know"));
}

TEST_CASE("the hints name the usual causes of a multi-GPU failure", "[nccl]")
{
    // The network interface and shared memory.
    CHECK_THAT(hint(ncclSystemError), ContainsSubstring("NCCL_SOCKET_IFNAME=<interface>") &&
                                          ContainsSubstring("/dev/shm"));
    // A duplicated GPU: from NCCL's text, and among the causes of ncclInvalidUsage.
    CHECK_THAT(hint(ncclInvalidUsage,
                    "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000"),
               StartsWith("two ranks use the same GPU: give each rank its own device"));
    // NCCL never clears its text: a stale "Duplicate GPU" must not name the cause of another
    // status.
    CHECK_THAT(hint(ncclSystemError,
                    "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000"),
               StartsWith("a system call or socket failed"));
    CHECK_THAT(hint(ncclRemoteError,
                    "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000"),
               StartsWith("another rank failed"));
    CHECK_THAT(hint(ncclInvalidUsage), ContainsSubstring("two ranks use the same GPU") &&
                                           ContainsSubstring("gpu::nccl::group_scope") &&
                                           ContainsSubstring("same collectives in the same order"));
    // A version mismatch between ranks, with this process's versions.
    CHECK_THAT(hint(ncclRemoteError),
               ContainsSubstring("every rank must load the same NCCL release") &&
                   ContainsSubstring("this process loaded NCCL 2.28.9"));
    // The GPU: out of memory, or no GPU at all with the reason.
    CHECK_THAT(hint(ncclUnhandledCudaError), ContainsSubstring("NCCL_BUFFSIZE"));
    gpu::nccl::detail::hint_facts no_gpu = facts_with_gpu();
    no_gpu.gpu_available = false;
    no_gpu.unavailable_reason = "no NVIDIA driver is loaded";
    CHECK_THAT(gpu::nccl::detail::hint_for(ncclUnhandledCudaError, {}, {}, no_gpu),
               StartsWith("no usable GPU: no NVIDIA driver is loaded"));
    // What the call was doing.
    CHECK_THAT(hint(ncclInvalidArgument, {}, "all_reduce of 10 Float32 elements on rank 0 of 2"),
               ContainsSubstring("(all_reduce of 10 Float32 elements on rank 0 of 2)"));
}

TEST_CASE("a loaded NCCL older than the headers is named in every hint", "[nccl]")
{
    gpu::nccl::detail::hint_facts older = facts_with_gpu();
    older.nccl.loaded = {2, 21, 5};
    REQUIRE_FALSE(older.nccl.compatible());
    CHECK_THAT(gpu::nccl::detail::hint_for(ncclInternalError, {}, {}, older),
               ContainsSubstring(
                   "the loaded NCCL 2.21.5 is older than the 2.28.9 cudagap was compiled against"));
    CHECK_THAT(
        gpu::nccl::detail::hint_for(ncclRemoteError, {}, {}, older),
        ContainsSubstring("this process loaded NCCL 2.21.5, cudagap was compiled against 2.28.9"));
}

TEST_CASE("GPU_NCCL_CHECK throws nccl_error with NCCL's own text and a hint", "[nccl]")
{
    // A real NCCL failure that needs no GPU: a collective on a null communicator.
    try {
        GPU_NCCL_CHECK(ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, nullptr, nullptr));
        FAIL("no exception");
    } catch (const gpu::nccl::nccl_error& e) {
        const std::string what = e.what();
        INFO(what);
        CHECK(e.status() == ncclInvalidArgument);
        CHECK(e.status_name() == "ncclInvalidArgument");
        CHECK_THAT(
            what, StartsWith(
                      "ncclAllReduce(nullptr, nullptr, 0, ncclFloat32, ncclSum, nullptr, nullptr): "
                      "ncclInvalidArgument (4): invalid argument; NCCL says: "));
        CHECK_THAT(e.message(), ContainsSubstring("comm argument is NULL"));
        CHECK_THAT(e.hint(),
                   StartsWith("NCCL rejected an argument") && ContainsSubstring("NCCL_DEBUG=INFO"));
        const gpu::error& base = e;
        CHECK(base.code() == 4);
    }
    static_assert(std::is_base_of_v<gpu::error, gpu::nccl::nccl_error>);
}

TEST_CASE("a timeout is an nccl_error in progress, with the time and what to check", "[nccl]")
{
    try {
        gpu::nccl::detail::throw_timeout("ncclCommInitRankConfig", std::chrono::milliseconds(1500),
                                         "not all 4 ranks joined");
        FAIL("no exception");
    } catch (const gpu::nccl::nccl_error& e) {
        INFO(e.what());
        CHECK(e.status() == ncclInProgress);
        CHECK_THAT(
            std::string(e.what()),
            StartsWith("ncclCommInitRankConfig: ncclInProgress (7): did not finish within 1.5 s"));
        CHECK_THAT(e.hint(), StartsWith("not all 4 ranks joined; set NCCL_DEBUG=INFO"));
    }
}

TEST_CASE("the NCCL versions: compiled against and loaded, without a GPU", "[nccl]")
{
    const gpu::nccl::version_info info = gpu::nccl::version();
    CHECK(info.compiled == gpu::semantic_version{NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH});
    int code = 0;
    REQUIRE(ncclGetVersion(&code) == ncclSuccess);
    CHECK(info.loaded == gpu::nccl::decode_version(code));
    CHECK(info.loaded.major == 2);
    CHECK(info.compatible());
    CHECK(gpu::nccl::decode_version(NCCL_VERSION_CODE) == info.compiled);
    CHECK(gpu::nccl::decode_version(22809) == gpu::semantic_version{2, 28, 9});
    CHECK(gpu::nccl::decode_version(2708) == gpu::semantic_version{2, 7, 8});
    CHECK_FALSE(gpu::nccl::version_info{{2, 28, 9}, {2, 27, 3}}.compatible());
    CHECK(gpu::nccl::version_info{{2, 28, 9}, {2, 29, 0}}.compatible());
}

TEST_CASE("element types map to NCCL's at compile time", "[nccl]")
{
    using gpu::nccl::data_type_of;
    static_assert(data_type_of<float> == ncclFloat32);
    static_assert(data_type_of<double> == ncclFloat64);
    static_assert(data_type_of<__half> == ncclFloat16);
    static_assert(data_type_of<__nv_bfloat16> == ncclBfloat16);
    static_assert(data_type_of<std::int8_t> == ncclInt8);
    static_assert(data_type_of<std::uint8_t> == ncclUint8);
    static_assert(data_type_of<std::int32_t> == ncclInt32);
    static_assert(data_type_of<std::uint32_t> == ncclUint32);
    static_assert(data_type_of<std::int64_t> == ncclInt64);
    static_assert(data_type_of<std::uint64_t> == ncclUint64);
    // Nothing is reinterpreted: a type NCCL has no name for does not compile.
    static_assert(!gpu::nccl::element<char>);
    static_assert(!gpu::nccl::element<long double>);
    static_assert(!gpu::nccl::element<const float>);
    CHECK(gpu::nccl::to_string(ncclBfloat16) == "Bfloat16");
    CHECK(gpu::nccl::to_string(static_cast<ncclDataType_t>(77)) == "unknown");
    CHECK(gpu::nccl::to_string(gpu::nccl::reduction::avg) == "avg");
    CHECK(gpu::nccl::to_string(static_cast<gpu::nccl::reduction>(9)) == "unknown");
}
