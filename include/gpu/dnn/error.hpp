/// @file error.hpp
/// @brief The error of the dnn wrapper (`dnn_error`), cuDNN statuses by name, the hints cudagap
/// gives for them, and the checking macro `GPU_CUDNN_CHECK`.
///
/// A failed call reads, for example:
/// @code
/// cudnnCreate(&raw): CUDNN_STATUS_NOT_INITIALIZED (1001): cuDNN could not initialise; cuDNN
/// says: cudaGetDeviceCount(&count) != cudaSuccess
/// hint: no usable GPU: cudaGetDeviceCount failed with cudaErrorInsufficientDriver (35): ...
/// @endcode
#pragma once

#include <gpu/dnn/version.hpp>
#include <gpu/error.hpp>

#include <cudnn_graph.h>

#include <cstddef>
#include <exception>
#include <source_location>
#include <string>
#include <string_view>

namespace gpu::dnn {

/// @brief A cuDNN call returned a status other than `CUDNN_STATUS_SUCCESS`, or a cuDNN operation
/// of cudagap could not be done (`no_algorithm_error`); `status()` is the `cudnnStatus_t`.
///
/// The message carries cuDNN's own text about the failure (`cudnnGetLastErrorString`) when it
/// has one.
class dnn_error : public gpu::detail::status_error<cudnnStatus_t> {
public:
    using status_error::status_error;
};

/// @brief The symbolic name of a cuDNN status, e.g. `CUDNN_STATUS_BAD_PARAM`.
/// @return the name, or `cudnnStatus(<code>)` for a value this cuDNN does not know
[[nodiscard]] std::string status_name(cudnnStatus_t status);

/// @brief A one-line description of a status in plain words (cuDNN itself only has names).
[[nodiscard]] std::string status_message(cudnnStatus_t status);

/// @brief Takes cuDNN's description of the last failure on this thread
/// (`cudnnGetLastErrorString`), e.g. `strideA[i] <= 0`; empty when it has nothing.
///
/// cuDNN clears the text when it is read, so the error that reads it first keeps it.
[[nodiscard]] std::string take_last_error_string();

/// @brief The advice cudagap gives for a cuDNN status.
///
/// `CUDNN_STATUS_NOT_INITIALIZED` names the three usual causes with this machine's facts (no
/// driver or GPU, a cuDNN that does not match the CUDA runtime or the headers, out of memory);
/// `CUDNN_STATUS_BAD_PARAM` which value cuDNN rejected; `CUDNN_STATUS_NOT_SUPPORTED` the
/// combination that has no kernel; version-mismatch statuses the compiled and loaded versions.
/// @param status the failing status
/// @param cudnn_says cuDNN's own text (`take_last_error_string()`), may be empty
/// @param context what the call was doing, e.g. the types and layout of a convolution; may be
/// empty
/// @return the hint, or an empty string when there is nothing more useful than the message
[[nodiscard]] std::string hint_for(cudnnStatus_t status, std::string_view cudnn_says = {},
                                   std::string_view context = {});

/// @brief Whether @p status says that cuDNN could not allocate memory: device memory
/// (`CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED`, 4004) or host memory
/// (`CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED`, 4003; cuDNN 8's
/// `CUDNN_STATUS_ALLOC_FAILED` is now its name).
[[nodiscard]] constexpr bool is_out_of_memory(cudnnStatus_t status) noexcept
{
    return status == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ||
           status == CUDNN_STATUS_INTERNAL_ERROR_HOST_ALLOCATION_FAILED;
}

/// @brief Whether @p e says that memory ran out, as far as the core and this wrapper can tell, so
/// that a program gives one piece of advice (a smaller batch, fewer buffers) whichever call ran
/// out.
///
/// True for the core's `gpu::out_of_memory` (a failed allocation of cudagap's), a `dnn_error`
/// whose status `is_out_of_memory`, and a `no_algorithm_error` whose `out_of_memory()` is true
/// (an algorithm the policy and the budget allow was refused because its workspace could not
/// be had). False for anything else, a cuBLAS error among them: that is the blas wrapper's to
/// judge (`gpu::blas::is_out_of_memory`); the core cannot know either wrapper.
/// @code
/// } catch (const std::exception& e) {
///     if (gpu::dnn::is_out_of_memory(e) || gpu::blas::is_out_of_memory(e)) {
///         std::fprintf(stderr, "out of GPU memory: reduce the batch size\n%s\n", e.what());
///     }
/// }
/// @endcode
[[nodiscard]] bool is_out_of_memory(const std::exception& e) noexcept;

namespace detail {

/// @brief The facts a hint is made of, gathered from the running process by `hint_for` and
/// given explicitly by tests (which must see, say, a version mismatch on a machine that has
/// none).
struct hint_facts {
    bool gpu_available = false;       ///< `gpu::is_available()`
    std::string unavailable_reason{}; ///< `gpu::unavailable_reason()` when no GPU is usable
    version_info cudnn{};             ///< cuDNN compiled against, loaded, and its CUDA
    cuda_version runtime{};           ///< the CUDA runtime loaded in this process
    std::size_t free_bytes = 0;       ///< free memory of the current device, 0 when unknown
    std::size_t total_bytes = 0;      ///< total memory of the current device, 0 when unknown
    int device = -1;                  ///< the current device, -1 when unknown
};

/// @brief Reads the facts of this process. Never throws for "no GPU".
[[nodiscard]] hint_facts current_hint_facts();

/// @brief `hint_for` with explicit facts.
[[nodiscard]] std::string hint_for(cudnnStatus_t status, std::string_view cudnn_says,
                                   std::string_view context, const hint_facts& facts);

} // namespace detail
} // namespace gpu::dnn

