/// @file linear.hpp
/// @brief `gpu::nn::linear`: `torch.nn.Linear` on cuBLASLt, `y = x·Wᵀ + b` with the bias (and
/// optionally a ReLU) fused into the GEMM's epilogue, and its backward with FP32 gradients.
///
/// @code
/// gpu::nn::linear fc1(store, "fc1", 784, 128, {.relu = true});   // y = relu(x·Wᵀ + b)
/// gpu::nn::linear fc2(store, "fc2", 128, 10);
/// @endcode
///
/// | pass | computation | cuBLASLt call | types under `mixed_precision::fp16()` |
/// |---|---|---|---|
/// | forward | `y = x·Wᵀ + b` | `lt_matmul_bias` (`BIAS` epilogue) | FP16, FP32 accumulation |
/// | backward, input | `dx = dz·W` | `lt_matmul` | FP16 |
/// | backward, weight | `dW += dzᵀ·x` | `lt_matmul` with beta = 1 | FP16 products, FP32 `dW` |
/// | backward, bias | `db += Σ_batch dz` | `BGRADB` epilogue, or a column-sum kernel | FP32 |
///
/// With `relu` the forward's epilogue is `RELU_BIAS`, which then takes `max(·, 0)`. Under
/// `fp16()` x, W, b and y are FP16. The bias gradient comes from the `BGRADB` epilogue of the
/// weight GEMM into a scratch vector, then added, or from a column-sum kernel
/// (`bias_gradient_method`). `dz = dy`, or `dy` where `y > 0` and 0 elsewhere when a ReLU is
/// fused (a small kernel).
/// Parameters: `<name>.weight` `[out_features, in_features]` (Kaiming-uniform, `a = sqrt(5)`, as
/// PyTorch) and `<name>.bias` `[out_features]` (uniform ±1/sqrt(in_features)), PyTorch's names
/// and layout, so a `state_dict` maps one to one.
///
/// Planned in inference mode (`context::set_inference_mode`), the layer allocates nothing (the
/// ReLU's gradient buffer and the bias-gradient scratch are for the backward). `share()` makes
/// another layer over the same parameters with a plan of its own (one per batch size).
///
/// Inputs are `[..., in_features]`, row-major (all leading dimensions are the batch), in the
/// policy's compute type; outputs `[..., out_features]` in the same type.
#pragma once

#include <gpu/nn/layer.hpp>
#include <gpu/nn/parameters.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace gpu::nn {

/// @brief How `linear` computes its bias gradient.
enum class bias_gradient_method {
    /// The epilogue when cuBLASLt has a kernel for it (asked at the first backward of a plan),
    /// else the reduction.
    automatic,
    /// cuBLASLt's `BGRADB` epilogue in the weight-gradient GEMM, written to a scratch vector and
    /// added to the gradient: one pass over dY fewer. Throws `gpu::blas::blas_error` when
    /// cuBLASLt has no such kernel for the types.
    epilogue,
    /// A column-sum kernel over dY that adds to the gradient (FP32 sums, deterministic).
    reduction,
};

/// @brief `automatic`, `epilogue` or `reduction`; `unknown` outside the enumeration.
[[nodiscard]] std::string_view to_string(bias_gradient_method method) noexcept;

/// @brief The options of a `linear` layer. Plain data.
struct linear_options {
    bool bias = true;  ///< learn an additive bias (`nn.Linear(bias=True)`)
    bool relu = false; ///< apply a ReLU after the bias, fused into the GEMM (needs `bias`)
    bias_gradient_method bias_gradient = bias_gradient_method::automatic; ///< see the enum
};

/// @brief A fully connected layer, `torch.nn.Linear`. Not copyable (its plan's buffers are its
/// own), movable.
class linear : public layer {
public:
    /// @brief Registers `<name>.weight` (and `<name>.bias`) in @p store, initialised like
    /// PyTorch's `nn.Linear`.
    /// @throws std::invalid_argument when a feature count is not positive, `relu` is asked
    /// without `bias`, `bias_gradient` is not a named method, or the store refuses the names
    /// @throws std::logic_error when @p store is already allocated
    linear(parameters& store, std::string name, std::int64_t in_features, std::int64_t out_features,
           const linear_options& options = {});

    /// @brief Another layer over this one's parameters (the same store, the same
    /// `<name>.weight` and `<name>.bias`), unplanned, with a plan of its own (see
    /// `conv2d::share`). Registers nothing; the store must outlive both layers.
    [[nodiscard]] linear share() const;

    /// @brief E.g. `linear fc1(784 -> 128, bias, relu)`.
    [[nodiscard]] std::string describe() const override;
    /// @brief The name it was made with, e.g. `fc1` (the prefix of its parameters' names).
    [[nodiscard]] std::string name() const override { return name_; }

    /// @brief Inputs per row.
    [[nodiscard]] std::int64_t in_features() const noexcept { return in_; }
    /// @brief Outputs per row.
    [[nodiscard]] std::int64_t out_features() const noexcept { return out_; }
    /// @brief The options it was made with.
    [[nodiscard]] const linear_options& options() const noexcept { return options_; }
    /// @brief The store index of the weight.
    [[nodiscard]] std::size_t weight_index() const noexcept { return weight_; }
    /// @brief The store index of the bias, if the layer has one.
    [[nodiscard]] std::optional<std::size_t> bias_index() const noexcept { return bias_; }
    /// @brief How the bias gradient is computed under the current plan: `automatic` until the
    /// first backward has decided, then `epilogue` or `reduction`.
    [[nodiscard]] bias_gradient_method bias_gradient_in_use() const noexcept { return resolved_; }

    /// @brief The output shape for an input shape `[..., in_features]`: `[..., out_features]`.
    /// @throws std::invalid_argument for fewer than 2 dimensions, a non-positive dimension, or a
    /// last dimension other than `in_features` (values named)
    [[nodiscard]] std::vector<std::int64_t>
    output_shape(const std::vector<std::int64_t>& input) const;

private:
    struct sharing {};
    linear(const linear& other, sharing);
    tensor_spec do_plan(context& ctx, const tensor_spec& input) override;
    void do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output) override;
    void do_backward(context& ctx, const tensor_ref& output_gradient,
                     const tensor_ref& input_gradient) override;

    std::string name_;
    std::int64_t in_ = 0;
    std::int64_t out_ = 0;
    linear_options options_{};
    std::size_t weight_ = 0;
    std::optional<std::size_t> bias_;
    std::int64_t rows_ = 0;              // the planned batch (product of leading dimensions)
    const void* saved_input_ = nullptr;  // x of the last forward (for dW)
    const void* saved_output_ = nullptr; // y of the last forward (for the ReLU's gradient)
    bias_gradient_method resolved_ = bias_gradient_method::automatic;
    device_buffer<std::byte> relu_gradient_; // dz = dy·[y > 0], rows x out, compute type
    device_buffer<float> bias_scratch_;      // the epilogue's bias gradient, before it is added
};

} // namespace gpu::nn
