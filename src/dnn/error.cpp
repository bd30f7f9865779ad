// cuDNN statuses: names, plain descriptions, and the hints that turn the common
// CUDNN_STATUS_NOT_INITIALIZED (and its relatives) into fixes with this machine's facts.
#include <gpu/memory_ledger.hpp>
#include <gpu/device.hpp>
#include <gpu/dnn/error.hpp>

#include <array>
#include <string>
#include <string_view>

namespace gpu::dnn {

namespace {

// The description of each status cuDNN 9 defines, by code.
struct status_description {
    int code;
    std::string_view text;
};

constexpr status_description descriptions[] = {
    {0, "success"},
    {1001, "cuDNN could not initialise"},
    {1002, "the cuDNN sub-libraries loaded have different versions"},
    {1003, "a serialised plan comes from another cuDNN version"},
    {1004, "the API is deprecated in this cuDNN"},
    {1005, "cuDNN's license check failed"},
    {1006, "a kernel launched by cuDNN is still running"},
    {1007, "a floating-point overflow was detected at run time"},
    {1008, "a cuDNN sub-library could not be loaded"},
    {2000, "a parameter or descriptor value is invalid"},
    {2001, "a value is invalid"},
    {2002, "a required pointer is null"},
    {2003, "a pointer is not aligned as cuDNN requires"},
    {2004, "a descriptor was used before it was finalised"},
    {2005, "a value is out of bounds"},
    {2006, "a buffer (such as the workspace) is too small"},
    {2007, "the stream does not match the one the object was set up with"},
    {2008, "the shapes of the tensors do not match"},
    {2009, "a descriptor has duplicated entries"},
    {2010, "an attribute has the wrong type"},
    {2011, "the CUDA graph does not match"},
    {2012, "a descriptor has the wrong type"},
    {3000, "cuDNN has no kernel for this configuration"},
    {3001, "the operation graph pattern is not supported"},
    {3002, "the shape is not supported"},
    {3003, "the data type is not supported"},
    {3004, "the memory layout is not supported"},
    {3005, "the CUDA driver is too old for this cuDNN"},
    {3006, "the CUDA runtime is incompatible with this cuDNN"},
    {3007, "this GPU's architecture is not supported by this cuDNN build"},
    {3008, "a runtime prerequisite (such as NVRTC) is missing"},
    {3009, "a cuDNN sub-library is not available"},
    {3010, "the GPU has too little shared memory for the kernel"},
    {3011, "this padding is not supported"},
    {3012, "the kernel's launch parameters are not supported"},
    {3013, "native CUDA graphs are not supported for this operation"},
    {3014, "this dynamic shape is not supported"},
    {4000, "cuDNN failed internally"},
    {4001, "cuDNN failed to compile a kernel"},
    {4002, "cuDNN met an unexpected value internally"},
    {4003, "cuDNN could not allocate host memory"},
    {4004, "cuDNN could not allocate device memory"},
    {4005, "cuDNN computed bad launch parameters"},
    {4006, "cuDNN could not create a texture"},
    {5000, "a GPU kernel failed to execute"},
    {5001, "a CUDA driver call failed during execution"},
    {5002, "a cuBLAS call failed during execution"},
    {5003, "a CUDA runtime call failed during execution"},
    {5004, "a cuRAND call failed during execution"},
};

// What a code outside the table says by its category: cuDNN 9 groups codes by thousands
// (1xxx uncategorised, 2xxx bad parameter, 3xxx not supported, 4xxx internal, 5xxx execution).
std::string_view describe_category(int code) noexcept
{
    switch (code / 1000) {
    case 2: return "a parameter is invalid";
    case 3: return "the configuration is not supported";
    case 4: return "cuDNN failed internally";
    case 5: return "execution failed";
    default: return "unknown cuDNN status";
    }
}

// cuDNN's own cudnnGetErrorString gives only the status's name, hence the table.
std::string_view describe(int code) noexcept
{
    for (const status_description& row : descriptions) {
        if (row.code == code) {
            return row.text;
        }
    }
    return describe_category(code);
}

std::string versions_text(const detail::hint_facts& facts)
{
    return "cudagap was compiled against cuDNN " + facts.cudnn.compiled.to_string() +
           ", this process loaded cuDNN " + facts.cudnn.loaded.to_string() + " (built for CUDA " +
           facts.cudnn.loaded_for_cuda.to_string() + ") and the CUDA " + facts.runtime.to_string() +
           " runtime";
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
    // Who holds the memory, by tag, as gpu::out_of_memory says it (empty when it cannot be said).
    const std::string holders = facts.device >= 0 ? out_of_memory_holders(facts.device) : "";
    return "the device may be out of memory (" + format_bytes(facts.free_bytes) + " free of " +
           format_bytes(facts.total_bytes) + (holders.empty() ? "" : "; " + holders) +
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
           "does not match the CUDA runtime (" +
           versions_text(facts) + "), or " + memory_text(facts) +
           "; run cudagap-doctor for the full picture";
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
    } else if (cudaGetDevice(&facts.device) != cudaSuccess ||
               cudaMemGetInfo(&facts.free_bytes, &facts.total_bytes) != cudaSuccess) {
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
