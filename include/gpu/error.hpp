/// @file error.hpp
/// @brief The root of cudagap's exceptions, the CUDA runtime's errors, and the checking macro
/// for CUDA runtime calls.
///
/// Every library or device failure that cudagap reports is a `gpu::error`: the core's
/// `cuda_error` and `out_of_memory` here, each library wrapper's own in its `error.hpp`
/// (`gpu::blas::blas_error`, `gpu::blas::random_error`, `gpu::dnn::dnn_error`). A bad argument
/// is a `std::invalid_argument` and an empty or moved-from object used is a `std::logic_error`
/// (docs/architecture.md, "Errors"). Each error knows the API call that failed, its status, the
/// source location, the device, and a hint that tells the user what to do next:
///
/// @code
/// cudaMalloc(&ptr, bytes): cudaErrorMemoryAllocation (2): out of memory
/// hint: requested 1.00 PiB on device 0 (NVIDIA H200), 139.1 GiB free of 139.8 GiB; ...
/// @endcode
#pragma once

#include <gpu/detail/status.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpu {

/// @brief Root of every exception that cudagap throws for a failed library call.
///
/// `what()` reads `<api>: <status name> (<code>): <message>`, followed by a line `hint: ...`
/// when a hint is known. Copies are cheap and never throw (the details are shared).
class error : public std::runtime_error {
public:
    /// @brief Builds an error from its parts.
    /// @param api the API call or expression that failed, e.g. `cudaMalloc(&p, n)`
    /// @param status_name the symbolic status, e.g. `cudaErrorMemoryAllocation`
    /// @param code the numeric status as the library returned it
    /// @param message the library's own description of the status
    /// @param hint what the user should do next; empty when nothing useful is known
    /// @param device the device that was current when the call failed, or -1 when unknown
    /// @param where the source location of the failing call
    error(std::string api, std::string status_name, long long code, std::string message,
          std::string hint, int device, std::source_location where);

    /// @brief The API call or expression that failed.
    [[nodiscard]] const std::string& api() const noexcept { return details_->api; }
    /// @brief The symbolic name of the status, e.g. `CUBLAS_STATUS_NOT_INITIALIZED`.
    [[nodiscard]] const std::string& status_name() const noexcept { return details_->status_name; }
    /// @brief The numeric status as the failing library returned it.
    [[nodiscard]] long long code() const noexcept { return details_->code; }
    /// @brief The library's description of the status, without the hint.
    [[nodiscard]] const std::string& message() const noexcept { return details_->message; }
    /// @brief What to do next; empty when no specific advice is known.
    [[nodiscard]] const std::string& hint() const noexcept { return details_->hint; }
    /// @brief The device that was current when the call failed, or -1 when it could not be read.
    [[nodiscard]] int device() const noexcept { return details_->device; }
    /// @brief Where in the source the failing call was made.
    [[nodiscard]] const std::source_location& where() const noexcept { return details_->where; }

private:
    struct details {
        std::string api;
        std::string status_name;
        long long code;
        std::string message;
        std::string hint;
        int device;
        std::source_location where;
    };
    std::shared_ptr<const details> details_;
};

namespace detail {
/// @brief A `gpu::error` whose code is a status of one library, read back by `status()`: the
/// base of each library's own error type (`cuda_error`, `gpu::blas::blas_error`, ...), which
/// stays a type of its own so that a handler can catch one library's failures.
/// @tparam Status the library's status enum
template <class Status>
class status_error : public error {
public:
    /// @brief Builds the error from its parts (see `gpu::error`); @p code is the status.
    using error::error;

    /// @brief The status that was returned.
    [[nodiscard]] Status status() const noexcept { return static_cast<Status>(code()); }
};
} // namespace detail

/// @brief A CUDA runtime call returned something other than `cudaSuccess`.
class cuda_error : public detail::status_error<cudaError_t> {
public:
    /// @brief Builds the error for @p status; the message comes from the CUDA runtime.
    /// @param status the failing status
    /// @param api the failing call or expression
    /// @param hint what to do next (see `gpu::hint_for`)
    /// @param device the current device, or -1 when unknown
    /// @param where the source location of the call
    cuda_error(cudaError_t status, std::string api, std::string hint, int device,
               std::source_location where);

    /// @brief Builds the error from the parts `gpu::detail::throw_error` composed (see
    /// `gpu::error`); @p code is the `cudaError_t`.
    using status_error::status_error;

    /// @brief Whether the CUDA context is now unusable, so that the process must restart.
    ///
    /// Errors such as an illegal address or a failed launch corrupt the context: every later
    /// CUDA call in this process returns the same error. See `gpu::is_sticky(cudaError_t)`.
    [[nodiscard]] bool is_sticky() const noexcept;
};

