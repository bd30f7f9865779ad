/// @file conv2d.hpp
/// @brief `gpu::nn::conv2d`: `torch.nn.Conv2d` on the dnn wrapper's planned convolutions: the
/// forward with its bias (fused into cuDNN's epilogue when cuDNN takes it), and the backward
/// data, filter and bias passes, with FP32 parameter gradients.
///
/// @code
/// // nn.Conv2d(1, 32, 3, padding=1):
/// gpu::nn::conv2d conv1(store, "conv1", 1, 32, 3, {.padding = {1, 1}});
/// // torch.backends.cudnn.benchmark = True:
/// ctx.set_convolution_options({.search = gpu::dnn::algorithm_search::exhaustive});
/// const auto out = conv1.plan(ctx, {.shape = {64, 1, 28, 28}, .type = gpu::element_type::fp16});
/// @endcode
///
/// | pass | computation | dnn wrapper | types under `mixed_precision::fp16()` |
/// |---|---|---|---|
/// | forward | `y = conv(x, W) + b` | `convolution`, `bias` epilogue | FP16, FP32 accumulation |
/// | input gradient | `dx = conv_backward_data(W, dy)` | `convolution_backward_data` | FP16 |
/// | weight gradient | `dW += conv_backward_filter(x, dy)` | `convolution_backward_filter` | FP32 |
/// | bias gradient | `db += Σ_{n,h,w} dy` | `convolution_backward_bias` | FP32 |
///
/// Under `fp16()` x, W, b and y are FP16. The bias epilogue is fused, or `cudnnAddTensor` runs
/// after the convolution. The filter and bias passes write into an FP16 scratch, which
/// `accumulate` then adds to the FP32 gradient.
///
/// Under `mixed_precision::fp32()` the filter and bias passes add into the FP32 gradient
/// directly (cuDNN's beta = 1), with no scratch. The three plans are made by `plan` under the
/// context's `convolution_options()`: the search (`exhaustive` is `cudnn.benchmark`), the
/// workspace budget, TF32 and determinism hold for all three passes, as in PyTorch.
///
/// Parameters: `<name>.weight` `[out_channels, in_channels, kernel_h, kernel_w]`
/// (Kaiming-uniform, `a = sqrt(5)`, fan-in `in_channels · kernel_h · kernel_w`) and
/// `<name>.bias` `[out_channels]` (uniform ±1/sqrt(fan-in)): PyTorch's names, layout and
/// initialisation, so a `state_dict` maps one to one.
///
/// **Inference.** Planned while the context is in inference mode
/// (`context::set_inference_mode`), the layer makes the forward plan only: no backward plans,
/// no search for their algorithms, no gradient scratch. **Several batch sizes at once.** A layer
/// holds one plan; `share()` makes another layer over the same parameters, with a plan of its
/// own, so that one model keeps a plan (and a captured graph) per batch size.
///
/// Inputs are `[N, in_channels, H, W]` in `nchw` layout (the weight is stored in PyTorch's
/// `[out, in, kh, kw]` order, which cuDNN reads only with NCHW data), in the policy's compute
/// type; outputs `[N, out_channels, H_out, W_out]` in the same type and layout, with
/// `H_out = (H + 2·padding_h − kernel_h) / stride_h + 1` (rounded down), likewise `W_out`.
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/convolution_backward.hpp>
#include <gpu/nn/layer.hpp>
#include <gpu/nn/parameters.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace gpu::nn {

/// @brief The options of a `conv2d` layer besides its channels and kernel. Plain data.
struct conv2d_options {
    std::array<int, 2> stride{1, 1};  ///< the step of the window (height, width), at least 1
    std::array<int, 2> padding{0, 0}; ///< zeros added on both sides (height, width), at least 0
    bool bias = true;                 ///< learn an additive bias per output channel
};

/// @brief A 2-d convolution layer, `torch.nn.Conv2d(in, out, kernel, stride, padding,
/// bias=...)` (dilation 1, one group, zero padding). Not copyable, movable.
class conv2d : public layer {
public:
    /// @brief Registers `<name>.weight` (and `<name>.bias`) in @p store, initialised like
    /// PyTorch's `nn.Conv2d`.
    /// @param store where the parameters live
    /// @param name the prefix of the parameters' names
    /// @param in_channels C of the input
    /// @param out_channels K, the output's channels
    /// @param kernel the window (height, width)
    /// @param options stride, padding, bias
    /// @throws std::invalid_argument when a channel count or a kernel extent is not positive or
    /// above 2^31 − 1, a stride is not positive, a padding is negative, or the store refuses the
    /// names (values named); nothing is registered then
    /// @throws std::logic_error when @p store is already allocated
    conv2d(parameters& store, std::string name, std::int64_t in_channels, std::int64_t out_channels,
           std::array<int, 2> kernel, const conv2d_options& options = {});

