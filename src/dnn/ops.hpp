// Private to the cuDNN wrapper: the checks every typed operation (pooling, activation, softmax,
// dropout) runs before its cuDNN call, and the check of that call, which names what the
// operation was planned for only when it failed.
#pragma once

#include <gpu/dnn/element.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/types.hpp>

#include <cudnn_graph.h>

#include <initializer_list>
#include <source_location>
#include <string>
#include <utility>

namespace gpu::dnn::detail {

// cuDNN's scaling factors are float for every data type but double; y = 1 * op(x) + 0 * y.
inline constexpr float scale_one = 1.0F;
inline constexpr float scale_zero = 0.0F;

// Throws std::logic_error (`gpu::detail::throw_empty_owner`): `operation`, a member of a plan,
// was called on a plan that was moved from.
void require_planned(bool planned, const char* operation);

// Throws std::logic_error (`gpu::detail::throw_empty_owner`) when `h` holds no cuDNN handle.
void require_handle(const handle& h, const char* operation);

// Both: what every call of a planned operation checks first.
void require_ready(bool planned, const handle& h, const char* operation);

// Throws std::invalid_argument naming the first null pointer of `pointers`.
void require_pointers(const char* operation,
                      std::initializer_list<std::pair<const char*, const void*>> pointers);

// Throws std::invalid_argument naming both types when `given` is not `planned`.
void check_element_type(const char* operation, data_type planned, data_type given);

// Throws std::invalid_argument naming the buffer, both counts and `problem`.
[[noreturn]] void throw_count_mismatch(const char* operation, const buffer_check& buffer,
                                       const std::string& problem);

// The checks of a typed call: the element type, then each buffer's count. `problem()` (what
// the operation was planned for) is only composed for a message.
template <class Describe>
void check_buffers(const char* operation, data_type planned, data_type given,
                   std::initializer_list<buffer_check> buffers, const Describe& problem)
{
    check_element_type(operation, planned, given);
    for (const buffer_check& buffer : buffers) {
        if (buffer.have != buffer.need) {
            throw_count_mismatch(operation, buffer, problem());
        }
    }
}

// Checks a cuDNN call of an operation; on failure throws the dnn_error with cuDNN's own message
// and `problem()` in its hint.
template <class Describe>
void check_call(cudnnStatus_t status, const char* api, const Describe& problem,
                std::source_location where = std::source_location::current())
{
    if (status != CUDNN_STATUS_SUCCESS) [[unlikely]] {
        gpu::detail::throw_error(status, api, where, problem());
    }
}

} // namespace gpu::dnn::detail
