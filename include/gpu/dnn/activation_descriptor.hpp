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
class activation_descriptor {
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

    /// @brief Adopts a descriptor created elsewhere; it will be destroyed with this object.
    [[nodiscard]] static activation_descriptor
    from_native_handle(cudnnActivationDescriptor_t raw) noexcept
    {
        return activation_descriptor(adopt, raw);
    }

    /// @brief The raw descriptor, still owned (null after a move).
    [[nodiscard]] cudnnActivationDescriptor_t get() const noexcept { return handle_.get(); }
    /// @brief Gives up ownership; the caller must destroy the descriptor.
    /// @post this object holds nothing.
    [[nodiscard]] cudnnActivationDescriptor_t release() noexcept { return handle_.release(); }
    /// @brief Whether a descriptor is held.
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

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

    /// @brief Moving leaves the source without a descriptor.
    /// @post `!other` and `other.get() == nullptr`
    activation_descriptor(activation_descriptor&& other) noexcept = default;
    /// @brief Destroys the owned descriptor and takes @p other's.
    /// @post `!other` and `other.get() == nullptr`
    activation_descriptor& operator=(activation_descriptor&& other) noexcept = default;
    activation_descriptor(const activation_descriptor&) = delete;
    activation_descriptor& operator=(const activation_descriptor&) = delete;
    /// @brief Destroys the descriptor.
    ~activation_descriptor() = default;

private:
    struct adopt_tag {};
    static constexpr adopt_tag adopt{};
    activation_descriptor(adopt_tag, cudnnActivationDescriptor_t raw) noexcept : handle_(raw) {}

    gpu::detail::unique_handle<cudnnActivationDescriptor_t, detail::activation_descriptor_deleter>
        handle_;
};

} // namespace gpu::dnn
