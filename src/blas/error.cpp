// cuBLAS and cuRAND statuses: names, the libraries' descriptions, and the hints that turn a
// failed call into a fix with this machine's facts (no GPU, memory, compute capability, the CUDA
// error beneath).
#include <gpu/blas/error.hpp>
#include <gpu/device.hpp>
#include <gpu/memory_ledger.hpp>

#include <cublas_api.h>
#include <curand.h>

#include <exception>
#include <string>
#include <string_view>

namespace gpu::blas {

namespace {

std::string memory_numbers(const detail::hint_facts& facts)
{
    if (facts.total_bytes == 0) {
        return {};
    }
    return format_bytes(facts.free_bytes) + " free of " + format_bytes(facts.total_bytes) +
           (facts.device >= 0 ? " on device " + std::to_string(facts.device) : std::string());
}

std::string with_context(std::string hint, std::string_view context)
{
    if (!context.empty() && !hint.empty()) {
        hint += " (the call: " + std::string(context) + ")";
    }
    return hint;
}

// " (the CUDA runtime reports <error>)" when the runtime has an error pending, else nothing.
std::string runtime_note(const detail::hint_facts& facts)
{
    return facts.cuda_error.empty() ? std::string()
                                    : " (the CUDA runtime reports " + facts.cuda_error + ")";
}

std::string capability_text(int capability)
{
    return std::to_string(capability / 10) + "." + std::to_string(capability % 10);
}

// " (<free> free of <total> on device <n>; who holds device <n>: ...)" when the facts know the
// memory, else nothing: the holders by tag as gpu::out_of_memory names them.
std::string memory_note(const detail::hint_facts& facts)
{
    const std::string memory = memory_numbers(facts);
    if (memory.empty()) {
        return {};
    }
    const std::string holders = facts.device >= 0 ? out_of_memory_holders(facts.device) : "";
    return " (" + memory + (holders.empty() ? "" : "; " + holders) + ")";
}

// The hints that name this machine's facts (memory, compute capability, the pending CUDA error);
// empty for the other statuses. Each is followed by the call that failed.
std::string machine_hint(cublasStatus_t status, const detail::hint_facts& facts)
{
    switch (status) {
    case CUBLAS_STATUS_NOT_INITIALIZED:
        return "cuBLAS could not initialise on a working GPU: the usual cause is a device out of "
               "memory" +
               memory_note(facts) +
               " (free memory held by other processes, see nvidia-smi), or a cuBLAS that does "
               "not match the CUDA runtime or driver (run cudagap-doctor)";
    case CUBLAS_STATUS_ALLOC_FAILED:
        return "cuBLAS could not allocate device memory for its workspace or internal buffers" +
               memory_note(facts) +
               ": free buffers you no longer need, reduce the problem or batch size, or give the "
               "handle a smaller workspace (handle_options::workspace_bytes); a workspace under "
               "16 KiB, or none, causes this too: then give it more";
    case CUBLAS_STATUS_ARCH_MISMATCH:
        return "the GPU lacks a feature this call needs (BF16 and TF32 need compute capability "
               "8.0, FP8 8.9)" +
               (facts.capability > 0
                    ? ": device " + std::to_string(facts.device) + " is compute capability " +
                          capability_text(facts.capability)
                    : std::string()) +
               "; gpu::blas::precision_support() says what this device runs";
    case CUBLAS_STATUS_EXECUTION_FAILED:
        return "a cuBLAS kernel failed to launch or run" + runtime_note(facts) +
               ": check that every pointer is device memory of the current device and large "
               "enough; to find the failing kernel, run with CUDA_LAUNCH_BLOCKING=1 or under "
               "`compute-sanitizer`";
    case CUBLAS_STATUS_INTERNAL_ERROR:
        return "an operation inside cuBLAS failed, usually a CUDA call underneath" +
               runtime_note(facts) +
               ": look for an earlier error in this process, and check the driver with "
               "cudagap-doctor";
    default: return {};
    }
}

// The hints that read nothing from the machine: one row per status, and whether the hint is
// about the call's arguments (then the call that failed follows it).
struct status_hint {
    cublasStatus_t status;
    std::string_view hint;
    bool names_the_call;
};

constexpr status_hint fixed_hints[] = {
    {CUBLAS_STATUS_INVALID_VALUE,
     "cuBLAS rejected an argument; cudagap checks shapes and leading dimensions before calling, "
     "so look at what it does not check: the combination of data types and compute type, "
     "pointer alignment, and values passed through the raw handle",
     true},
    {CUBLAS_STATUS_MAPPING_ERROR,
     "cuBLAS could not access GPU memory: a pointer may not be device memory of the current "
     "device, or an earlier failure left the context unusable",
     false},
    {CUBLAS_STATUS_NOT_SUPPORTED,
     "this cuBLAS has no kernel for this combination of data types, compute type, layout and "
     "device: try another precision or math mode, or a newer CUDA toolkit",
     true},
    {CUBLAS_STATUS_LICENSE_ERROR,
     "cuBLAS's license check failed: reinstall the CUDA toolkit or check its license files", false},
};

} // namespace

std::string status_name(cublasStatus_t status)
{
    const char* name = cublasGetStatusName(status);
    std::string text = name == nullptr ? std::string() : std::string(name);
    if (text.rfind("CUBLAS_STATUS_", 0) != 0) {
        return "cublasStatus(" + std::to_string(static_cast<int>(status)) + ")";
    }
    return text;
}

std::string status_message(cublasStatus_t status)
{
    const char* message = cublasGetStatusString(status);
    return message == nullptr ? std::string("unknown cuBLAS status") : std::string(message);
}

std::string hint_for(cublasStatus_t status, std::string_view context)
{
    return detail::hint_for(status, context, detail::current_hint_facts());
}

namespace detail {

hint_facts current_hint_facts() noexcept
{
    hint_facts facts;
    try {
        facts.gpu_available = gpu::is_available();
        if (!facts.gpu_available) {
            facts.unavailable_reason = gpu::unavailable_reason();
            return facts;
        }
        // Read the pending CUDA error before anything below can replace it.
        const cudaError_t pending = cudaPeekAtLastError();
        if (pending != cudaSuccess) {
            facts.cuda_error =
                cuda_status_name(pending) + " (" + cuda_status_message(pending) + ")";
        }
        int device = -1;
        if (cudaGetDevice(&device) == cudaSuccess) {
            facts.device = device;
            int major = 0;
            int minor = 0;
            if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) ==
                    cudaSuccess &&
                cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) ==
                    cudaSuccess) {
                facts.capability = major * 10 + minor;
            }
            std::size_t free_bytes = 0;
            std::size_t total_bytes = 0;
            if (cudaMemGetInfo(&free_bytes, &total_bytes) == cudaSuccess) {
                facts.free_bytes = free_bytes;
                facts.total_bytes = total_bytes;
            }
        }
        if (pending == cudaSuccess || !gpu::is_sticky(pending)) {
            // Leave a sticky error in place (every later call reports it anyway); clear what
            // the queries above may have set.
            static_cast<void>(cudaGetLastError());
        }
    } catch (...) {
        // The facts are a courtesy; the error itself must still be thrown.
    }
    return facts;
}