/// @brief An allocation failed because the device had too little free memory.
///
/// The numbers are those read right after the failure; `free_bytes()` and `total_bytes()` are
/// zero when the device could not be queried. The process can allocate again after this error.
class out_of_memory : public cuda_error {
public:
    /// @brief Builds the error; the hint is composed from the numbers.
    /// @param api the failing allocation call
    /// @param requested_bytes the size that was asked for
    /// @param free_bytes free memory on the device after the failure (0 when unknown)
    /// @param total_bytes total memory of the device (0 when unknown)
    /// @param device the device the allocation was made on, or -1 when unknown
    /// @param where the source location of the call
    out_of_memory(std::string api, std::size_t requested_bytes, std::size_t free_bytes,
                  std::size_t total_bytes, int device, std::source_location where);

    /// @brief The number of bytes that could not be allocated.
    [[nodiscard]] std::size_t requested_bytes() const noexcept { return requested_; }
    /// @brief Free device memory right after the failure, 0 when unknown.
    [[nodiscard]] std::size_t free_bytes() const noexcept { return free_; }
    /// @brief Total device memory, 0 when unknown.
    [[nodiscard]] std::size_t total_bytes() const noexcept { return total_; }

private:
    std::size_t requested_;
    std::size_t free_;
    std::size_t total_;
};

/// @brief The symbolic name of a CUDA status, e.g. `cudaErrorInsufficientDriver`.
/// @return the runtime's name, or `cudaError(<code>)` for a value the runtime does not know
[[nodiscard]] std::string cuda_status_name(cudaError_t status);

/// @brief The CUDA runtime's description of a status.
[[nodiscard]] std::string cuda_status_message(cudaError_t status);

/// @brief Whether @p status leaves the CUDA context unusable until the process restarts.
///
/// True for the statuses that CUDA documents as corrupting the context: illegal address,
/// launch failure and timeout, device-side assert, hardware stack error, illegal or misaligned
/// instruction or address, invalid PC or address space, contained errors, tensor memory leak,
/// external device errors and a terminated MPS client.
[[nodiscard]] bool is_sticky(cudaError_t status) noexcept;

/// @brief The advice cudagap gives for a CUDA status on a device (-1 when unknown).
///
/// Turns the common CUDA errors (docs/doctor.md) into fixes: for a too-old driver it names the
/// driver's CUDA version and the runtime's, for a missing kernel image the architectures this
/// library was built for and the device's, for sticky errors that the process must restart,
/// for the statuses of stream capture the kind of call that breaks a capture (`<gpu/capture.hpp>`).
/// @return the hint, or an empty string when there is nothing more useful than the message
[[nodiscard]] std::string hint_for(cudaError_t status, int device = -1);

/// @brief Formats a byte count for people, e.g. `1.50 GiB`.
[[nodiscard]] std::string format_bytes(std::size_t bytes);

namespace detail {

/// @brief Throws `out_of_memory` for an allocation of @p requested_bytes that failed.
[[noreturn]] void throw_out_of_memory(const char* api, std::size_t requested_bytes,
                                      std::source_location where);

/// @brief The CUDA runtime's status traits: its statuses throw `gpu::cuda_error`, and
/// `cudaErrorMemoryAllocation` throws `gpu::out_of_memory`.
template <>
struct status_traits<cudaError_t> : status_traits_base<cudaError_t, cuda_error, cudaSuccess,
                                                       cuda_status_name, cuda_status_message> {
    /// @brief The library's name.
    static constexpr std::string_view library = "CUDA runtime";
    /// @brief `gpu::hint_for` on the device of the failure.
    static std::string hint(cudaError_t status, const failure_context& context)
    {
        return hint_for(status, context.device);
    }
    /// @brief Clears the runtime's last error unless @p status is sticky (which cannot be
    /// cleared); the runtime keeps no text beyond the status.
    static std::string take_last_error(cudaError_t status) noexcept
    {
        if (!is_sticky(status)) {
            static_cast<void>(cudaGetLastError());
        }
        return {};
    }
    /// @brief During process exit the runtime unloads before static destructors run: a
    /// destroy then fails with `cudaErrorCudartUnloading`, which is expected.
    static bool tolerated_at_exit(cudaError_t status) noexcept
    {
        return status == cudaErrorCudartUnloading;
    }
    /// @brief An allocation failure is an `out_of_memory`, with the device's free and total
    /// memory; other statuses return.
    static void throw_specific(cudaError_t status, const char* api, std::source_location where)
    {
        if (status == cudaErrorMemoryAllocation) {
            throw_out_of_memory(api, 0, where);
        }
    }
};

// Instantiated once, in the library's compiled part (error.cpp).
extern template void throw_error<cudaError_t>(cudaError_t, const char*, std::source_location,
                                              std::string_view);

} // namespace detail
} // namespace gpu

/// @brief Checks a CUDA runtime call and throws `gpu::cuda_error` (with the expression text,
/// the source location and a hint) when it does not return `cudaSuccess`; `GPU_CHECK` for a
/// call that must return a `cudaError_t`.
///
/// @code
/// GPU_CUDA_CHECK(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault));
/// @endcode
#define GPU_CUDA_CHECK(...)                                                                        \
    ::gpu::detail::check<cudaError_t>((__VA_ARGS__), #__VA_ARGS__,                                 \
                                      ::std::source_location::current())
