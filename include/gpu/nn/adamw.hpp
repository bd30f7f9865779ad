/// @file adamw.hpp
/// @brief `gpu::nn::adamw`: the AdamW optimizer with `torch.optim.AdamW`'s semantics and
/// defaults, as one fused kernel over a flat FP32 parameter buffer, its state (both moments and
/// the step count) in device memory: PyTorch's `AdamW(fused=True, capturable=True)`.
///
/// @code
/// gpu::nn::adamw optimizer(params.size(), s, {.lr = 1e-4});     // optim.AdamW(params, lr=1e-4)
/// optimizer.step(params, grads, scaler, s);                      // scaler.step(optimizer)
/// scaler.update(s);                                              // scaler.update()
/// const gpu::nn::adamw_state saved = optimizer.state(s);         // optimizer.state_dict()
/// @endcode
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/nn/grad_scaler.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace gpu::nn {

/// @brief The hyperparameters of `adamw`, with `torch.optim.AdamW`'s names and defaults
/// (`betas=(beta1, beta2)`; `amsgrad` and `maximize` are not offered: their defaults, false).
/// Doubles, as PyTorch's Python floats; the per-element arithmetic is FP32.
struct adamw_options {
    double lr = 1e-3;           ///< learning rate; finite and >= 0
    double beta1 = 0.9;         ///< decay of the first moment; in [0, 1)
    double beta2 = 0.999;       ///< decay of the second moment; in [0, 1)
    double eps = 1e-8;          ///< added to the denominator; finite and >= 0
    double weight_decay = 1e-2; ///< decoupled weight decay; finite and >= 0
};

/// @brief The optimizer's state for a checkpoint (PyTorch's `state_dict()["state"]`: `step`,
/// `exp_avg`, `exp_avg_sq`), on the host. Plain data.
struct adamw_state {
    std::int64_t step = 0;           ///< steps taken (skipped steps not counted)
    std::vector<float> exp_avg{};    ///< first moment, one per parameter
    std::vector<float> exp_avg_sq{}; ///< second moment, one per parameter
};

/// @brief AdamW (`torch.optim.AdamW(fused=True, capturable=True)`) over one flat FP32
/// parameter buffer and its FP32 gradients. Move-only.
///
/// Each step, for every parameter p with gradient g (divided by `*grad_scale` first when given),
/// t being the step count after it advanced:
///
///     p -= lr * weight_decay * p
///     m  = beta1 * m + (1 - beta1) * g
///     v  = beta2 * v + (1 - beta2) * g * g
///     p -= lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
///
/// which is PyTorch's documented mhat = m / (1 - beta1^t), vhat = v / (1 - beta2^t),
/// p -= lr * mhat / (sqrt(vhat) + eps), in the order of its fused kernel (bias corrections in
/// FP64, the rest in FP32).
///
/// The step count lives on the device and is advanced there, by the step's first kernel, so a
/// captured graph replays correctly step after step; with `found_inf` set (a device float, the
/// grad scaler's flag) the whole step is skipped on the device: parameters, moments and the
/// step count stay as they are, which is what `GradScaler.step` does. Every `step` launches two
/// kernels on the stream it is given and never synchronises the host. The hyperparameters are
/// kernel arguments: a graph captured before `set_options` keeps the old ones until re-captured.
/// Gradients are only read (PyTorch's fused kernel also writes them back unscaled).
class adamw {
public:
    /// @brief An optimizer for @p parameter_count parameters: both moments (zero) and the step
    /// count (0) allocated and set on @p stream.
    /// @throws std::invalid_argument when an option is out of its range (named with its value),
    /// before anything is allocated
    /// @throws gpu::cuda_error when CUDA is unavailable, gpu::out_of_memory when the device is full
    adamw(std::size_t parameter_count, stream_ref stream, const adamw_options& options = {});

    /// @brief The number of parameters it optimizes.
    [[nodiscard]] std::size_t size() const noexcept { return exp_avg_.size(); }
    /// @brief The hyperparameters.
    [[nodiscard]] const adamw_options& options() const noexcept { return options_; }
    /// @brief Replaces the hyperparameters for the steps launched from now on (a learning-rate
    /// schedule); the state is kept.
    /// @throws std::invalid_argument when an option is out of its range
    void set_options(const adamw_options& options);

    /// @brief One AdamW step over @p count parameters at @p params with gradients @p grads (both
    /// device FP32).
    /// @param params device memory, updated in place
    /// @param grads device memory, read only
    /// @param count must equal `size()`
    /// @param stream where the two kernels run
    /// @param found_inf a device float: when non-zero at run time, the step is skipped (null:
    /// never)
    /// @param grad_scale a device float that every gradient is divided by (the loss scale of
    /// gradients not yet unscaled), or null
    /// @throws std::invalid_argument when @p count differs from `size()` or a buffer is null with
    /// a non-zero count (each named)
    /// @throws std::logic_error on a moved-from optimizer
    void step(float* params, const float* grads, std::size_t count, stream_ref stream,
              const float* found_inf = nullptr, const float* grad_scale = nullptr);

    /// @brief `step` on whole buffers (both must hold `size()` elements).
    void step(device_buffer<float>& params, const device_buffer<float>& grads, stream_ref stream,
              const float* found_inf = nullptr, const float* grad_scale = nullptr);

    /// @brief `scaler.step(optimizer)`: a disabled scaler steps plainly; an enabled one checks
    /// @p grads for Inf/NaN (`grad_scaler::check`) unless `scaler.unscaled()`, then the step runs
    /// with the scaler's flag as `found_inf` and, unless the gradients were unscaled already, its
    /// scale as `grad_scale`. Call `scaler.update` afterwards. Capturable.
    /// @throws std::invalid_argument, std::logic_error as `step`, and for a moved-from scaler
    void step(device_buffer<float>& params, const device_buffer<float>& grads, grad_scaler& scaler,
              stream_ref stream);

    /// @brief The step count, read from the device after the work queued on @p stream
    /// (synchronises it).
    /// @throws std::logic_error on a moved-from optimizer
    [[nodiscard]] std::int64_t step_count(stream_ref stream) const;
    /// @brief The device address of the step count (an int64), e.g. for a checkpoint written on
    /// the device. Valid as long as the optimizer.
    /// @throws std::logic_error on a moved-from optimizer
    [[nodiscard]] const std::int64_t* step_count_data() const;

    /// @brief The first moment (`exp_avg`), one per parameter.
    [[nodiscard]] const device_buffer<float>& exp_avg() const noexcept { return exp_avg_; }
    /// @brief The second moment (`exp_avg_sq`), one per parameter.
    [[nodiscard]] const device_buffer<float>& exp_avg_sq() const noexcept { return exp_avg_sq_; }

    /// @brief The state for a checkpoint, copied to the host after the work queued on @p stream
    /// (synchronises it).
    /// @throws std::logic_error on a moved-from optimizer
    [[nodiscard]] adamw_state state(stream_ref stream) const;
    /// @brief Restores a checkpoint's state on @p stream and waits for the copies (so that
    /// @p state may go away on return).
    /// @throws std::invalid_argument when a moment's length differs from `size()` or the step
    /// count is negative (the values are named)
    /// @throws std::logic_error on a moved-from optimizer
    void load_state(const adamw_state& state, stream_ref stream);
    /// @brief Restores the state from device buffers and a step count, queued on @p stream
    /// (device-to-device copies; nothing waits).
    /// @throws std::invalid_argument as the host overload
    void load_state(std::int64_t step, const device_buffer<float>& exp_avg,
                    const device_buffer<float>& exp_avg_sq, stream_ref stream);
    /// @brief Zeroes both moments and the step count on @p stream (a fresh optimizer).
    /// @throws std::logic_error on a moved-from optimizer
    void reset(stream_ref stream);

    /// @brief Moving leaves the source empty: its `step` then throws std::logic_error.
    adamw(adamw&& other) noexcept = default;
    /// @brief Frees this optimizer's state and takes @p other's.
    adamw& operator=(adamw&& other) noexcept = default;
    adamw(const adamw&) = delete;
    adamw& operator=(const adamw&) = delete;
    /// @brief Frees the state on its stream.
    ~adamw() = default;

private:
    void require_state(const char* function) const;
    void set_step(std::int64_t step, stream_ref stream);

    adamw_options options_;
    device_buffer<float> exp_avg_;
    device_buffer<float> exp_avg_sq_;
    device_buffer<std::int64_t> step_; // steps taken
    device_buffer<double> factors_;    // this step's lr / (1 - beta1^t), sqrt(1 - beta2^t)
};

} // namespace gpu::nn
