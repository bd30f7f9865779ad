/// @file error.hpp
/// @brief cuBLAS statuses by name, the hints cudagap gives for them, and the checking macro
/// that turns a failed cuBLAS call into a `gpu::blas_error`.
///
/// A failed call reads, for example:
/// @code
/// cublasCreate(&raw): CUBLAS_STATUS_NOT_INITIALIZED (1): the library was not initialized
/// hint: cuBLAS could not initialise because no GPU is usable: cudaGetDeviceCount failed with
/// cudaErrorInsufficientDriver (35): ...
/// @endcode
#pragma once

#include <gpu/error.hpp>

#include <cublas_api.h>

#include <cstddef>
#include <source_location>
#include <string>
#include <string_view>

namespace gpu::blas {

/// @brief The symbolic name of a cuBLAS status, e.g. `CUBLAS_STATUS_NOT_INITIALIZED`.
/// @return the name, or `cublasStatus(<code>)` for a value this cuBLAS does not know
[[nodiscard]] std::string status_name(cublasStatus_t status);

/// @brief cuBLAS's description of a status (`cublasGetStatusString`).
[[nodiscard]] std::string status_message(cublasStatus_t status);

/// @brief The advice cudagap gives for a cuBLAS status, with this process's facts.
///
/// `CUBLAS_STATUS_NOT_INITIALIZED` (from handle creation) names the usual causes: no driver or
/// GPU (with `gpu::unavailable_reason()`), or a device out of memory (with its free and total
/// memory). `CUBLAS_STATUS_ALLOC_FAILED` gives the memory numbers and what to reduce;
/// `CUBLAS_STATUS_ARCH_MISMATCH` the device's compute capability and what needs a newer one;
/// `CUBLAS_STATUS_EXECUTION_FAILED` and `CUBLAS_STATUS_INTERNAL_ERROR` the CUDA error beneath,
/// when the runtime has one.
/// @param status the failing status
/// @param context what the call was doing (types, shapes); may be empty
/// @return the hint, or an empty string when there is nothing more useful than the message
[[nodiscard]] std::string hint_for(cublasStatus_t status, std::string_view context = {});

namespace detail {

/// @brief The facts a hint is made of, read from the running process by `hint_for` and given
/// explicitly by tests (which must see, say, an out-of-memory device on a machine without one).
struct hint_facts {
    bool gpu_available = false;     ///< `gpu::is_available()`
    std::string unavailable_reason{}; ///< `gpu::unavailable_reason()` when no GPU is usable
    int device = -1;                ///< the current device, -1 when unknown
    int capability = 0;             ///< its compute capability as an integer (90), 0 when unknown
    std::size_t free_bytes = 0;     ///< free memory of the current device, 0 when unknown
    std::size_t total_bytes = 0;    ///< total memory of the current device, 0 when unknown
    std::string cuda_error{};         ///< the CUDA runtime's pending error name, empty when none
};

/// @brief Reads the facts of this process. Never throws (no GPU is a fact, not a failure).
[[nodiscard]] hint_facts current_hint_facts() noexcept;

/// @brief `hint_for` with explicit facts.
[[nodiscard]] std::string hint_for(cublasStatus_t status, std::string_view context,
                                   const hint_facts& facts);

/// @brief Throws the `blas_error` for a failed cuBLAS call: status name and code, cuBLAS's
/// description of it, and the hint.
/// @param context what the call was doing (types, shapes); may be empty
[[noreturn]] void throw_blas_error(cublasStatus_t status, const char* api,
                                   std::source_location where, std::string_view context = {});

/// @brief Checks a cuBLAS status; the fast path is one comparison.
inline void check_blas(cublasStatus_t status, const char* api, std::source_location where)
{
    if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]] {
        throw_blas_error(status, api, where);
    }
}

/// @brief Reports a failed destroy of a cuBLAS object from a destructor (which must not
/// throw): one line on stderr, once per process.
void report_destroy_failure(std::string_view what, cublasStatus_t status) noexcept;

} // namespace detail
} // namespace gpu::blas

/// @brief Checks a cuBLAS call and throws `gpu::blas_error` (with the expression text, the source
/// location and a hint) when it does not return `CUBLAS_STATUS_SUCCESS`. For code that calls
/// cuBLAS directly on `gpu::blas::handle::get()`.
///
/// @code
/// GPU_CUBLAS_CHECK(cublasSgemv(handle.get(), CUBLAS_OP_N, m, n, &one, a, m, x, 1, &zero, y, 1));
/// @endcode
#define GPU_CUBLAS_CHECK(...) \
    ::gpu::blas::detail::check_blas((__VA_ARGS__), #__VA_ARGS__, ::std::source_location::current())
