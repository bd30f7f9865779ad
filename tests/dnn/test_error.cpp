// gpu/dnn/error.hpp: status names, messages, hints and GPU_CUDNN_CHECK, against the real cuDNN
// (which answers these questions without a GPU).
#include <gpu/device.hpp>
#include <gpu/dnn/convolution_planning.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/memory_ledger.hpp>

#include "candidates.hpp"
#include "catch.hpp"
#include "convolution_selection.hpp"
#include "memory_tags.hpp" // the layer's private tags

#include <cudnn_ops.h>

#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

namespace {
const std::vector<std::pair<cudnnStatus_t, std::string>> every_cudnn_status = {
#include "cudnn_status_codes.inc"
};

gpu::dnn::detail::hint_facts facts_with_gpu()
{
    gpu::dnn::detail::hint_facts facts;
    facts.gpu_available = true;
    facts.cudnn = {{9, 19, 0}, {9, 19, 0}, {13, 0}};
    facts.runtime = {13, 0};
    facts.free_bytes = std::size_t{3} << 30;
    facts.total_bytes = std::size_t{80} << 30;
    return facts;
}
} // namespace

TEST_CASE("every cudnnStatus_t of this cuDNN has its name and a description", "[dnn]")
{
    REQUIRE(every_cudnn_status.size() > 40);
    for (const auto& [status, name] : every_cudnn_status) {
        INFO("status " << static_cast<int>(status));
        CHECK(gpu::dnn::status_name(status) == name);
        const std::string message = gpu::dnn::status_message(status);
        CHECK_FALSE(message.empty());
        CHECK(message != "unknown cuDNN status");
    }
}

TEST_CASE("the statuses of the common-error table have their cuDNN names and codes", "[dnn]")
{
    CHECK(gpu::dnn::status_name(CUDNN_STATUS_NOT_INITIALIZED) == "CUDNN_STATUS_NOT_INITIALIZED");
    CHECK(gpu::dnn::status_name(CUDNN_STATUS_BAD_PARAM) == "CUDNN_STATUS_BAD_PARAM");
    CHECK(gpu::dnn::status_name(CUDNN_STATUS_NOT_SUPPORTED) == "CUDNN_STATUS_NOT_SUPPORTED");
    CHECK(static_cast<int>(CUDNN_STATUS_NOT_INITIALIZED) == 1001);
    CHECK(static_cast<int>(CUDNN_STATUS_BAD_PARAM) == 2000);
    CHECK(static_cast<int>(CUDNN_STATUS_NOT_SUPPORTED) == 3000);
}

TEST_CASE("an unknown cuDNN status gets a numeric name and its category", "[dnn]")
{
    CHECK(gpu::dnn::status_name(static_cast<cudnnStatus_t>(12345)) == "cudnnStatus(12345)");
    CHECK(gpu::dnn::status_message(static_cast<cudnnStatus_t>(3999)) ==
          "the configuration is not supported");
    CHECK(gpu::dnn::status_message(static_cast<cudnnStatus_t>(12345)) == "unknown cuDNN status");
}

TEST_CASE("GPU_CUDNN_CHECK throws dnn_error with the call, status, cuDNN's own text and a hint",
          "[dnn]")
{
    cudnnTensorDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateTensorDescriptor(&raw));
    REQUIRE(raw != nullptr);
    try {
        GPU_CUDNN_CHECK(
            cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 0, 3, 4, 4));
        FAIL("a zero batch was accepted");
    } catch (const gpu::dnn::dnn_error& e) {
        CHECK(e.code() == CUDNN_STATUS_BAD_PARAM);
        CHECK(e.status_name() == "CUDNN_STATUS_BAD_PARAM");
        CHECK_THAT(e.api(), StartsWith("cudnnSetTensor4dDescriptor(raw, CUDNN_TENSOR_NCHW"));
        CHECK_THAT(e.message(), ContainsSubstring("cuDNN says:"));
        CHECK_THAT(e.message(), ContainsSubstring("n <= 0"));
        CHECK_THAT(e.hint(), ContainsSubstring("cuDNN rejected a value"));
        const std::string what = e.what();
        CHECK_THAT(what, StartsWith(e.api() + ": CUDNN_STATUS_BAD_PARAM (2000): "));
        CHECK_THAT(what, ContainsSubstring("\nhint: "));
        CHECK(e.where().line() > 0);
    }
    // cuDNN's text was taken by that error: the next one does not repeat it.
    CHECK(gpu::dnn::take_last_error_string().empty());
    static_cast<void>(cudnnDestroyTensorDescriptor(raw));
}