namespace gpu::detail {

/// @brief cuDNN's status traits: its statuses throw `gpu::dnn::dnn_error`, with cuDNN's own
/// text about the failure.
template <>
struct status_traits<cudnnStatus_t>
    : status_traits_base<cudnnStatus_t, dnn::dnn_error, CUDNN_STATUS_SUCCESS, dnn::status_name,
                         dnn::status_message> {
    /// @brief The library's name.
    static constexpr std::string_view library = "cuDNN";
    /// @brief `gpu::dnn::hint_for` with cuDNN's text and what the call was doing.
    static std::string hint(cudnnStatus_t status, const failure_context& context)
    {
        return dnn::hint_for(status, context.library_says, context.call);
    }
    /// @brief `gpu::dnn::take_last_error_string`: cuDNN clears the text when it is read.
    static std::string take_last_error(cudnnStatus_t) { return dnn::take_last_error_string(); }
};

// Instantiated once, in the library's compiled part (error.cpp).
extern template void throw_error<cudnnStatus_t>(cudnnStatus_t, const char*, std::source_location,
                                                std::string_view);

} // namespace gpu::detail

namespace gpu {
/// @brief The old name of `gpu::dnn::dnn_error`, which the core no longer declares.
using dnn_error [[deprecated("use gpu::dnn::dnn_error")]] = dnn::dnn_error;
} // namespace gpu

/// @brief Checks a cuDNN call and throws `gpu::dnn::dnn_error` (with the expression text, the
/// source location, cuDNN's own message and a hint) when it does not return
/// `CUDNN_STATUS_SUCCESS`; `GPU_CHECK` for a call that must return a `cudnnStatus_t`.
///
/// @code
/// GPU_CUDNN_CHECK(cudnnSetStream(handle.get(), stream.get()));
/// @endcode
#define GPU_CUDNN_CHECK(...)                                                                       \
    ::gpu::detail::check<cudnnStatus_t>((__VA_ARGS__), #__VA_ARGS__,                               \
                                        ::std::source_location::current())
