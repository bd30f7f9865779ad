/// @file error.hpp
/// @brief The errors of the blas wrapper (`blas_error` for cuBLAS, `random_error` for cuRAND),
/// their statuses by name, the hints cudagap gives for them, and the checking macros
/// `GPU_CUBLAS_CHECK` and `GPU_CURAND_CHECK`.
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
#include <curand.h>

#include <cstddef>
#include <exception>
#include <source_location>
#include <string>
#include <string_view>

namespace gpu::blas {

/// @brief A cuBLAS call returned a status other than `CUBLAS_STATUS_SUCCESS`; `status()` is
/// the `cublasStatus_t`.
class blas_error : public gpu::detail::status_error<cublasStatus_t> {
public:
    using status_error::status_error;
};

/// @brief A cuRAND call returned a status other than `CURAND_STATUS_SUCCESS`; `status()` is
/// the `curandStatus_t`.
class random_error : public gpu::detail::status_error<curandStatus_t> {
public:
    using status_error::status_error;
};

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

/// @brief The symbolic name of a cuRAND status, e.g. `CURAND_STATUS_INITIALIZATION_FAILED`.
/// @return the name, or `curandStatus(<code>)` for a value this cuRAND does not know
[[nodiscard]] std::string status_name(curandStatus_t status);

/// @brief cuRAND's description of a status (the comments of `curand.h`: cuRAND has no function
/// for them).
[[nodiscard]] std::string status_message(curandStatus_t status);

/// @brief The advice cudagap gives for a cuRAND status: for an initialisation failure without
/// a usable GPU, `gpu::unavailable_reason()`.
/// @return the hint, or an empty string when there is nothing more useful than the message
[[nodiscard]] std::string hint_for(curandStatus_t status);

/// @brief The old name of `status_name(curandStatus_t)`.
[[deprecated("use gpu::blas::status_name")]] [[nodiscard]] inline std::string
random_status_name(curandStatus_t status)
{
    return status_name(status);
}

/// @brief Whether @p status says that cuBLAS could not allocate memory
/// (`CUBLAS_STATUS_ALLOC_FAILED`: its workspace, or cuBLASLt's).
[[nodiscard]] constexpr bool is_out_of_memory(cublasStatus_t status) noexcept
{
    return status == CUBLAS_STATUS_ALLOC_FAILED;
}

/// @brief Whether @p status says that cuRAND could not allocate memory
/// (`CURAND_STATUS_ALLOCATION_FAILED`).
[[nodiscard]] constexpr bool is_out_of_memory(curandStatus_t status) noexcept
{
    return status == CURAND_STATUS_ALLOCATION_FAILED;
}

/// @brief Whether @p e says that memory ran out, as far as the core and this wrapper can tell, so
/// that a program gives one piece of advice (a smaller batch, fewer buffers) whichever call ran
/// out.
///
/// True for the core's `gpu::out_of_memory` (a failed allocation of cudagap's), a `blas_error`
/// or `random_error` whose status `is_out_of_memory`. False for anything else, a cuDNN error
/// among them: that is the dnn wrapper's to judge (`gpu::dnn::is_out_of_memory`); the core cannot
/// know either wrapper.
[[nodiscard]] bool is_out_of_memory(const std::exception& e) noexcept;

namespace detail {

/// @brief The facts a hint is made of, read from the running process by `hint_for` and given
/// explicitly by tests (which must see, say, an out-of-memory device on a machine without one).
struct hint_facts {
    bool gpu_available = false;       ///< `gpu::is_available()`
    std::string unavailable_reason{}; ///< `gpu::unavailable_reason()` when no GPU is usable
    int device = -1;                  ///< the current device, -1 when unknown
    int capability = 0;               ///< its compute capability as an integer (90), 0 when unknown
    std::size_t free_bytes = 0;       ///< free memory of the current device, 0 when unknown
    std::size_t total_bytes = 0;      ///< total memory of the current device, 0 when unknown
    std::string cuda_error{};         ///< the CUDA runtime's pending error name, empty when none
};

/// @brief Reads the facts of this process. Never throws (no GPU is a fact, not a failure).
[[nodiscard]] hint_facts current_hint_facts() noexcept;

/// @brief `hint_for` with explicit facts.
[[nodiscard]] std::string hint_for(cublasStatus_t status, std::string_view context,
                                   const hint_facts& facts);

} // namespace detail
} // namespace gpu::blas

namespace gpu::detail {

/// @brief cuBLAS's status traits: its statuses throw `gpu::blas::blas_error`; cuBLAS keeps no
/// text about a failure beyond the status.
template <>
struct status_traits<cublasStatus_t>
    : status_traits_base<cublasStatus_t, blas::blas_error, CUBLAS_STATUS_SUCCESS, blas::status_name,
                         blas::status_message> {
    /// @brief The library's name.
    static constexpr std::string_view library = "cuBLAS";
    /// @brief `gpu::blas::hint_for` with what the call was doing.
    static std::string hint(cublasStatus_t status, const failure_context& context)
    {
        return blas::hint_for(status, context.call);
    }
};

/// @brief cuRAND's status traits: its statuses throw `gpu::blas::random_error`; cuRAND keeps no
/// text about a failure beyond the status.
template <>
struct status_traits<curandStatus_t>
    : status_traits_base<curandStatus_t, blas::random_error, CURAND_STATUS_SUCCESS,
                         blas::status_name, blas::status_message> {
    /// @brief The library's name.
    static constexpr std::string_view library = "cuRAND";
    /// @brief `gpu::blas::hint_for`.
    static std::string hint(curandStatus_t status, const failure_context&)
    {
        return blas::hint_for(status);
    }
};

// Instantiated once, in the library's compiled part (error.cpp).
extern template void throw_error<cublasStatus_t>(cublasStatus_t, const char*, std::source_location,
                                                 std::string_view);
extern template void throw_error<curandStatus_t>(curandStatus_t, const char*, std::source_location,
                                                 std::string_view);

} // namespace gpu::detail

namespace gpu {
/// @brief The old name of `gpu::blas::blas_error`, which the core no longer declares.
using blas_error [[deprecated("use gpu::blas::blas_error")]] = blas::blas_error;
} // namespace gpu

/// @brief Checks a cuBLAS call and throws `gpu::blas::blas_error` (with the expression text, the
/// source location and a hint) when it does not return `CUBLAS_STATUS_SUCCESS`; `GPU_CHECK` for
/// a call that must return a `cublasStatus_t`. For code that calls cuBLAS directly on
/// `gpu::blas::handle::get()`.
///
/// @code
/// GPU_CUBLAS_CHECK(cublasSgemv(handle.get(), CUBLAS_OP_N, m, n, &one, a, m, x, 1, &zero, y, 1));
/// @endcode
#define GPU_CUBLAS_CHECK(...)                                                                      \
    ::gpu::detail::check<cublasStatus_t>((__VA_ARGS__), #__VA_ARGS__,                              \
                                         ::std::source_location::current())

/// @brief Checks a cuRAND call and throws `gpu::blas::random_error` (with the expression text,
/// the source location and a hint) when it does not return `CURAND_STATUS_SUCCESS`.
///
/// @code
/// GPU_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(rng.get(), 42));
/// @endcode
#define GPU_CURAND_CHECK(...)                                                                      \
    ::gpu::detail::check<curandStatus_t>((__VA_ARGS__), #__VA_ARGS__,                              \
                                         ::std::source_location::current())