TEST_CASE("a dnn_error is a gpu::error and a runtime_error", "[dnn]")
{
    STATIC_REQUIRE(std::is_base_of_v<gpu::error, gpu::dnn::dnn_error>);
    STATIC_REQUIRE(std::is_nothrow_copy_constructible_v<gpu::dnn::dnn_error>);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    STATIC_REQUIRE(
        std::is_same_v<gpu::dnn_error, gpu::dnn::dnn_error>); // the old name, one release
#pragma GCC diagnostic pop
    try {
        gpu::detail::throw_error(CUDNN_STATUS_NOT_SUPPORTED_LAYOUT, "some_call()",
                                 std::source_location::current(), "fp16 nchw");
        FAIL("throw_error returned");
    } catch (const gpu::error& e) {
        REQUIRE(dynamic_cast<const gpu::dnn::dnn_error*>(&e) != nullptr);
        CHECK(dynamic_cast<const gpu::dnn::dnn_error&>(e).status() ==
              CUDNN_STATUS_NOT_SUPPORTED_LAYOUT);
        CHECK(e.status_name() == "CUDNN_STATUS_NOT_SUPPORTED_LAYOUT");
        CHECK_THAT(e.hint(), ContainsSubstring("fp16 nchw"));
        CHECK_THAT(e.message(), ContainsSubstring("memory layout is not supported"));
    }
}

TEST_CASE("NOT_INITIALIZED without a GPU says so, with the CUDA runtime's reason", "[dnn]")
{
    gpu::dnn::detail::hint_facts facts = facts_with_gpu();
    facts.gpu_available = false;
    facts.unavailable_reason = "cudaGetDeviceCount failed with cudaErrorInsufficientDriver (35)";
    const std::string hint =
        gpu::dnn::detail::hint_for(CUDNN_STATUS_NOT_INITIALIZED, "", "", facts);
    CHECK_THAT(hint, StartsWith("no usable GPU: "));
    CHECK_THAT(hint, ContainsSubstring("cudaErrorInsufficientDriver"));
}

TEST_CASE("NOT_INITIALIZED with mismatched cuDNN versions names both and the fix", "[dnn]")
{
    gpu::dnn::detail::hint_facts facts = facts_with_gpu();
    facts.cudnn = {{9, 19, 0}, {9, 1, 0}, {12, 0}};
    const std::string hint =
        gpu::dnn::detail::hint_for(CUDNN_STATUS_NOT_INITIALIZED, "", "", facts);
    CHECK_THAT(hint, ContainsSubstring(
                         "loaded cuDNN 9.1.0 cannot serve code compiled against cuDNN 9.19.0"));
    CHECK_THAT(hint, ContainsSubstring("LD_LIBRARY_PATH"));
    CHECK_THAT(hint, ContainsSubstring("built for CUDA 12.0 but this process runs CUDA 13.0"));
    CHECK_THAT(hint, ContainsSubstring("nvidia-cudnn-cu13"));
}

TEST_CASE("NOT_INITIALIZED with a GPU and matching versions names the three causes and memory",
          "[dnn]")
{
    const std::string hint =
        gpu::dnn::detail::hint_for(CUDNN_STATUS_NOT_INITIALIZED, "", "", facts_with_gpu());
    CHECK_THAT(hint, ContainsSubstring("no driver or GPU"));
    CHECK_THAT(hint, ContainsSubstring("cuDNN 9.19.0 (built for CUDA 13.0)"));
    CHECK_THAT(hint, ContainsSubstring("3.00 GiB free of 80.00 GiB"));
    CHECK_THAT(hint, ContainsSubstring("cudagap-doctor"));
}

TEST_CASE("an allocation failure names who holds the device, from the ledger", "[dnn]")
{
    // Device 12 of the process's ledger, which no other test uses; the pointer is only a key.
    constexpr int device = 12;
    alignas(4) static char workspace[1];
    const gpu::memory_tag plan = gpu::dnn::detail::cudnn_plan_workspace_tag();
    gpu::memory_ledger::global().record_allocation(device, workspace, std::size_t{1} << 30, plan);
    gpu::dnn::detail::hint_facts facts = facts_with_gpu();
    facts.device = device;
    const std::string hint =
        gpu::dnn::detail::hint_for(static_cast<cudnnStatus_t>(4004), "", "", facts);
    CHECK(gpu::memory_ledger::global().record_free(device, workspace).has_value());
    CHECK_THAT(hint, ContainsSubstring("3.00 GiB free of 80.00 GiB") &&
                         ContainsSubstring("who holds device 12: cuDNN plan workspace 1.00 GiB") &&
                         ContainsSubstring("lower cuDNN's workspace budget"));
}

