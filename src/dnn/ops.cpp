// The checks shared by the typed operations (pooling, activation, softmax, dropout).
#include "ops.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/detail/unique_handle.hpp>

#include <stdexcept>
#include <string>
#include <string_view>

namespace gpu::dnn::detail {

namespace {

// The type whose member `operation` names: `gpu::dnn::pooling` of `gpu::dnn::pooling::forward`.
std::string_view owner_of(std::string_view operation) noexcept
{
    const std::size_t last = operation.rfind("::");
    return last == std::string_view::npos ? operation : operation.substr(0, last);
}

} // namespace

void require_planned(bool planned, const char* operation)
{
    if (!planned) {
        gpu::detail::throw_empty_owner(operation, owner_of(operation), "cuDNN descriptor");
    }
}

void require_handle(const handle& h, const char* operation)
{
    if (!h) {
        gpu::detail::throw_empty_owner(operation, "gpu::dnn::handle", "cuDNN handle");
    }
}

void require_ready(bool planned, const handle& h, const char* operation)
{
    require_planned(planned, operation);
    require_handle(h, operation);
}

void require_pointers(const char* operation,
                      std::initializer_list<std::pair<const char*, const void*>> pointers)
{
    for (const auto& [name, pointer] : pointers) {
        GPU_EXPECTS(pointer != nullptr, std::invalid_argument, operation, ": ", name,
                    " is a null pointer");
    }
}

void check_element_type(const char* operation, data_type planned, data_type given)
{
    GPU_EXPECTS(planned == given, std::invalid_argument, operation, ": the buffers hold ",
                to_string(given), " elements but the operation was planned for ",
                to_string(planned));
}

void throw_count_mismatch(const char* operation, const buffer_check& buffer,
                          const std::string& problem)
{
    throw std::invalid_argument(std::string(operation) + ": " + buffer.name + " has " +
                                std::to_string(buffer.have) + " elements but the operation needs " +
                                std::to_string(buffer.need) + " (" + problem + ")");
}

} // namespace gpu::dnn::detail