std::string hint_for(cublasStatus_t status, std::string_view context, const hint_facts& facts)
{
    if (status == CUBLAS_STATUS_NOT_INITIALIZED && !facts.gpu_available) {
        return "cuBLAS could not initialise because no GPU is usable: " + facts.unavailable_reason;
    }
    const std::string machine = machine_hint(status, facts);
    if (!machine.empty()) {
        return with_context(machine, context);
    }
    for (const status_hint& row : fixed_hints) {
        if (row.status == status) {
            return row.names_the_call ? with_context(std::string(row.hint), context)
                                      : std::string(row.hint);
        }
    }
    return {};
}

} // namespace detail

std::string status_name(curandStatus_t status)
{
    switch (status) {
    case CURAND_STATUS_SUCCESS: return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH: return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED: return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED: return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR: return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE: return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE: return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH: return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR: return "CURAND_STATUS_INTERNAL_ERROR";
    }
    return "curandStatus(" + std::to_string(static_cast<int>(status)) + ")";
}

std::string status_message(curandStatus_t status)
{
    switch (status) {
    case CURAND_STATUS_SUCCESS: return "no errors";
    case CURAND_STATUS_VERSION_MISMATCH:
        return "header file and linked library version do not match";
    case CURAND_STATUS_NOT_INITIALIZED: return "generator not initialized";
    case CURAND_STATUS_ALLOCATION_FAILED: return "memory allocation failed";
    case CURAND_STATUS_TYPE_ERROR: return "generator is wrong type";
    case CURAND_STATUS_OUT_OF_RANGE: return "argument out of range";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE:
        return "length requested is not a multiple of dimension";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED:
        return "GPU does not have double precision required by MRG32k3a";
    case CURAND_STATUS_LAUNCH_FAILURE: return "kernel launch failure";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "preexisting failure on library entry";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "initialization of CUDA failed";
    case CURAND_STATUS_ARCH_MISMATCH:
        return "architecture mismatch, GPU does not support requested feature";
    case CURAND_STATUS_INTERNAL_ERROR: return "internal library error";
    }
    return "unknown cuRAND status";
}

std::string hint_for(curandStatus_t status)
{
    switch (status) {
    case CURAND_STATUS_INITIALIZATION_FAILED:
        if (!gpu::is_available()) {
            return "cuRAND could not initialise CUDA because no GPU is usable: " +
                   gpu::unavailable_reason();
        }
        return "cuRAND could not initialise CUDA on a working GPU: check the driver with "
               "cudagap-doctor";
    case CURAND_STATUS_ALLOCATION_FAILED:
        return "cuRAND could not allocate memory for the generator's state: free device memory";
    case CURAND_STATUS_LAUNCH_FAILURE:
    case CURAND_STATUS_PREEXISTING_FAILURE:
        return "a kernel failed (this one, or an earlier one whose error was not checked): run "
               "with "
               "CUDA_LAUNCH_BLOCKING=1 or under `compute-sanitizer` to find it";
    case CURAND_STATUS_VERSION_MISMATCH:
        return "the cuRAND library loaded is not the one cudagap was compiled against: check "
               "LD_LIBRARY_PATH, or run cudagap-doctor";
    case CURAND_STATUS_ARCH_MISMATCH:
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED:
        return "this GPU lacks a feature the generator needs";
    default: return {};
    }
}

bool is_out_of_memory(const std::exception& e) noexcept
{
    if (dynamic_cast<const gpu::out_of_memory*>(&e) != nullptr) {
        return true;
    }
    if (const auto* failed = dynamic_cast<const blas_error*>(&e)) {
        return is_out_of_memory(failed->status());
    }
    const auto* random = dynamic_cast<const random_error*>(&e);
    return random != nullptr && is_out_of_memory(random->status());
}

} // namespace gpu::blas

namespace gpu::detail {

template void throw_error<cublasStatus_t>(cublasStatus_t, const char*, std::source_location,
                                          std::string_view);
template void throw_error<curandStatus_t>(curandStatus_t, const char*, std::source_location,
                                          std::string_view);

} // namespace gpu::detail