TEST_CASE("cuDNN's own memory carries tags named for it, in their categories", "[dnn]")
{
    using gpu::memory_category;
    CHECK(gpu::dnn::detail::cudnn_plan_workspace_tag().name() == "cuDNN plan workspace");
    CHECK(gpu::dnn::detail::cudnn_plan_workspace_tag().category() == memory_category::workspace);
    CHECK(gpu::dnn::detail::cudnn_planning_scratch_tag().category() ==
          memory_category::planning_scratch);
    CHECK(gpu::dnn::detail::cudnn_dropout_states_tag().category() == memory_category::scratch);
    // Defined once: asking again gives the same tag.
    CHECK(gpu::dnn::detail::cudnn_plan_workspace_tag() ==
          gpu::memory_tag::define("cuDNN plan workspace", memory_category::workspace));
}

TEST_CASE("BAD_PARAM and NOT_SUPPORTED hints name the value and the combination", "[dnn]")
{
    const auto facts = facts_with_gpu();
    const std::string bad = gpu::dnn::detail::hint_for(CUDNN_STATUS_BAD_PARAM, "strideA[i] <= 0",
                                                       "convolution stride [0, 1]", facts);
    CHECK_THAT(bad, ContainsSubstring("`strideA[i] <= 0`"));
    CHECK_THAT(bad, ContainsSubstring("(convolution stride [0, 1])"));
    const std::string silent = gpu::dnn::detail::hint_for(CUDNN_STATUS_BAD_PARAM, "", "", facts);
    CHECK_THAT(silent, ContainsSubstring("without saying which"));

    const std::string unsupported = gpu::dnn::detail::hint_for(CUDNN_STATUS_NOT_SUPPORTED, "",
                                                               "input bf16 nchw, math fma", facts);
    CHECK_THAT(unsupported, ContainsSubstring("no kernel for this combination"));
    CHECK_THAT(unsupported, ContainsSubstring("input bf16 nchw, math fma"));
    CHECK_THAT(gpu::dnn::detail::hint_for(CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH, "", "", facts),
               ContainsSubstring("no kernels for this GPU"));
}

TEST_CASE("version-mismatch statuses name the compiled and loaded cuDNN", "[dnn]")
{
    gpu::dnn::detail::hint_facts facts = facts_with_gpu();
    const std::string same =
        gpu::dnn::detail::hint_for(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, "", "", facts);
    CHECK_THAT(same, ContainsSubstring("one release"));
    CHECK_THAT(same, ContainsSubstring("compiled against cuDNN 9.19.0"));
    facts.cudnn.loaded = {8, 9, 7};
    const std::string mismatched =
        gpu::dnn::detail::hint_for(CUDNN_STATUS_SUBLIBRARY_VERSION_MISMATCH, "", "", facts);
    CHECK_THAT(mismatched, ContainsSubstring("loaded cuDNN 8.9.7"));
}

TEST_CASE("the facts of this process are read without a GPU", "[dnn]")
{
    const gpu::dnn::detail::hint_facts facts = gpu::dnn::detail::current_hint_facts();
    CHECK(facts.gpu_available == gpu::is_available());
    CHECK(facts.cudnn.compiled ==
          gpu::semantic_version{CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL});
    CHECK(facts.runtime.known());
    if (!facts.gpu_available) {
        CHECK_FALSE(facts.unavailable_reason.empty());
        CHECK_THAT(gpu::dnn::hint_for(CUDNN_STATUS_NOT_INITIALIZED), StartsWith("no usable GPU"));
    }
}

TEST_CASE("GPU_CHECK on a cuDNN status throws dnn_error", "[dnn]")
{
    CHECK_NOTHROW(GPU_CHECK(CUDNN_STATUS_SUCCESS));
    CHECK_THROWS_AS(GPU_CHECK(CUDNN_STATUS_BAD_PARAM), gpu::dnn::dnn_error);
}

namespace {
// What gpu::dnn::is_out_of_memory says of the error a failed call with @p status throws.
bool says_out_of_memory(cudnnStatus_t status)
{
    try {
        gpu::detail::throw_error(status, "some_call()", std::source_location::current(),
                                 "fp16 nchw");
    } catch (const std::exception& e) {
        return gpu::dnn::is_out_of_memory(e);
    }
    FAIL("throw_error returned");
    return false;
}
} // namespace

