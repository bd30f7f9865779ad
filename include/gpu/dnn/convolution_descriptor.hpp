/// @file convolution_descriptor.hpp
/// @brief `gpu::dnn::convolution_descriptor` (padding, stride, dilation, groups, mode, compute
/// type, math type), the shape rules of a convolution, and its output shape.
///
/// @code
/// gpu::dnn::tensor_descriptor x({32, 3, 224, 224}, gpu::dnn::data_type::fp32);
/// gpu::dnn::filter_descriptor w({64, 3, 3, 3}, gpu::dnn::data_type::fp32);
/// gpu::dnn::convolution_descriptor conv({.padding = {1, 1}});
/// conv.output_dims(x, w);   // {32, 64, 224, 224}
/// @endcode
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>

#include <cudnn_cnn.h>

#include <string>
#include <vector>

namespace gpu::dnn {

/// @brief The shape parameters of a convolution, one entry per spatial dimension (two for
/// images: height, width). Plain data; compare, copy, use as a key.
struct convolution_geometry {
    std::vector<int> padding{0, 0};  ///< zeros added on both sides of each spatial dimension
    std::vector<int> stride{1, 1};   ///< step of the filter, at least 1
    std::vector<int> dilation{1, 1}; ///< spacing of the filter taps, at least 1 (1: dense)
    int groups = 1;                  ///< channel groups; must divide C and K (C for depthwise)
    convolution_mode mode = convolution_mode::cross_correlation; ///< filter flipped or not

    /// @brief The number of spatial dimensions: `padding.size()`.
    [[nodiscard]] int spatial_rank() const noexcept { return static_cast<int>(padding.size()); }

    /// @brief E.g. `padding [1, 1], stride [1, 1], dilation [1, 1], groups 1, cross_correlation`.
    [[nodiscard]] std::string to_string() const;

    /// @brief Geometries compare member by member.
    friend auto operator<=>(const convolution_geometry&, const convolution_geometry&) = default;
};

/// @brief Checks a geometry on its own.
/// @throws std::invalid_argument when padding, stride and dilation differ in length or have no
/// entry or more than 6, a padding is negative, a stride or dilation is not positive,
/// `groups` is not positive, or `mode` is not a named enumerator; the message names the values
void validate(const convolution_geometry& geometry);

/// @brief Checks that an input, a filter and a geometry make a convolution that cuDNN can
/// describe, before any allocation or cuDNN call.
///
/// The arithmetic is done in 64 bits, and everything cuDNN receives or computes as `int` must
/// fit in one: cuDNN's own output-size computation overflows silently (padding 2^31 - 1 gives
/// it a wrong size) or answers `CUDNN_STATUS_BAD_PARAM` without saying which value.
/// @param input N, C, spatial...
/// @param filter K, C / groups, spatial...
/// @param geometry padding, stride, dilation, groups
/// @throws std::invalid_argument naming the values when: the geometry is invalid; the ranks
/// differ; a dimension is not positive; the input or filter has more than INT_MAX elements;
/// `groups` does not divide C or K; the filter's channels times `groups` are not C; a padded
/// input (`in + 2 * padding`) exceeds INT_MAX; the dilated filter
/// (`dilation * (filter - 1) + 1`) is larger than the padded input; or the output has more
/// than INT_MAX elements
void validate_convolution(const std::vector<int>& input, const std::vector<int>& filter,
                          const convolution_geometry& geometry);

/// @brief The output shape by the textbook formula, computed on the host in 64 bits:
/// N, K, then `(in + 2 * padding - dilation * (filter - 1) - 1) / stride + 1` per spatial
/// dimension (rounded down). Every entry is positive and fits in `int`.
/// @throws std::invalid_argument as `validate_convolution`
[[nodiscard]] std::vector<int> convolution_output_dims(const std::vector<int>& input,
                                                       const std::vector<int>& filter,
                                                       const convolution_geometry& geometry);

namespace detail {
/// @brief Destroys a convolution descriptor; failures are reported, never thrown.
struct convolution_descriptor_deleter {
    void operator()(cudnnConvolutionDescriptor_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cudnnDestroyConvolutionDescriptor",
                                            cudnnDestroyConvolutionDescriptor(raw));
    }
};
} // namespace detail

/// @brief An owning cuDNN convolution descriptor. Move-only. Needs no GPU.
class convolution_descriptor
    : public gpu::detail::handle_owner<convolution_descriptor, cudnnConvolutionDescriptor_t,
                                       detail::convolution_descriptor_deleter> {
public:
    /// @brief Describes a convolution.
    /// @param geometry padding, stride, dilation, groups, mode
    /// @param compute the accumulation type: `fp32` (what PyTorch uses for every data type) or
    /// `fp16` (half accumulation, faster on some GPUs, less accurate); cuDNN has no BF16
    /// accumulation
    /// @param math which arithmetic cuDNN may use (tensor cores, TF32; see `math_type`)
    /// @throws std::invalid_argument for an invalid geometry, a `bf16` compute type, or a
    /// compute or math type that is not a named enumerator (values named)
    /// @throws gpu::dnn::dnn_error when cuDNN rejects the descriptor
    explicit convolution_descriptor(const convolution_geometry& geometry,
                                    data_type compute = data_type::fp32,
                                    math_type math = math_type::default_math);

    /// @brief Padding, stride, dilation, groups and mode as cuDNN holds them.
    /// @throws std::logic_error on a descriptor that holds nothing (this holds for every member
    /// function)
    [[nodiscard]] convolution_geometry geometry() const;
    /// @brief The accumulation type.
    [[nodiscard]] data_type compute_type() const;
    /// @brief The math type.
    [[nodiscard]] math_type math() const;
    /// @brief Changes the math type (an algorithm search reports the math type each algorithm
    /// ran with, and the convolution must then run with that one).
    /// @throws std::invalid_argument when @p math is not a named enumerator
    void set_math(math_type math);

    /// @brief The output shape for @p input and @p filter, as cuDNN computes it
    /// (`cudnnGetConvolutionNdForwardOutputDim`), after `validate_convolution` has checked the
    /// shapes on the host, so that every shape cuDNN would refuse or get wrong in its 32-bit
    /// arithmetic is refused first with its values; the answer equals
    /// `convolution_output_dims`.
    /// @throws std::invalid_argument as `validate_convolution`, or when the element types of
    /// @p input and @p filter differ
    [[nodiscard]] std::vector<int> output_dims(const tensor_descriptor& input,
                                               const filter_descriptor& filter) const;

    /// @brief E.g. `padding [1, 1], stride [1, 1], dilation [1, 1], groups 1,
    /// cross_correlation, compute fp32, math fma`.
    [[nodiscard]] std::string to_string() const;

private:
    friend handle_owner;
    convolution_descriptor(adopt_t, cudnnConvolutionDescriptor_t raw) noexcept : handle_owner(raw)
    {}
};

} // namespace gpu::dnn
