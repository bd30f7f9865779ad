/// @file mixed_precision.hpp
/// @brief `gpu::nn::mixed_precision`: PyTorch's `torch.autocast` made explicit, one value for a
/// whole model: which operations run in the compute precision (FP16 or BF16), which in FP32, and
/// which in the type of their input; parameters are always kept in FP32.
///
/// @code
/// const gpu::nn::mixed_precision policy = gpu::nn::mixed_precision::fp16();
/// policy.output_type(gpu::nn::autocast_op::linear, gpu::element_type::fp16);        // FP16
/// policy.output_type(gpu::nn::autocast_op::cross_entropy, gpu::element_type::fp16); // FP32
/// policy.needs_loss_scaling();                                                       // true
/// @endcode
///
/// | what | `fp32()` | `fp16()` | `bf16()` |
/// |---|---|---|---|
/// | master parameters, their gradients, optimizer state | FP32 | FP32 | FP32 |
/// | working copy of the parameters the layers read | the master itself | FP16 | BF16 |
/// | linear and conv2d: inputs, outputs (`compute_type`) | FP32 | FP16 | BF16 |
/// | accumulation inside GEMMs and convolutions | FP32 | FP32 | FP32 |
/// | weight and bias gradients | FP32 | FP32 (FP16 products accumulated in FP32) | FP32 |
/// | activation gradients between layers | FP32 | FP16 | BF16 |
/// | relu, max_pool2d, dropout, flatten (`input_type`) | input's | input's | input's |
/// | softmax, log_softmax, cross-entropy (`fp32`) | FP32 | FP32 | FP32 |
/// | loss scaling (`grad_scaler`) | no | yes | no (BF16 has FP32's exponent range) |
///
/// The rules follow PyTorch's CUDA autocast lists: `linear` and `conv2d` are on its
/// "lower precision" list, `softmax`, `log_softmax` and `cross_entropy` on its "FP32" list, and
/// `relu`, `max_pool2d`, `dropout` and `flatten` on neither, so they run in their input's type.
/// One difference: PyTorch computes a weight gradient in FP16 and casts it to FP32 to accumulate
/// it; cudagap's GEMMs write it in FP32 directly (FP16 products, FP32 sums), which loses less.
#pragma once

#include <gpu/element_type.hpp>

#include <string_view>

namespace gpu::nn {

/// @brief How autocast chooses an operation's precision.
enum class autocast_rule {
    compute_type, ///< inputs and output in the compute precision, FP32 accumulation
    fp32,         ///< computed and returned in FP32 whatever the input's type
    input_type,   ///< runs in its input's type
};

/// @brief `compute_type`, `fp32` or `input_type`; `unknown` outside the enumeration.
[[nodiscard]] std::string_view to_string(autocast_rule rule) noexcept;

/// @brief The operations of the `nn` component, for the policy.
enum class autocast_op {
    linear,        ///< `gpu::nn::linear` (`torch.nn.Linear`)
    conv2d,        ///< a 2-d convolution (`torch.nn.Conv2d`)
    relu,          ///< ReLU
    max_pool2d,    ///< 2-d max pooling
    dropout,       ///< dropout
    flatten,       ///< `gpu::nn::flatten`
    softmax,       ///< softmax
    log_softmax,   ///< log-softmax
    cross_entropy, ///< cross-entropy loss from logits
};

/// @brief E.g. `linear`; `unknown` outside the enumeration.
[[nodiscard]] std::string_view to_string(autocast_op op) noexcept;

/// @brief The rule of @p op (see the file's table).
[[nodiscard]] constexpr autocast_rule rule_of(autocast_op op) noexcept
{
    switch (op) {
    case autocast_op::linear:
    case autocast_op::conv2d: return autocast_rule::compute_type;
    case autocast_op::softmax:
    case autocast_op::log_softmax:
    case autocast_op::cross_entropy: return autocast_rule::fp32;
    case autocast_op::relu:
    case autocast_op::max_pool2d:
    case autocast_op::dropout:
    case autocast_op::flatten: break;
    }
    return autocast_rule::input_type;
}

/// @brief A model's mixed-precision policy: its compute precision. Plain data.
struct mixed_precision {
    /// FP32 (no autocast), FP16 or BF16: the type of the working copy of the parameters, of the
    /// inputs and outputs of linear and conv2d layers, and of the activations between them.
    element_type compute = element_type::fp32;

    /// @brief No autocast: everything in FP32.
    [[nodiscard]] static constexpr mixed_precision fp32() noexcept { return {element_type::fp32}; }
    /// @brief `torch.autocast("cuda", dtype=torch.float16)`, with loss scaling.
    [[nodiscard]] static constexpr mixed_precision fp16() noexcept { return {element_type::fp16}; }
    /// @brief `torch.autocast("cuda", dtype=torch.bfloat16)`, no loss scaling needed.
    [[nodiscard]] static constexpr mixed_precision bf16() noexcept { return {element_type::bf16}; }
    /// @brief The policy a command line names: `fp16`, `bf16` or `fp32`.
    /// @throws std::invalid_argument naming @p name and the three choices otherwise
    [[nodiscard]] static mixed_precision from_name(std::string_view name);

    /// @brief Checks that `compute` is FP32, FP16 or BF16.
    /// @throws std::invalid_argument naming the type otherwise (FP64 has no tensor cores to
    /// gain, and values outside the enumeration mean nothing)
    void validate() const;

    /// @brief The type @p op produces from an input of type @p input under this policy.
    /// @throws std::invalid_argument as `validate`, or for an @p op outside the enumeration
    [[nodiscard]] element_type output_type(autocast_op op, element_type input) const;

    /// @brief Whether gradients need loss scaling (`torch.cuda.amp.GradScaler`): only FP16, whose
    /// smallest normal value (6.1e-5) is where small gradients underflow.
    [[nodiscard]] constexpr bool needs_loss_scaling() const noexcept
    {
        return compute == element_type::fp16;
    }

    /// @brief Policies compare by compute precision.
    friend constexpr bool operator==(const mixed_precision&, const mixed_precision&) = default;
};

} // namespace gpu::nn
