/// @file max_pool2d.hpp
/// @brief `gpu::nn::max_pool2d`: `torch.nn.MaxPool2d`, the maximum over each window, and its
/// gradient, on the dnn wrapper's pooling (`cudnnPoolingForward` / `cudnnPoolingBackward`).
///
/// @code
/// gpu::nn::max_pool2d pool(2);                           // nn.MaxPool2d(2): stride 2, no padding
/// const auto out = pool.plan(ctx, {.shape = {64, 32, 28, 28}, .type = gpu::element_type::fp16});
/// // out: FP16 [64, 32, 14, 14] nchw
/// @endcode
///
/// Inputs are `[N, C, H, W]`, `nchw` or `nhwc` (channels last; the output keeps the layout), FP32,
/// FP16 or BF16 (the layer runs in its input's type: `autocast_rule::input_type`). The output
/// is `[N, C, H_out, W_out]` with `H_out = (H + 2·padding_h − kernel_h) / stride_h + 1`, rounded
/// down (PyTorch's `ceil_mode=False`), likewise `W_out`. A NaN in a window gives NaN, as in
/// PyTorch. No parameters.
#pragma once

#include <gpu/dnn/pooling.hpp>
#include <gpu/nn/layer.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpu::nn {

/// @brief 2-d max pooling, `torch.nn.MaxPool2d(kernel, stride, padding)` (dilation 1,
/// `ceil_mode=False`). Not copyable, movable.
///
/// The forward keeps the addresses of its input and output, which the backward reads (cuDNN
/// finds each window's maximum again from both): keep them intact until then. The backward sends
/// each window's gradient to its maximum; when the context's `convolution_options()` ask for
/// determinism (`deterministic_only()` when planned), it uses cuDNN's deterministic max pooling,
/// whose overlapping windows add their gradients in a fixed order.
class max_pool2d : public layer {
public:
    /// @brief `nn.MaxPool2d(kernel_size)`: a square window, the stride equal to it (PyTorch's
    /// default), no padding.
    /// @throws std::invalid_argument as the general constructor
    explicit max_pool2d(int kernel_size);

    /// @brief `nn.MaxPool2d(kernel_size, stride, padding)` with square values.
    /// @throws std::invalid_argument as the general constructor
    max_pool2d(int kernel_size, int stride, int padding = 0);

    /// @brief A window of @p kernel (height, width), moved by @p stride, over the input padded by
    /// @p padding on both sides.
    /// @throws std::invalid_argument when a kernel extent or a stride is not positive, or a
    /// padding is negative or more than half its kernel extent (PyTorch's rule, so that no window
    /// lies in the padding alone); values named
    max_pool2d(std::array<int, 2> kernel, std::array<int, 2> stride,
               std::array<int, 2> padding = {0, 0});

    /// @brief E.g. `max_pool2d(kernel [2, 2], stride [2, 2], padding [0, 0])`.
    [[nodiscard]] std::string describe() const override;

    /// @brief The window (height, width).
    [[nodiscard]] const std::array<int, 2>& kernel() const noexcept { return kernel_; }
    /// @brief The step between windows (height, width).
    [[nodiscard]] const std::array<int, 2>& stride() const noexcept { return stride_; }
    /// @brief The padding on each side (height, width).
    [[nodiscard]] const std::array<int, 2>& padding() const noexcept { return padding_; }

    /// @brief The output shape for an input shape `[N, C, H, W]`.
    /// @throws std::invalid_argument for another number of dimensions, a dimension that is not
    /// positive or above 2^31 − 1, or a padded input smaller than the window (values named)
    [[nodiscard]] std::vector<std::int64_t>
    output_shape(const std::vector<std::int64_t>& input) const;

    /// @brief The pooling plan of the current plan (its geometry says whether it is the
    /// deterministic mode); null before `plan`.
    [[nodiscard]] const dnn::pooling* pooling_plan() const noexcept
    {
        return pooling_ ? &*pooling_ : nullptr;
    }

private:
    tensor_spec do_plan(context& ctx, const tensor_spec& input) override;
    void do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output) override;
    void do_backward(context& ctx, const tensor_ref& output_gradient,
                     const tensor_ref& input_gradient) override;

    std::array<int, 2> kernel_{};
    std::array<int, 2> stride_{};
    std::array<int, 2> padding_{};
    std::optional<dnn::pooling> pooling_;
    const void* saved_input_ = nullptr;  // x of the last forward
    const void* saved_output_ = nullptr; // y of the last forward
};

} // namespace gpu::nn