TEST_CASE(
    "is_out_of_memory: cuDNN's allocation failures and the core's out_of_memory, nothing else",
    "[dnn]")
{
    STATIC_REQUIRE(
        gpu::dnn::is_out_of_memory(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED));
    STATIC_REQUIRE(gpu::dnn::is_out_of_memory(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED));
    STATIC_REQUIRE_FALSE(gpu::dnn::is_out_of_memory(CUDNN_STATUS_NOT_SUPPORTED));
    STATIC_REQUIRE_FALSE(gpu::dnn::is_out_of_memory(CUDNN_STATUS_INTERNAL_ERROR));
    CHECK(says_out_of_memory(CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED));
    CHECK(says_out_of_memory(CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED));
    CHECK_FALSE(says_out_of_memory(CUDNN_STATUS_BAD_PARAM));
    CHECK_FALSE(says_out_of_memory(CUDNN_STATUS_EXECUTION_FAILED));
    const gpu::out_of_memory core("cudaMallocAsync(&p, n, s)", std::size_t{1} << 30, 0, 0, -1,
                                  std::source_location::current());
    CHECK(gpu::dnn::is_out_of_memory(core));
    const gpu::cuda_error other(cudaErrorInvalidValue, "cudaMemcpyAsync", "", -1,
                                std::source_location::current());
    CHECK_FALSE(gpu::dnn::is_out_of_memory(other));
    CHECK_FALSE(
        gpu::dnn::is_out_of_memory(std::runtime_error("out of memory"))); // words are not a status
}

TEST_CASE(
    "a no_algorithm_error says out of memory when an allowed candidate could not get its workspace",
    "[dnn]")
{
    using gpu::dnn::convolution_algorithm;
    using gpu::test::candidate;
    const cudnnStatus_t device_failure = CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED;
    gpu::dnn::convolution_explanation e;
    e.workspace_budget_bytes = std::size_t{1} << 30;
    // Only the budget and a status unrelated to memory: raising the budget is the advice.
    e.candidates = {candidate(convolution_algorithm::fft, std::size_t{2} << 30),
                    candidate(convolution_algorithm::winograd, 0, {}, true,
                              gpu::dnn::math_type::fma, CUDNN_STATUS_NOT_SUPPORTED)};
    CHECK_FALSE(gpu::dnn::no_algorithm_error(e).out_of_memory());
    CHECK_FALSE(gpu::dnn::is_out_of_memory(gpu::dnn::no_algorithm_error(e)));
    // cuDNN could not allocate for an algorithm over the budget: still the budget's doing.
    e.candidates.push_back(candidate(convolution_algorithm::gemm, std::size_t{3} << 30, {}, true,
                                     gpu::dnn::math_type::fma, device_failure));
    CHECK_FALSE(gpu::dnn::no_algorithm_error(e).out_of_memory());
    // cuDNN's search could not allocate for one the budget allows.
    e.candidates.push_back(candidate(convolution_algorithm::implicit_gemm, 4096, {}, true,
                                     gpu::dnn::math_type::fma, device_failure));
    CHECK(gpu::dnn::no_algorithm_error(e).out_of_memory());
    CHECK(gpu::dnn::is_out_of_memory(gpu::dnn::no_algorithm_error(e)));

    // The trial of the only allowed candidate could not allocate its workspace (the words the
    // real trial uses), in a backward pass.
    gpu::dnn::backward_filter_explanation filter;
    filter.workspace_budget_bytes = std::size_t{1} << 30;
    filter.candidates = {candidate(gpu::dnn::backward_filter_algorithm::algo_1, 4096)};
    const auto refuse = [](const gpu::dnn::backward_filter_candidate& c)
        -> std::optional<gpu::dnn::detail::trial_refusal_reason> {
        return gpu::dnn::detail::trial_refusal_reason{
            CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED,
            "its workspace of " + std::to_string(c.workspace_bytes) + " bytes " +
                std::string(gpu::dnn::detail::out_of_memory_refusal)};
    };
    gpu::dnn::detail::selection_rules rules;
    rules.workspace_budget_bytes = filter.workspace_budget_bytes;
    CHECK_FALSE(gpu::dnn::detail::select_tried(filter.candidates, rules, refuse).has_value());
    const gpu::dnn::no_algorithm_error refused(filter);
    CHECK_THAT(std::string(refused.what()),
               ContainsSubstring("could not be allocated (out of memory)"));
    CHECK(refused.out_of_memory());
    CHECK(gpu::dnn::is_out_of_memory(refused));
}
