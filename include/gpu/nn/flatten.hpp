/// @file flatten.hpp
/// @brief `gpu::nn::flatten`: `torch.nn.Flatten`, a view of its input under a flatter shape; no
/// data moves in either direction.
///
/// @code
/// gpu::nn::flatten flat;                                      // start_dim = 1, as PyTorch
/// const auto out = flat.plan(ctx, {.shape = {64, 32, 7, 7}}); // [64, 1568]
/// flat.forward(ctx, x.ref(), {x.data(), out});               // the same memory
/// @endcode
#pragma once

#include <gpu/nn/layer.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace gpu::nn {

/// @brief Joins the dimensions from `start_dim` to the last into one (`nn.Flatten(start_dim)`
/// with `end_dim = -1`). Its output is its input's memory: forward and backward only check.
///
/// The input must be in `nchw` layout (memory in logical order), where the flattened features
/// come out in PyTorch's order (channel, row, column); a channels-last tensor would need a copy
/// to give that order, so it is refused rather than flattened in another order.
class flatten : public layer {
public:
    /// @brief Flattens from dimension @p start_dim (PyTorch's default 1 keeps the batch).
    /// @throws std::invalid_argument when @p start_dim is negative
    explicit flatten(int start_dim = 1);

    /// @brief E.g. `flatten(start_dim 1)`.
    [[nodiscard]] std::string describe() const override;
    /// @brief Always true: the output is the input's memory.
    [[nodiscard]] bool output_is_view() const noexcept override { return true; }
    /// @brief The first dimension joined.
    [[nodiscard]] int start_dim() const noexcept { return start_dim_; }

    /// @brief The output shape for @p input: its first `start_dim` dimensions, then the product
    /// of the others.
    /// @throws std::invalid_argument when @p input has no more than `start_dim` dimensions, or
    /// a dimension is not positive (values named)
    [[nodiscard]] std::vector<std::int64_t>
    output_shape(const std::vector<std::int64_t>& input) const;

private:
    tensor_spec do_plan(context& ctx, const tensor_spec& input) override;
    void do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output) override;
    void do_backward(context& ctx, const tensor_ref& output_gradient,
                     const tensor_ref& input_gradient) override;

    int start_dim_;
};

} // namespace gpu::nn