    /// @brief A square @p kernel_size × @p kernel_size window (`nn.Conv2d(in, out, 3)`).
    /// @throws as the other constructor
    conv2d(parameters& store, std::string name, std::int64_t in_channels, std::int64_t out_channels,
           int kernel_size, const conv2d_options& options = {});

    /// @brief Another layer over this one's parameters (the same store, the same
    /// `<name>.weight` and `<name>.bias`), unplanned, with a plan of its own: one per batch size
    /// held at once, as an inference server keeps one plan and one CUDA graph per batch bucket.
    /// Registers nothing; the store must outlive both layers. Backward passes of both add into
    /// the same gradients.
    [[nodiscard]] conv2d share() const;

    /// @brief E.g. `conv2d conv1(1 -> 32, kernel [3, 3], stride [1, 1], padding [1, 1], bias)`.
    [[nodiscard]] std::string describe() const override;
    /// @brief The name it was made with, e.g. `conv1` (the prefix of its parameters' names).
    [[nodiscard]] std::string name() const override { return name_; }

    /// @brief C of the input.
    [[nodiscard]] std::int64_t in_channels() const noexcept { return in_; }
    /// @brief K, the output's channels.
    [[nodiscard]] std::int64_t out_channels() const noexcept { return out_; }
    /// @brief The window (height, width).
    [[nodiscard]] const std::array<int, 2>& kernel() const noexcept { return kernel_; }
    /// @brief The options it was made with.
    [[nodiscard]] const conv2d_options& options() const noexcept { return options_; }
    /// @brief The store index of the weight.
    [[nodiscard]] std::size_t weight_index() const noexcept { return weight_; }
    /// @brief The store index of the bias, if the layer has one.
    [[nodiscard]] std::optional<std::size_t> bias_index() const noexcept { return bias_; }

    /// @brief The output shape for an input shape `[N, in_channels, H, W]`.
    /// @throws std::invalid_argument for another number of dimensions, a dimension that is not
    /// positive or above 2^31 − 1, a channel count other than `in_channels`, or a padded input
    /// smaller than the kernel (values named)
    [[nodiscard]] std::vector<std::int64_t>
    output_shape(const std::vector<std::int64_t>& input) const;

    /// @brief The forward plan of the current plan (its `explain()` says which algorithm runs
    /// and why, and whether the bias is fused); null before `plan`.
    [[nodiscard]] const dnn::convolution* forward_plan() const noexcept
    {
        return forward_ ? &*forward_ : nullptr;
    }
    /// @brief The backward data plan of the current plan; null before `plan`, and for a plan
    /// made in inference mode.
    [[nodiscard]] const dnn::convolution_backward_data* backward_data_plan() const noexcept
    {
        return data_ ? &*data_ : nullptr;
    }
    /// @brief The backward filter plan of the current plan; null before `plan`, and for a plan
    /// made in inference mode.
    [[nodiscard]] const dnn::convolution_backward_filter* backward_filter_plan() const noexcept
    {
        return filter_ ? &*filter_ : nullptr;
    }

private:
    struct sharing {};
    conv2d(const conv2d& other, sharing);
    tensor_spec do_plan(context& ctx, const tensor_spec& input) override;
    void do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output) override;
    void do_backward(context& ctx, const tensor_ref& output_gradient,
                     const tensor_ref& input_gradient) override;
    void add_weight_gradient(context& ctx, const void* output_gradient);
    void add_bias_gradient(context& ctx, const void* output_gradient);

    std::string name_;
    std::int64_t in_ = 0;
    std::int64_t out_ = 0;
    std::array<int, 2> kernel_{};
    conv2d_options options_{};
    std::size_t weight_ = 0;
    std::optional<std::size_t> bias_;
    dnn::convolution_problem problem_{}; // the planned problem, epilogue none (the backward's)
    dnn::convolution_options planned_{}; // the options the plans were made with
    std::optional<dnn::convolution> forward_;
    std::optional<dnn::convolution_backward_data> data_;
    std::optional<dnn::convolution_backward_filter> filter_;
    const void* saved_input_ = nullptr; // x of the last forward (for dW)
    device_buffer<std::byte>
        weight_scratch_; // dW in the compute type, before it is added (FP16/BF16)
    device_buffer<std::byte> bias_scratch_; // db likewise
};

} // namespace gpu::nn
