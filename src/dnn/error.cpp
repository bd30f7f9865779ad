// cuDNN statuses: names, plain descriptions, and the hints that turn the article's
// CUDNN_STATUS_NOT_INITIALIZED row (and its relatives) into fixes with this machine's facts.
#include <gpu/device.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/memory.hpp>

#include <array>
#include <string>

namespace gpu::dnn {

namespace {

// The description of each status cuDNN 9 defines; unknown codes fall back to their category
// (cuDNN 9 groups codes by thousands: 1xxx uncategorised, 2xxx bad parameter, ...).
std::string_view describe(int code) noexcept
{
    switch (code) {
    case 0: return "success";
    case 1001: return "cuDNN could not initialise";
    case 1002: return "the cuDNN sub-libraries loaded have different versions";
    case 1003: return "a serialised plan comes from another cuDNN version";
    case 1004: return "the API is deprecated in this cuDNN";
    case 1005: return "cuDNN's license check failed";
    case 1006: return "a kernel launched by cuDNN is still running";
    case 1007: return "a floating-point overflow was detected at run time";
    case 1008: return "a cuDNN sub-library could not be loaded";
    case 2000: return "a parameter or descriptor value is invalid";
    case 2001: return "a value is invalid";
    case 2002: return "a required pointer is null";
    case 2003: return "a pointer is not aligned as cuDNN requires";
    case 2004: return "a descriptor was used before it was finalised";
    case 2005: return "a value is out of bounds";
    case 2006: return "a buffer (such as the workspace) is too small";
    case 2007: return "the stream does not match the one the object was set up with";
    case 2008: return "the shapes of the tensors do not match";
    case 2009: return "a descriptor has duplicated entries";
    case 2010: return "an attribute has the wrong type";
    case 2011: return "the CUDA graph does not match";
    case 2012: return "a descriptor has the wrong type";
    case 3000: return "cuDNN has no kernel for this configuration";
    case 3001: return "the operation graph pattern is not supported";
    case 3002: return "the shape is not supported";
    case 3003: return "the data type is not supported";
    case 3004: return "the memory layout is not supported";
    case 3005: return "the CUDA driver is too old for this cuDNN";
    case 3006: return "the CUDA runtime is incompatible with this cuDNN";
    case 3007: return "this GPU's architecture is not supported by this cuDNN build";
    case 3008: return "a runtime prerequisite (such as NVRTC) is missing";
    case 3009: return "a cuDNN sub-library is not available";
    case 3010: return "the GPU has too little shared memory for the kernel";
    case 3011: return "this padding is not supported";
    case 3012: return "the kernel's launch parameters are not supported";
    case 3013: return "native CUDA graphs are not supported for this operation";
    case 3014: return "this dynamic shape is not supported";
    case 4000: return "cuDNN failed internally";
    case 4001: return "cuDNN failed to compile a kernel";
    case 4002: return "cuDNN met an unexpected value internally";
    case 4003: return "cuDNN could not allocate host memory";
    case 4004: return "cuDNN could not allocate device memory";
    case 4005: return "cuDNN computed bad launch parameters";
    case 4006: return "cuDNN could not create a texture";
    case 5000: return "a GPU kernel failed to execute";
    case 5001: return "a CUDA driver call failed during execution";
    case 5002: return "a cuBLAS call failed during execution";
    case 5003: return "a CUDA runtime call failed during execution";
    case 5004: return "a cuRAND call failed during execution";
    default: break;
    }
    switch (code / 1000) {
    case 2: return "a parameter is invalid";
    case 3: return "the configuration is not supported";
    case 4: return "cuDNN failed internally";
    case 5: return "execution failed";
    default: return "unknown cuDNN status";
    }
}

std::string versions_text(const detail::hint_facts& facts)
{
    return "cudagap was compiled against cuDNN " + facts.cudnn.compiled.to_string() +
           ", this process loaded cuDNN " + facts.cudnn.loaded.to_string() + " (built for CUDA " +
           facts.cudnn.loaded_for_cuda.to_string() + ") and the CUDA " +
           facts.runtime.to_string() + " runtime";
}

std::string mismatch_text(const detail::hint_facts& facts)
{
    std::string text;
    if (!facts.cudnn.compatible()) {
        text += "the loaded cuDNN " + facts.cudnn.loaded.to_string() +
                " cannot serve code compiled against cuDNN " + facts.cudnn.compiled.to_string() +
                " (same major and a minor no older are needed): put the matching libcudnn first "
                "on LD_LIBRARY_PATH (`ldd` on your program shows which one is loaded) or rebuild "
                "against the installed headers";
    }
    if (facts.cudnn.loaded_for_cuda.known() && facts.runtime.known() &&
        facts.cudnn.loaded_for_cuda.major != facts.runtime.major) {
        text += std::string(text.empty() ? "" : "; ") + "the loaded cuDNN was built for CUDA " +
                facts.cudnn.loaded_for_cuda.to_string() + " but this process runs CUDA " +
                facts.runtime.to_string() + ": install the cuDNN for CUDA " +
                std::to_string(facts.runtime.major) + " (e.g. nvidia-cudnn-cu" +
                std::to_string(facts.runtime.major) + ")";
    }
    return text;
}

std::string memory_text(const detail::hint_facts& facts)
{
    if (facts.total_bytes == 0) {
        return "the device may be out of memory";
    }
    return "the device may be out of memory (" + format_bytes(facts.free_bytes) + " free of " +
           format_bytes(facts.total_bytes) + "; cudagap holds " +
           format_bytes(allocation_statistics().current_bytes) +
           "): free buffers or reduce the batch";
}

std::string with_context(std::string text, std::string_view context)
{
    if (!context.empty()) {
        text += " (";
        text += context;
        text += ")";
    }
    return text;
}

std::string not_initialized_hint(const detail::hint_facts& facts)
{
    if (!facts.gpu_available) {
        return "no usable GPU: " + facts.unavailable_reason;
    }
    const std::string mismatch = mismatch_text(facts);
    if (!mismatch.empty()) {
        return mismatch + "; " + versions_text(facts);
    }
    return "the three usual causes are no driver or GPU (CUDA itself works here), a cuDNN that "
           "does not match the CUDA runtime (" + versions_text(facts) + "), or " +
           memory_text(facts) + "; run cudagap-doctor for the full picture";
}

std::string not_supported_hint(int code, std::string_view cudnn_says, std::string_view context)
{
    std::string text;
    switch (code) {
    case 3005:
        text = "update the NVIDIA driver: this cuDNN needs a newer one (nvidia-smi shows the "
               "installed version)";
        break;
    case 3007:
        text = "this cuDNN build has no kernels for this GPU: install a cuDNN that lists its "
               "compute capability in the support matrix";
        break;
    case 3008:
        text = "install the missing runtime library (libnvrtc for runtime-compiled kernels) "
               "next to the CUDA runtime";
        break;
    default:
        text = "cuDNN has no kernel for this combination of types, layout and math";
        if (!cudnn_says.empty()) {
            text += " (cuDNN says: " + std::string(cudnn_says) + ")";
        }
        text += ": FP16/BF16 run best in NHWC with tensor-op math; try the other layout, FP32 "
                "accumulation, or another algorithm";
        break;
    }
    return with_context(std::move(text), context);
}

} // namespace

std::string status_name(cudnnStatus_t status)
{
    const char* name = cudnnGetErrorString(status);
    const std::string text = name == nullptr ? std::string() : std::string(name);
    if (text.empty() || text.rfind("CUDNN_STATUS_", 0) != 0) {
        return "cudnnStatus(" + std::to_string(static_cast<int>(status)) + ")";
    }
    return text;
}

std::string status_message(cudnnStatus_t status)
{
    return std::string(describe(static_cast<int>(status)));
}

std::string take_last_error_string()
{
    std::array<char, 1024> buffer{};
    cudnnGetLastErrorString(buffer.data(), buffer.size());
    buffer.back() = '\0';
    return std::string(buffer.data());
}

std::string hint_for(cudnnStatus_t status, std::string_view cudnn_says, std::string_view context)
{
    return detail::hint_for(status, cudnn_says, context, detail::current_hint_facts());
}

namespace detail {

hint_facts current_hint_facts()
{
    hint_facts facts;
    facts.gpu_available = gpu::is_available();
    if (!facts.gpu_available) {
        facts.unavailable_reason = gpu::unavailable_reason();
    } else if (cudaMemGetInfo(&facts.free_bytes, &facts.total_bytes) != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        facts.free_bytes = facts.total_bytes = 0;
    }
    facts.cudnn = dnn::version();
    facts.runtime = runtime_version();
    return facts;
}

std::string hint_for(cudnnStatus_t status, std::string_view cudnn_says, std::string_view context,
                     const hint_facts& facts)
{
    const int code = static_cast<int>(status);
    if (code == 1001) {
        return not_initialized_hint(facts);
    }
    if (code == 1002 || code == 1008 || code == 3006 || code == 3009) {
        const std::string mismatch = mismatch_text(facts);
        return (mismatch.empty() ? std::string("every part of cuDNN must come from one release: "
                                               "check LD_LIBRARY_PATH for a second cuDNN")
                                 : mismatch) +
               "; " + versions_text(facts);
    }
    if (code == 4003 || code == 4004) {
        return memory_text(facts);
    }
    if (code / 1000 == 2) {
        std::string text = "cuDNN rejected a value";
        text += cudnn_says.empty() ? std::string(" without saying which")
                                   : ": `" + std::string(cudnn_says) + "`";
        text += "; check the descriptors' dimensions, strides, padding, stride and dilation "
                "against each other";
        return with_context(std::move(text), context);
    }
    if (code / 1000 == 3) {
        return not_supported_hint(code, cudnn_says, context);
    }
    if (code / 1000 == 5) {
        return "a kernel failed on the GPU: if a CUDA call now fails too, the context is lost and "
               "the process must restart; rerun under `compute-sanitizer` to find the cause";
    }
    if (code / 1000 == 4) {
        return with_context("an internal cuDNN failure: report it with the cuDNN version (" +
                                versions_text(facts) + ") and the shapes",
                            context);
    }
    return {};
}

} // namespace detail
} // namespace gpu::dnn

namespace gpu::detail {

template void throw_error<cudnnStatus_t>(cudnnStatus_t, const char*, std::source_location,
                                         std::string_view);

} // namespace gpu::detail
