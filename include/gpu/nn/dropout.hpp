/// @file dropout.hpp
/// @brief `gpu::nn::dropout`: `torch.nn.Dropout(p)`, inverted dropout on the dnn wrapper's seeded
/// cuDNN dropout in training, the identity in evaluation (`ctx.set_training(false)`).
///
/// @code
/// gpu::nn::dropout drop(0.25F, /*seed=*/7);   // nn.Dropout(0.25)
/// const auto out = drop.plan(ctx, hidden);     // the same spec; the mask's memory
/// drop.forward(ctx, h.ref(), d.ref());         // training: d = h · mask / (1 − p)
/// drop.backward(ctx, dd.ref(), dh.ref());      // dh = dd · mask / (1 − p), the same mask
/// @endcode
///
/// Any shape (at most 2^31 − 1 elements), any layout, FP32, FP16 or BF16: the layer runs in its
/// input's type (`autocast_rule::input_type`). No parameters.
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/dnn/dropout.hpp>
#include <gpu/dnn/types.hpp>
#include <gpu/nn/layer.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace gpu::nn {

/// @brief Dropout, `torch.nn.Dropout(p)`: in training each element is zeroed with probability
/// p and the others are scaled by 1 / (1 − p); in evaluation the output is the input. Not
/// copyable, movable.
///
/// `plan` makes cuDNN's generator states once, seeded with the seed, on `ctx.stream()` (with a
/// p of 0 none are made: the layer is the identity), and the mask's memory (cuDNN's reserve
/// space) for each batch size. A training forward draws a new mask into it and advances the
/// states on the device, so every forward, and every replay of a CUDA graph that captured one,
/// draws a new mask with no host work; the backward reads the mask the last forward drew.
/// Whether the context trains is read at each forward: the backward follows what its forward did.
/// In evaluation, and for p = 0, the forward copies the input to the output (nothing when they
/// are the same memory) and the backward copies the gradient likewise. A forward that drops
/// needs an output of its own, and its backward an input gradient of its own: cuDNN does not
/// document dropout in place, so the layer refuses the same memory there
/// (`std::invalid_argument`).
///
/// The masks differ from PyTorch's for the same seed (cuDNN's generator, not PyTorch's), as
/// the initial parameters do; the same seed on the same kind of GPU gives the same masks.
class dropout : public layer {
public:
    /// @brief A dropout of probability @p probability, its masks drawn from @p seed.
    /// @throws std::invalid_argument when @p probability is outside [0, 1) or NaN (cuDNN's
    /// range; PyTorch's p = 1 zeroes everything, which needs no layer), with its value
    explicit dropout(float probability = 0.5F, std::uint64_t seed = 0);

    /// @brief E.g. `dropout(p 0.25)`.
    [[nodiscard]] std::string describe() const override;

    /// @brief The probability of zeroing an element.
    [[nodiscard]] float probability() const noexcept { return probability_; }
    /// @brief The seed of the masks.
    [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
    /// @brief Whether the last forward dropped (the context was training and p > 0), which the
    /// backward follows.
    [[nodiscard]] bool dropped() const noexcept { return dropped_; }
    /// @brief The memory of the mask (cuDNN's reserve space, opaque), planned for the batch.
    [[nodiscard]] const device_buffer<std::byte>& mask() const noexcept { return reserve_; }
    /// @brief cuDNN's dropout with its generator states (save `states()` to continue the
    /// sequence of masks elsewhere); null before the first plan, and for p = 0.
    [[nodiscard]] const dnn::dropout* generator() const noexcept
    {
        return dropout_ ? &*dropout_ : nullptr;
    }

private:
    tensor_spec do_plan(context& ctx, const tensor_spec& input) override;
    void do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output) override;
    void do_backward(context& ctx, const tensor_ref& output_gradient,
                     const tensor_ref& input_gradient) override;

    float probability_ = 0.5F;
    std::uint64_t seed_ = 0;
    std::optional<dnn::dropout> dropout_; // seeded once, kept across plans
    device_buffer<std::byte> reserve_;    // the mask of the last training forward
    dnn::data_type type_ = dnn::data_type::fp32;
    std::size_t elements_ = 0;
    std::size_t bytes_ = 0; // of the input (and the output)
    bool dropped_ = false;
};

} // namespace gpu::nn
