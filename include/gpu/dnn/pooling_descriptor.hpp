/// @file pooling_descriptor.hpp
/// @brief `gpu::dnn::pooling_descriptor` (mode, window, padding, stride, NaN propagation), the
/// shape rules of a pooling and its output shape.
///
/// @code
/// gpu::dnn::tensor_descriptor x({32, 64, 112, 112}, gpu::dnn::data_type::fp32);
/// gpu::dnn::pooling_descriptor pool({.window = {3, 3}, .padding = {1, 1}, .stride = {2, 2}});
/// pool.output_dims(x);   // {32, 64, 56, 56}: torch.nn.MaxPool2d(3, stride=2, padding=1)
/// @endcode
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>

#include <cudnn_ops.h>

#include <string>
#include <string_view>
#include <vector>

namespace gpu::dnn {

/// @brief What a pooling window computes (`cudnnPoolingMode_t`).
enum class pooling_mode {
    /// The largest element (`torch.nn.MaxPool2d`). cuDNN's backward of this mode may add the
    /// gradients of overlapping windows in a different order from run to run.
    max,
    /// The largest element, with a backward whose results are bitwise identical run to run.
    max_deterministic,
    /// The mean, dividing by the whole window, padding included (`torch.nn.AvgPool2d`'s
    /// default, `count_include_pad=True`).
    average_include_padding,
    /// The mean of the elements inside the input only (`count_include_pad=False`).
    average_exclude_padding,
};

/// @brief `max`, `max_deterministic`, `average_include_padding` or `average_exclude_padding`;
/// `unknown` for a value that is none of them.
[[nodiscard]] std::string_view to_string(pooling_mode mode) noexcept;

/// @brief The shape parameters of a pooling, one entry per spatial dimension (two for images:
/// height, width; three for volumes). Plain data; compare, copy, use as a key.
///
/// The defaults are `torch.nn.MaxPool2d(2)`: a 2x2 window, stride 2, no padding. Unlike
/// PyTorch, the stride does not follow the window: `{.window = {3, 3}}` keeps stride 2.
struct pooling_geometry {
    std::vector<int> window{2, 2};  ///< the window's extent, at least 1
    std::vector<int> padding{0, 0}; ///< implicit padding on both sides, at most half the window
    std::vector<int> stride{2, 2};  ///< the step between windows, at least 1
    pooling_mode mode = pooling_mode::max; ///< what a window computes
    /// Max pooling: a NaN in a window gives NaN (PyTorch's behaviour) rather than being
    /// skipped. Average pooling propagates NaN whatever this says.
    bool propagate_nan = true;

    /// @brief The number of spatial dimensions: `window.size()`.
    [[nodiscard]] int spatial_rank() const noexcept { return static_cast<int>(window.size()); }

    /// @brief E.g. `max, window [2, 2], padding [0, 0], stride [2, 2]`, followed by
    /// `, NaN not propagated` when `propagate_nan` is false.
    [[nodiscard]] std::string to_string() const;

    /// @brief Geometries compare member by member.
    friend auto operator<=>(const pooling_geometry&, const pooling_geometry&) = default;
};

/// @brief Checks a pooling geometry on its own.
///
/// A padding of more than half the window is refused as PyTorch refuses it ("pad should be at
/// most half of effective kernel size"): with it, every window holds at least one element of
/// the input, so no maximum is taken over padding alone and no average divides by zero.
/// @throws std::invalid_argument when window, padding and stride differ in length or do not
/// have 2 or 3 entries (cuDNN pools 4-d and 5-d tensors), a window or stride is not positive,
/// a padding is negative or more than half its window, or `mode` is not a named enumerator;
/// the message names the values
void validate(const pooling_geometry& geometry);

/// @brief The output shape by cuDNN's formula, computed on the host in 64 bits: N, C, then
/// `(in + 2 * padding - window) / stride + 1` per spatial dimension (rounded down, PyTorch's
/// `ceil_mode=False`).
/// @param input N, C, spatial... (logical order, whatever the layout)
/// @param geometry window, padding, stride
/// @throws std::invalid_argument naming the values when the geometry is invalid, the input's
/// rank is not the geometry's spatial rank + 2, a dimension is not positive, the input has more
/// than INT_MAX elements, a padded dimension (`in + 2 * padding`) exceeds INT_MAX, or a window
/// is larger than its padded dimension
[[nodiscard]] std::vector<int> pooling_output_dims(const std::vector<int>& input,
                                                   const pooling_geometry& geometry);

namespace detail {
/// @brief Destroys a pooling descriptor; failures are reported, never thrown.
struct pooling_descriptor_deleter {
    void operator()(cudnnPoolingDescriptor_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cudnnDestroyPoolingDescriptor",
                                            cudnnDestroyPoolingDescriptor(raw));
    }
};
} // namespace detail

/// @brief An owning cuDNN pooling descriptor (`cudnnSetPoolingNdDescriptor`). Move-only.
/// Needs no GPU; the getters read the values back from cuDNN.
class pooling_descriptor
    : public gpu::detail::handle_owner<pooling_descriptor, cudnnPoolingDescriptor_t,
                                       detail::pooling_descriptor_deleter> {
public:
    /// @brief Describes a pooling.
    /// @throws std::invalid_argument as `validate(const pooling_geometry&)`
    /// @throws gpu::dnn::dnn_error when cuDNN rejects the descriptor
    explicit pooling_descriptor(const pooling_geometry& geometry = {});

    /// @brief Mode, window, padding, stride and NaN propagation as cuDNN holds them.
    /// @throws std::logic_error on a descriptor that holds nothing (this holds for every member
    /// function)
    /// @throws std::domain_error for a mode cudagap does not name (an adopted descriptor)
    [[nodiscard]] pooling_geometry geometry() const;

    /// @brief The output shape for @p input, as cuDNN computes it
    /// (`cudnnGetPoolingNdForwardOutputDim`), after `pooling_output_dims` has checked the shapes
    /// on the host, so that a shape cuDNN would refuse without saying why is refused first with
    /// its values; the answer equals `pooling_output_dims`.
    /// @throws std::invalid_argument as `pooling_output_dims`
    [[nodiscard]] std::vector<int> output_dims(const tensor_descriptor& input) const;

    /// @brief `geometry().to_string()`.
    [[nodiscard]] std::string to_string() const;

private:
    friend handle_owner;
    pooling_descriptor(adopt_t, cudnnPoolingDescriptor_t raw) noexcept : handle_owner(raw) {}
};

} // namespace gpu::dnn
