/// @file error.hpp
/// @brief The error of the nccl wrapper (`nccl_error`), NCCL's statuses by name, the hints cudagap
/// gives for them, and the checking macro `GPU_NCCL_CHECK`.
///
/// A failed call reads, for example:
/// @code
/// ncclCommInitRankConfig: ncclInvalidUsage (5): invalid usage; NCCL says: Duplicate GPU
/// detected : rank 1 and rank 0 both on CUDA device 1000
/// hint: two ranks use the same GPU: give each rank its own device ...; set NCCL_DEBUG=INFO ...
/// @endcode
#pragma once

#include <gpu/error.hpp>
#include <gpu/nccl/version.hpp>

#include <cuda_bf16.h> // first: nccl.h declares ncclBfloat16 only when the bf16 types exist
#include <nccl.h>

#include <chrono>
#include <source_location>
#include <string>
#include <string_view>

namespace gpu::nccl {

/// @brief An NCCL call returned a status other than `ncclSuccess`, or an NCCL operation did not
/// finish within its communicator's timeout (then the status is `ncclInProgress`); `status()`
/// is the `ncclResult_t`.
///
/// The message carries NCCL's own text about the failure (`ncclGetLastError`) when it has one.
class nccl_error : public gpu::detail::status_error<ncclResult_t> {
public:
    using status_error::status_error;
};

/// @brief The symbolic name of an NCCL status, e.g. `ncclInvalidUsage` (NCCL itself has only
/// sentences, `ncclGetErrorString`).
/// @return the name, or `ncclResult(<code>)` for a value this cudagap does not know
[[nodiscard]] std::string status_name(ncclResult_t status);

/// @brief NCCL's description of a status (`ncclGetErrorString`), without its advice to set
/// `NCCL_DEBUG`, which the hint gives.
[[nodiscard]] std::string status_message(ncclResult_t status);

/// @brief NCCL's text about the last failure it logged in this process (`ncclGetLastError`),
/// e.g. `Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000`; empty when it
/// has none. NCCL does not clear it: it names the latest failure, which may be older than the
/// call at hand when that call failed without logging (so hints trust it only with the status
/// it goes with).
[[nodiscard]] std::string last_error_text();

/// @brief The advice cudagap gives for an NCCL status.
///
/// Every hint ends with how to see what NCCL did (`NCCL_DEBUG=INFO`). A duplicated GPU names
/// the fix per rank: alone when the status is `ncclInvalidUsage` and NCCL's text says so (the
/// text may be stale, left by an earlier failure), among the causes of `ncclInvalidUsage`
/// otherwise; `ncclSystemError` the network interface (`NCCL_SOCKET_IFNAME`) and shared
/// memory; `ncclRemoteError` a failed peer and a version mismatch between ranks;
/// `ncclUnhandledCudaError` the GPU (no driver, out of memory).
/// @param status the failing status
/// @param nccl_says NCCL's own text (`last_error_text()`), may be empty
/// @param context what the call was doing, e.g. the collective, its size and the rank; may be
/// empty
/// @return the hint; never empty for a failure
[[nodiscard]] std::string hint_for(ncclResult_t status, std::string_view nccl_says = {},
                                   std::string_view context = {});

namespace detail {

/// @brief The facts a hint is made of, gathered from the running process by `hint_for` and
/// given explicitly by tests (which must see, say, a version mismatch on a machine that has
/// none). Plain data.
struct hint_facts {
    bool gpu_available = false;       ///< `gpu::is_available()`
    std::string unavailable_reason{}; ///< `gpu::unavailable_reason()` when no GPU is usable
    version_info nccl{};              ///< NCCL compiled against and loaded
};

/// @brief Reads the facts of this process. Never throws for "no GPU".
[[nodiscard]] hint_facts current_hint_facts();

/// @brief `hint_for` with explicit facts.
[[nodiscard]] std::string hint_for(ncclResult_t status, std::string_view nccl_says,
                                   std::string_view context, const hint_facts& facts);

/// @brief Throws the `nccl_error` of an operation that NCCL still reported in progress when
/// @p waited had passed: status `ncclInProgress`, the time in the message, and a hint built
/// from @p why (what usually keeps it waiting, e.g. a rank that did not join).
[[noreturn]] void throw_timeout(const char* api, std::chrono::milliseconds waited,
                                std::string_view why,
                                std::source_location where = std::source_location::current());

/// @brief Throws the `nccl_error` (status `ncclInvalidUsage`, no device) of @p function refusing
/// to make a communicator because `NCCL_COMM_BLOCKING` is @p value, which NCCL would let
/// override cudagap's non-blocking configuration. Makes no GPU call.
[[noreturn]] void
throw_blocking_forced(const char* function, std::string_view value,
                      std::source_location where = std::source_location::current());

} // namespace detail
} // namespace gpu::nccl

namespace gpu::detail {

/// @brief NCCL's status traits: its statuses throw `gpu::nccl::nccl_error`, with NCCL's own text
/// about the failure.
template <>
struct status_traits<ncclResult_t> : status_traits_base<ncclResult_t, nccl::nccl_error, ncclSuccess,
                                                        nccl::status_name, nccl::status_message> {
    /// @brief The library's name.
    static constexpr std::string_view library = "NCCL";
    /// @brief `gpu::nccl::hint_for` with NCCL's text and what the call was doing.
    static std::string hint(ncclResult_t status, const failure_context& context)
    {
        return nccl::hint_for(status, context.library_says, context.call);
    }
    /// @brief `gpu::nccl::last_error_text` (NCCL keeps it; reading does not clear it).
    static std::string take_last_error(ncclResult_t) { return nccl::last_error_text(); }
};

// Instantiated once, in the library's compiled part (error.cpp).
extern template void throw_error<ncclResult_t>(ncclResult_t, const char*, std::source_location,
                                               std::string_view);

} // namespace gpu::detail

/// @brief Checks an NCCL call and throws `gpu::nccl::nccl_error` (with the expression text, the
/// source location, NCCL's own message and a hint) when it does not return `ncclSuccess`;
/// `GPU_CHECK` for a call that must return an `ncclResult_t`.
///
/// @code
/// GPU_NCCL_CHECK(ncclGroupStart());
/// @endcode
#define GPU_NCCL_CHECK(...)                                                                        \
    ::gpu::detail::check<ncclResult_t>((__VA_ARGS__), #__VA_ARGS__,                                \
                                       ::std::source_location::current())
