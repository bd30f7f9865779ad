/// @file filter_descriptor.hpp
/// @brief `gpu::dnn::filter_descriptor`: the owner of a `cudnnFilterDescriptor_t` (convolution
/// weights), which reads back what it was set to.
///
/// @code
/// // 64 filters of 3x3 over 3 input channels, as PyTorch's nn.Conv2d(3, 64, 3) holds them
/// gpu::dnn::filter_descriptor w({64, 3, 3, 3}, gpu::dnn::data_type::fp32);
/// @endcode
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/types.hpp>

#include <cudnn_ops.h>

#include <cstddef>
#include <string>
#include <vector>

namespace gpu::dnn {

namespace detail {
/// @brief Destroys a filter descriptor; failures are reported, never thrown.
struct filter_descriptor_deleter {
    void operator()(cudnnFilterDescriptor_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cudnnDestroyFilterDescriptor",
                                            cudnnDestroyFilterDescriptor(raw));
    }
};
} // namespace detail

/// @brief An owning cuDNN filter descriptor. Move-only. Needs no GPU.
class filter_descriptor
    : public gpu::detail::handle_owner<filter_descriptor, cudnnFilterDescriptor_t,
                                       detail::filter_descriptor_deleter> {
public:
    /// @brief Describes packed convolution weights.
    /// @param dims K (output channels), C / groups (input channels per group), then the filter's
    /// spatial extent (R, S for 2-d): 3 to 8 dimensions, always in this logical order
    /// @param type the element type
    /// @param layout `nchw` stores KCRS (PyTorch's default), `nhwc` stores KRSC (channels last)
    /// @throws std::invalid_argument when a dimension is not positive, the rank is outside
    /// [3, 8], the element count exceeds INT_MAX (32-bit indexing), or @p type or @p layout is
    /// not a named enumerator (values named)
    /// @throws gpu::dnn::dnn_error when cuDNN rejects the descriptor
    filter_descriptor(const std::vector<int>& dims, data_type type,
                      tensor_layout layout = tensor_layout::nchw);

    /// @brief The number of dimensions.
    /// @throws std::logic_error on a descriptor that holds nothing (this holds for every getter)
    [[nodiscard]] int rank() const;
    /// @brief K, C / groups, then the spatial extent.
    [[nodiscard]] std::vector<int> dims() const;
    /// @brief The element type.
    /// @throws std::domain_error when an adopted descriptor holds a type cudagap does not name
    [[nodiscard]] data_type type() const;
    /// @brief The layout: `nchw` for KCRS, `nhwc` for KRSC.
    [[nodiscard]] tensor_layout layout() const;
    /// @brief The product of the dimensions.
    /// @throws std::domain_error when an adopted descriptor's product does not fit `size_t`
    /// (cuDNN itself accepts filters of 8 x INT_MAX)
    [[nodiscard]] std::size_t element_count() const;
    /// @brief The bytes the weights occupy.
    [[nodiscard]] std::size_t size_bytes() const;
    /// @brief E.g. `fp32 nchw [64, 3, 3, 3]`.
    [[nodiscard]] std::string to_string() const;

private:
    friend handle_owner;
    filter_descriptor(adopt_t, cudnnFilterDescriptor_t raw) noexcept : handle_owner(raw) {}
};

} // namespace gpu::dnn
