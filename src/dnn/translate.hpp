// Private to the cuDNN wing: cudagap's enums to cuDNN's and back, and the checks of dimension
// lists that every descriptor shares.
#pragma once

#include <gpu/dnn/types.hpp>

#include <cudnn.h>

#include <source_location>
#include <string>
#include <vector>

namespace gpu::dnn::detail {

cudnnDataType_t to_cudnn(data_type type) noexcept;
cudnnTensorFormat_t to_cudnn(tensor_layout layout) noexcept;
cudnnMathType_t to_cudnn(math_type math) noexcept;
cudnnConvolutionMode_t to_cudnn(convolution_mode mode) noexcept;
cudnnActivationMode_t to_cudnn(activation_mode mode) noexcept;

// These throw std::domain_error for a cuDNN value cudagap does not name (adopted descriptors).
data_type from_cudnn(cudnnDataType_t type);
tensor_layout from_cudnn(cudnnTensorFormat_t format);
math_type from_cudnn(cudnnMathType_t math);
convolution_mode from_cudnn(cudnnConvolutionMode_t mode);
activation_mode from_cudnn(cudnnActivationMode_t mode);

// Throws std::invalid_argument naming `what` and the dims when the rank is outside
// [min_rank, max_rank], a dimension is not positive, or the element count exceeds INT_MAX
// (cuDNN's legacy API indexes with 32-bit integers).
void validate_dims(const char* what, const std::vector<int>& dims, int min_rank, int max_rank);

// The product of the dimensions. Bounded after validate_dims; on dimensions read back from an
// adopted descriptor (cuDNN accepts filters of 8 x INT_MAX) it throws std::domain_error for a
// dimension that is not positive or a product beyond size_t, instead of wrapping around.
std::size_t product(const std::vector<int>& dims);

[[noreturn]] void throw_unnamed_enumerator(const char* what, const char* type, int value);

// Throws std::invalid_argument when `value` is none of the enumerators cudagap names (an
// integer cast to the enum): to_cudnn would otherwise map it silently to a default. Every
// to_string of the wing's enums answers "unknown" for exactly those values.
template <class Enum>
void require_named(const char* what, const char* type, Enum value)
{
    if (to_string(value) == "unknown") {
        throw_unnamed_enumerator(what, type, static_cast<int>(value));
    }
}

// Checks a cuDNN setter; on failure throws the dnn_error with `context` (what was being
// described) in its hint: gpu::detail::check, with the caller's location taken by default.
void check_set(cudnnStatus_t status, const char* api, const std::string& context,
               std::source_location where = std::source_location::current());

// Throws std::logic_error: `what` was called on an owner that holds nothing.
[[noreturn]] void throw_empty(const char* what);

} // namespace gpu::dnn::detail
