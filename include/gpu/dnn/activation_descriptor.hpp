/// @file activation_descriptor.hpp
/// @brief `gpu::dnn::activation_descriptor`: the owner of a `cudnnActivationDescriptor_t`
/// (ReLU and friends), which reads back what it was set to.
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/types.hpp>

#include <cudnn_ops.h>

#include <string>

namespace gpu::dnn {

namespace detail {
/// @brief Destroys an activation descriptor; failures are reported, never thrown.
struct activation_descriptor_deleter {
    void operator()(cudnnActivationDescriptor_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cudnnDestroyActivationDescriptor",
                                            cudnnDestroyActivationDescriptor(raw));
    }
};
} // namespace detail

/// @brief An owning cuDNN activation descriptor. Move-only. Needs no GPU.
///
/// Fused into a convolution (`gpu::dnn::convolution` with a bias epilogue), cuDNN supports
/// `relu` and `identity` only.
class activation_descriptor
    : public gpu::detail::handle_owner<activation_descriptor, cudnnActivationDescriptor_t,
                                       detail::activation_descriptor_deleter> {
public:
    /// @brief Describes an activation.
    /// @param mode the function
    /// @param coefficient the ceiling of `clipped_relu` (must be positive) or the alpha of
    /// `elu`; ignored by the other modes
    /// @param propagate_nan whether NaN inputs give NaN (true) or are treated as numbers
    /// @throws std::invalid_argument for a `clipped_relu` ceiling that is not positive, a
    /// coefficient that is not finite, or a @p mode that is not a named enumerator (values named)
    /// @throws gpu::dnn::dnn_error when cuDNN rejects the descriptor
    explicit activation_descriptor(activation_mode mode = activation_mode::relu,
                                   double coefficient = 0.0, bool propagate_nan = true);

    /// @brief The function.
    /// @throws std::logic_error on a descriptor that holds nothing (this holds for every getter)
    /// @throws std::domain_error for a mode cudagap does not name (an adopted `swish`)
    [[nodiscard]] activation_mode mode() const;
    /// @brief The clipping ceiling or ELU alpha.
    [[nodiscard]] double coefficient() const;
    /// @brief Whether NaN propagates.
    [[nodiscard]] bool propagates_nan() const;
    /// @brief E.g. `relu` or `clipped_relu(6)`.
    [[nodiscard]] std::string to_string() const;

private:
    friend handle_owner;
    activation_descriptor(adopt_t, cudnnActivationDescriptor_t raw) noexcept : handle_owner(raw) {}
};

} // namespace gpu::dnn
