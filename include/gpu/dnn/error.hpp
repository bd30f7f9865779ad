/// @file error.hpp
/// @brief cuDNN statuses by name, the hints cudagap gives for them, and the checking macro
/// that turns a failed cuDNN call into a `gpu::dnn_error`.
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
#include <source_location>
#include <string>
#include <string_view>

namespace gpu::dnn {

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

namespace detail {

/// @brief The facts a hint is made of, gathered from the running process by `hint_for` and
/// given explicitly by tests (which must see, say, a version mismatch on a machine that has
/// none).
struct hint_facts {
    bool gpu_available = false;      ///< `gpu::is_available()`
    std::string unavailable_reason{};  ///< `gpu::unavailable_reason()` when no GPU is usable
    version_info cudnn{};            ///< cuDNN compiled against, loaded, and its CUDA
    cuda_version runtime{};          ///< the CUDA runtime loaded in this process
    std::size_t free_bytes = 0;      ///< free memory of the current device, 0 when unknown
    std::size_t total_bytes = 0;     ///< total memory of the current device, 0 when unknown
};

/// @brief Reads the facts of this process. Never throws for "no GPU".
[[nodiscard]] hint_facts current_hint_facts();

/// @brief `hint_for` with explicit facts.
[[nodiscard]] std::string hint_for(cudnnStatus_t status, std::string_view cudnn_says,
                                   std::string_view context, const hint_facts& facts);

/// @brief Throws the `dnn_error` for a failed cuDNN call: status name and code, the status's
/// description, cuDNN's last error string when it has one, and the hint.
/// @param context what the call was doing (types, layouts, shapes); may be empty
[[noreturn]] void throw_dnn_error(cudnnStatus_t status, const char* api,
                                  std::source_location where, std::string_view context = {});

/// @brief Checks a cuDNN status; the fast path is one comparison.
inline void check_dnn(cudnnStatus_t status, const char* api, std::source_location where)
{
    if (status != CUDNN_STATUS_SUCCESS) [[unlikely]] {
        throw_dnn_error(status, api, where);
    }
}

/// @brief Reports a failed destroy of a cuDNN object from a destructor (which must not throw):
/// one line on stderr, once per process.
void report_destroy_failure(std::string_view what, cudnnStatus_t status) noexcept;

} // namespace detail
} // namespace gpu::dnn

/// @brief Checks a cuDNN call and throws `gpu::dnn_error` (with the expression text, the source
/// location, cuDNN's own message and a hint) when it does not return `CUDNN_STATUS_SUCCESS`.
///
/// @code
/// GPU_CUDNN_CHECK(cudnnSetStream(handle.get(), stream.get()));
/// @endcode
#define GPU_CUDNN_CHECK(...) \
    ::gpu::dnn::detail::check_dnn((__VA_ARGS__), #__VA_ARGS__, ::std::source_location::current())
