/// @file relu.hpp
/// @brief `gpu::nn::relu`: `torch.nn.ReLU`, `y = max(x, 0)`, and its gradient, on the dnn
/// wrapper's activation (`cudnnActivationForward` / `cudnnActivationBackward`).
///
/// @code
/// gpu::nn::relu act;                                     // nn.ReLU()
/// const auto out = act.plan(ctx, conv_out);             // the same spec
/// act.forward(ctx, h.ref(), a.ref());                   // may be in place: a = h
/// act.backward(ctx, da.ref(), dh.ref());                // dh = da where the input was > 0
/// @endcode
///
/// Any shape of 1 to 8 dimensions, any layout, FP32, FP16 or BF16: the layer runs in its input's
/// type (`autocast_rule::input_type`, as PyTorch's autocast leaves `relu` alone). No parameters.
#pragma once

#include <gpu/dnn/activation.hpp>
#include <gpu/nn/layer.hpp>

#include <optional>
#include <string>

namespace gpu::nn {

/// @brief The rectifier, `torch.nn.ReLU`: forward `y = max(x, 0)`, backward `dx = dy` where
/// `x > 0` and 0 elsewhere (PyTorch's `threshold_backward`). Not copyable, movable.
///
/// The forward keeps the addresses of its input and output, which the backward reads: keep
/// both intact until then. Input and output may be the same memory (`nn.ReLU(inplace=True)`),
/// and so may the two gradients.
class relu : public layer {
public:
    /// @brief A ReLU layer.
    relu() noexcept = default;

    /// @brief `relu`.
    [[nodiscard]] std::string describe() const override;

private:
    tensor_spec do_plan(context& ctx, const tensor_spec& input) override;
    void do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output) override;
    void do_backward(context& ctx, const tensor_ref& output_gradient,
                     const tensor_ref& input_gradient) override;

    std::optional<dnn::activation> activation_;
    const void* saved_input_ = nullptr;  // x of the last forward
    const void* saved_output_ = nullptr; // y of the last forward
};

} // namespace gpu::nn
