/// @file tensor_descriptor.hpp
/// @brief `gpu::dnn::tensor_descriptor`: the owner of a `cudnnTensorDescriptor_t` describing a
/// packed 3-d to 8-d tensor in NCHW or NHWC layout, FP32, FP16 or BF16; it reads back what it
/// was set to.
///
/// @code
/// gpu::dnn::tensor_descriptor x({32, 3, 224, 224}, gpu::dnn::data_type::fp16,
///                               gpu::dnn::tensor_layout::nhwc);
/// x.strides();   // {150528, 1, 672, 3}: channels last
/// @endcode
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/types.hpp>

#include <cudnn_ops.h>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gpu::dnn {

/// @brief The most dimensions a cuDNN tensor can have (`CUDNN_DIM_MAX`).
inline constexpr int max_tensor_rank = CUDNN_DIM_MAX;

/// @brief The strides, in elements, of a packed tensor of @p dims (logical order N, C,
/// spatial...) in @p layout: for NCHW the last dimension is contiguous, for NHWC the channels,
/// then the spatial dimensions from the last, with N outermost. Computed in 64 bits.
/// @throws std::invalid_argument when @p dims has fewer than 2 entries, a dimension is not
/// positive, a stride would exceed INT_MAX (cuDNN takes strides as `int`), or @p layout is not
/// a named enumerator (values named)
[[nodiscard]] std::vector<int> packed_strides(const std::vector<int>& dims, tensor_layout layout);

namespace detail {
/// @brief Destroys a tensor descriptor; failures are reported, never thrown.
struct tensor_descriptor_deleter {
    void operator()(cudnnTensorDescriptor_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cudnnDestroyTensorDescriptor",
                                            cudnnDestroyTensorDescriptor(raw));
    }
};
} // namespace detail

/// @brief An owning cuDNN tensor descriptor of a packed tensor. Move-only.
///
/// Creating and reading descriptors needs no GPU: cuDNN answers on the host. The getters read
/// the values back from cuDNN, so they show what cuDNN holds, not a copy kept on the side.
class tensor_descriptor
    : public gpu::detail::handle_owner<tensor_descriptor, cudnnTensorDescriptor_t,
                                       detail::tensor_descriptor_deleter> {
public:
    /// @brief Describes a packed tensor.
    ///
    /// The strides are `packed_strides(dims, layout)`, set explicitly
    /// (`cudnnSetTensorNdDescriptor`), so cuDNN holds exactly these for every rank and layout;
    /// `nhwc` of another rank than 4 means channels innermost and N outermost (NWC, NDHWC...).
    /// @param dims the dimensions in logical order N, C, spatial... (3 to 8 of them, cuDNN's
    /// n-d range; 4 for images, 5 for volumes; a matrix is `{rows, columns, 1}`), whatever the
    /// layout
    /// @param type the element type
    /// @param layout where the channels lie: `nchw` (channels first) or `nhwc` (channels last)
    /// @throws std::invalid_argument when a dimension is not positive, the rank is outside
    /// [3, 8], the element count exceeds INT_MAX (cuDNN's 32-bit indexing), or @p type or
    /// @p layout is not a named enumerator (values named)
    /// @throws gpu::dnn::dnn_error when cuDNN rejects the descriptor
    tensor_descriptor(const std::vector<int>& dims, data_type type,
                      tensor_layout layout = tensor_layout::nchw);

    /// @brief The number of dimensions.
    /// @throws std::logic_error on a descriptor that holds nothing (this holds for every getter)
    [[nodiscard]] int rank() const;
    /// @brief The dimensions in logical order N, C, spatial...
    [[nodiscard]] std::vector<int> dims() const;
    /// @brief The strides in elements, in the same logical order as `dims()`.
    [[nodiscard]] std::vector<int> strides() const;
    /// @brief The element type.
    /// @throws std::domain_error when an adopted descriptor holds a type cudagap does not name
    [[nodiscard]] data_type type() const;
    /// @brief The layout whose packed strides these are; empty for other strides (an adopted
    /// descriptor with padding, say).
    [[nodiscard]] std::optional<tensor_layout> layout() const;
    /// @brief The product of the dimensions.
    /// @throws std::domain_error when an adopted descriptor's product does not fit `size_t`
    [[nodiscard]] std::size_t element_count() const;
    /// @brief The bytes the tensor occupies, as cuDNN computes them.
    [[nodiscard]] std::size_t size_bytes() const;
    /// @brief E.g. `fp16 nhwc [32, 3, 224, 224]`.
    [[nodiscard]] std::string to_string() const;

private:
    friend handle_owner;
    tensor_descriptor(adopt_t, cudnnTensorDescriptor_t raw) noexcept : handle_owner(raw) {}
};

} // namespace gpu::dnn
