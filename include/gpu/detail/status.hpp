/// @file status.hpp
/// @brief The one status-check mechanism of cudagap: a library's status type, its traits, and
/// the check, throw and destroy-report written once for every library.
///
/// Each library that returns a status enum (the CUDA runtime in the core; cuBLAS, cuRAND and
/// cuDNN in their wrappers) specialises `gpu::detail::status_traits` next to its own error type.
/// The check, the composition of the error and the report of a failed destroy are then the same
/// code for all of them, and `GPU_CHECK(call)` checks a call of any of those libraries:
///
/// @code
/// GPU_CHECK(cudaMemsetAsync(p, 0, bytes, stream.get()));   // throws gpu::cuda_error
/// GPU_CHECK(cublasSetStream(handle.get(), stream.get()));  // throws gpu::blas::blas_error
/// @endcode
///
/// This header names no library: the core's traits (for `cudaError_t`) are in `<gpu/error.hpp>`,
/// each library wrapper's in its own `error.hpp`.
#pragma once

#include <concepts>
#include <source_location>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

namespace gpu {
class error;
} // namespace gpu

namespace gpu::detail {

/// @brief What the hint of a failed call may use besides its status.
struct failure_context {
    std::string_view call{};         ///< what the call was doing (types, shapes); may be empty
    std::string_view library_says{}; ///< the library's own text about the failure; may be empty
    int device = -1;                 ///< the device current at the failure, -1 when unknown
};

/// @brief What cudagap knows about the status type of one library; specialised by that library's
/// wrapper (never here).
///
/// A specialisation has:
/// - `using error_type = ...;` the `gpu::error` subclass to throw, constructible from
///   `(api, status name, code, message, hint, device, where)` like `gpu::error`;
/// - `static constexpr std::string_view library`: the library's name, e.g. `"cuDNN"`;
/// - `static constexpr Status success`: the status of a call that worked;
/// - `static std::string name(Status)` and `static std::string message(Status)`;
/// - `static std::string hint(Status, const failure_context&)`: what to do next, or empty;
/// - `static std::string take_last_error(Status)`: clears the library's per-thread
///   record of the failure, so the next call starts clean, and returns the library's own text
///   about it (empty when it keeps none);
/// - `static bool tolerated_at_exit(Status) noexcept`: whether a destroy that fails with this
///   status is expected during process exit and is therefore not reported;
/// - optionally `static void throw_specific(Status, const char* api, std::source_location)`,
///   which throws a more specific error than `error_type` for some statuses (the core's
///   `out_of_memory`) and returns for the others.
///
/// Deriving from `status_traits_defaults` answers `take_last_error` and `tolerated_at_exit` for
/// a library that keeps no text about a failure and expects no failed destroy at exit.
/// @tparam Status the library's status enum, e.g. `cudaError_t`
template <class Status>
struct status_traits;

/// @brief What most libraries' traits say, to derive from: the library keeps no per-thread
/// record of a failure, and no failed destroy is expected at process exit.
class status_traits_defaults {
public:
    /// @brief Nothing to take: the status says all the library knows.
    template <class Status>
    static std::string take_last_error(Status) noexcept
    {
        return {};
    }
    /// @brief Every failed destroy is reported.
    template <class Status>
    static bool tolerated_at_exit(Status) noexcept
    {
        return false;
    }
};

/// @brief What every library's traits say of its statuses, to derive from: the error it
/// throws, its success status, and its functions that name and describe a status; the
/// specialisation adds the library's name and its hint (and overrides the defaults it must).
/// @tparam Status the library's status enum
/// @tparam Error the `gpu::error` subclass its failures throw
/// @tparam Success the status of a call that worked
/// @tparam Name the library's `status_name`
/// @tparam Message the library's `status_message`
template <class Status, class Error, Status Success, std::string (*Name)(Status),
          std::string (*Message)(Status)>
class status_traits_base : public status_traits_defaults {
public:
    /// @brief What a failed call throws.
    using error_type = Error;
    /// @brief The status of a call that worked.
    static constexpr Status success = Success;
    /// @brief The status's symbolic name.
    static std::string name(Status status) { return Name(status); }
    /// @brief The status's description.
    static std::string message(Status status) { return Message(status); }
};

/// @brief A status type whose library has specialised `status_traits`.
template <class Status>
concept library_status = requires(Status status, const failure_context& context)
{
    typename status_traits<Status>::error_type;
    {
        status_traits<Status>::library
        } -> std::convertible_to<std::string_view>;
    {
        status_traits<Status>::success
        } -> std::convertible_to<Status>;
    {
        status_traits<Status>::name(status)
        } -> std::convertible_to<std::string>;
    {
        status_traits<Status>::message(status)
        } -> std::convertible_to<std::string>;
    {
        status_traits<Status>::hint(status, context)
        } -> std::convertible_to<std::string>;
    {
        status_traits<Status>::take_last_error(status)
        } -> std::convertible_to<std::string>;
    {
        status_traits<Status>::tolerated_at_exit(status)
        } -> std::same_as<bool>;
};

/// @brief The device current in this thread, or -1 when it cannot be read (no driver or GPU);
/// never throws and leaves no error pending in the CUDA runtime.
[[nodiscard]] int current_device_or_unknown() noexcept;

/// @brief Prints one line to stderr about a destroy that failed in a destructor (which must not
/// throw), the first time it happens in the process: cudagap reports a leak once, not per object.
void report_destroy_failure(std::string_view what, std::string_view status_name,
                            long long code) noexcept;

/// @brief Throws the error for a failed call of @p status's library: its `error_type` with the
/// status name and code, the library's message (and its own text, when it has one), a hint,
/// the current device and the source location.
///
/// Each library instantiates this once in its compiled part (`extern template` in its header),
/// so the checks inlined at every call site stay one comparison and one call.
/// @param status the failing status
/// @param api the failing call or expression
/// @param where the source location of the call
/// @param call what the call was doing (types, shapes), for the hint; may be empty
template <library_status Status>
[[noreturn]] void throw_error(Status status, const char* api, std::source_location where,
                              std::string_view call = {})
{
    using traits = status_traits<Status>;
    using error_type = typename traits::error_type;
    static_assert(std::is_base_of_v<gpu::error, error_type>, "error_type must be a gpu::error");
    const std::string says = traits::take_last_error(status);
    if constexpr (requires { traits::throw_specific(status, api, where); }) {
        traits::throw_specific(status, api, where);
    }
    std::string message = traits::message(status);
    if (!says.empty()) {
        message += "; " + std::string(traits::library) + " says: " + says;
    }
    const int device = current_device_or_unknown();
    std::string hint = traits::hint(status, failure_context{call, says, device});
    throw error_type(api, traits::name(status), static_cast<long long>(status), std::move(message),
                     std::move(hint), device, where);
}

/// @brief Checks a status; the fast path is one comparison, the rest is `throw_error`.
/// @param status what the call returned
/// @param api the call or expression, for the message
/// @param where the source location of the call
/// @param call what the call was doing (types, shapes), for the hint; may be empty
/// @throws status_traits<Status>::error_type unless @p status is the library's success
template <library_status Status>
inline void check(Status status, const char* api,
                  std::source_location where = std::source_location::current(),
                  std::string_view call = {})
{
    if (status != status_traits<Status>::success) [[unlikely]] {
        throw_error(status, api, where, call);
    }
}

/// @brief Reports a failed destroy of @p status's library from a destructor: silent for
/// success and for statuses tolerated during process exit, otherwise one line on stderr, once
/// per process. Never throws.
/// @param what the destroy call, e.g. `cudnnDestroy`
/// @param status what it returned
template <library_status Status>
void report_destroy_failure(std::string_view what, Status status) noexcept
{
    using traits = status_traits<Status>;
    if (status == traits::success || traits::tolerated_at_exit(status)) {
        return;
    }
    try {
        static_cast<void>(traits::take_last_error(status));
        report_destroy_failure(what, traits::name(status), static_cast<long long>(status));
    } catch (...) {
        // Composing the name can only fail for want of memory; a destructor must go on.
    }
}

} // namespace gpu::detail

/// @brief Checks a call of any library that has `gpu::detail::status_traits` (the CUDA runtime,
/// cuBLAS, cuRAND, cuDNN) and throws that library's `gpu::error` subclass, with the expression
/// text, the source location and a hint, when it does not return the library's success.
///
/// `GPU_CUDA_CHECK`, `GPU_CUBLAS_CHECK`, `GPU_CURAND_CHECK` and `GPU_CUDNN_CHECK` do the same
/// and also insist on their library's status type.
#define GPU_CHECK(...)                                                                             \
    ::gpu::detail::check((__VA_ARGS__), #__VA_ARGS__, ::std::source_location::current())
