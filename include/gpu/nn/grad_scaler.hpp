/// @file grad_scaler.hpp
/// @brief `gpu::nn::grad_scaler`: dynamic loss scaling for FP16 training, with the semantics and
/// defaults of PyTorch's `torch.amp.GradScaler`, its state kept on the device so that a whole
/// training step can be captured in a CUDA graph and replayed.
///
/// FP16 holds magnitudes down to 2^-24 only, so small gradients of an FP16 backward pass flush to
/// zero. The scaler multiplies the loss gradient by a large scale (2^16 at first) so that they
/// stay representable, divides the FP32 gradients by it again before the optimizer step, and
/// adapts the scale: a step whose gradients hold Inf or NaN is skipped and the scale halved;
/// after 2000 steps in a row without, it doubles. BF16 and FP32 need none of this
/// (`for_precision` says so).
///
/// @code
/// gpu::nn::grad_scaler scaler = gpu::nn::grad_scaler::for_precision(gpu::element_type::fp16, s);
/// gpu::nn::adamw optimizer(params.size(), s);
/// for (...) {                                           // capturable: nothing here synchronises
///     loss.forward(logits, labels, batch, loss_value.data(), s);
///     loss.backward(logits, labels, batch, dlogits, scaler.scale(), s);  // scaler.scale(loss)
///     // ... layer backward passes accumulate FP32 gradients into grads ...
///     optimizer.step(params, grads, scaler, s);        // scaler.step(optimizer)
///     scaler.update(s);                                // scaler.update()
/// }
/// std::printf("scale %g\n", scaler.current_scale());   // reads the device (synchronises)
/// @endcode
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/element_type.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace gpu::nn {

/// @brief The settings of a `grad_scaler`, with `torch.amp.GradScaler`'s names and defaults.
struct grad_scaler_options {
    float init_scale = 65536.0F; ///< the first scale (2^16); finite and > 0
    float growth_factor =
        2.0F; ///< the scale is multiplied by it after `growth_interval` good steps; finite and > 1
    float backoff_factor =
        0.5F; ///< the scale is multiplied by it after a step with Inf/NaN; in (0, 1)
    std::int32_t growth_interval = 2000; ///< good steps in a row before the scale grows; >= 1
    bool enabled = true;                 ///< false: a scaler that does nothing and whose scale is 1
};

/// @brief What a checkpoint keeps of a `grad_scaler` (PyTorch's `state_dict()`: `scale` and
/// `_growth_tracker`; the options are the program's own). Plain data.
struct grad_scaler_state {
    float scale = 65536.0F;          ///< the current scale
    std::int32_t growth_tracker = 0; ///< good steps in a row since the scale last changed
};

/// @brief Whether training in one precision needs loss scaling, and why. Plain data.
struct loss_scaling_advice {
    bool needed = false;  ///< true for FP16 only
    std::string reason{}; ///< a sentence, the `reason()` of `grad_scaler::for_precision`'s scaler
};

/// @brief Whether gradients computed in @p compute_type need loss scaling: FP16 does (5 exponent
/// bits: small gradients flush to zero); BF16 (FP32's exponent range), FP32 and FP64 do not.
/// @throws std::invalid_argument for a @p compute_type outside the enumeration
[[nodiscard]] loss_scaling_advice advise_loss_scaling(element_type compute_type);

/// @brief Dynamic loss scaling (`torch.amp.GradScaler`), its state in device memory. Move-only.
///
/// Device state: the scale (a float), the found-Inf flag (a float, 0 or 1, as PyTorch's) and
/// the growth tracker (an int32). One training step with it:
/// 1. the loss gradient is multiplied by the scale: `cross_entropy::backward` takes `scale()`
///    (that is all `scaler.scale(loss)` does to the gradients);
/// 2. `unscale` (or `check`, when the optimizer unscales inside its kernel, as `adamw::step`
///    with a scaler does) sets the flag when any gradient is Inf or NaN; the first of these calls
///    after an `update` clears the flag first, later ones in the same step add to it, so a model
///    whose gradients live in several buffers checks them all;
/// 3. the optimizer step is skipped on the device when the flag is set (`adamw::step` takes it);
/// 4. `update` applies PyTorch's rule: flag set: scale *= backoff_factor, tracker = 0; else
///    tracker += 1 and, when it reaches growth_interval, scale *= growth_factor (unless the result
///    would be Inf) and tracker = 0.
///
/// Every stream-ordered member launches on the stream it is given and never synchronises the host,
/// so steps 1 to 4 can be captured in a CUDA graph and replayed: the scale and the tracker evolve
/// on the device at every replay. The readers (`current_scale`, `found_inf`, `growth_tracker`,
/// `state`) copy to the host and synchronise that stream: call them outside a capture.
///
/// Which calls happened since the last `update` is tracked on the host (to clear the flag once
/// per step and to refuse an `update` that no check preceded). A graph captures one step with
/// those decisions made, which is what replaying it repeats.
///
/// A disabled scaler (options `enabled = false`, or `for_precision` of BF16, FP32 or FP64) keeps
/// a device scale of 1, never sets the flag, and its `unscale`, `check` and `update` do nothing,
/// as PyTorch's does; `reason()` says why it is off.
class grad_scaler {
public:
    /// @brief A scaler with @p options, its device state allocated and set on @p stream (scale
    /// `init_scale`, or 1 when disabled; tracker 0; flag 0).
    /// @throws std::invalid_argument when an option is out of its range (the value is named),
    /// before anything is allocated
    /// @throws gpu::cuda_error when CUDA is unavailable, gpu::out_of_memory when the device is full
    explicit grad_scaler(stream_ref stream, const grad_scaler_options& options = {});

    /// @brief The scaler that training in @p compute_type needs (`advise_loss_scaling`): enabled
    /// (with @p options, unless they say `enabled = false`) for FP16, whose gradients underflow;
    /// disabled for BF16 (FP32's exponent range), FP32 and FP64, with `reason()` saying so.
    /// PyTorch's advice: GradScaler for float16 autocast only.
    /// @throws std::invalid_argument for a @p compute_type outside the enumeration, or an option
    /// out of its range
    /// @throws gpu::cuda_error when CUDA is unavailable
    [[nodiscard]] static grad_scaler for_precision(element_type compute_type, stream_ref stream,
                                                   const grad_scaler_options& options = {});

    /// @brief Whether the scaler scales (false: it is the identity, see the class).
    [[nodiscard]] bool enabled() const noexcept { return enabled_; }
    /// @brief Why the scaler is on or off, in a sentence (e.g. that BF16 needs no scaling).
    [[nodiscard]] const std::string& reason() const noexcept { return reason_; }
    /// @brief One line: on or off, the options when on, and `reason()`.
    [[nodiscard]] std::string to_string() const;
    /// @brief The options it was made with (a disabled scaler reports `enabled = false`).
    [[nodiscard]] const grad_scaler_options& options() const noexcept { return options_; }

    /// @brief The device address of the scale (a float; 1 when disabled), for the loss backward
    /// and the optimizer's `grad_scale`. Valid as long as the scaler.
    /// @throws std::logic_error on a moved-from scaler
    [[nodiscard]] const float* scale() const;
    /// @brief The device address of the found-Inf flag (a float, 0 or 1), for the optimizer's
    /// `found_inf`. Valid as long as the scaler.
    /// @throws std::logic_error on a moved-from scaler
    [[nodiscard]] const float* found_inf_flag() const;

    /// @brief Divides @p count FP32 gradients at @p grads (device memory) by the scale, in place,
    /// and sets the flag when any of them was Inf or NaN (`scaler.unscale_(optimizer)`; PyTorch's
    /// `_amp_foreach_non_finite_check_and_unscale_`). Does nothing when disabled.
    /// Capturable. Unscale each gradient once per step: a second call divides again.
    /// @throws std::invalid_argument when @p grads is null with a non-zero @p count
    /// @throws std::logic_error on a moved-from scaler
    void unscale(float* grads, std::size_t count, stream_ref stream);
    /// @brief `unscale` of a whole buffer.
    void unscale(device_buffer<float>& grads, stream_ref stream)
    {
        unscale(grads.data(), grads.size(), stream);
    }

    /// @brief Sets the flag when any of @p count FP32 gradients at @p grads is Inf or NaN,
    /// leaving them as they are: the check GradScaler runs before a fused optimizer that unscales
    /// in its own kernel. Does nothing when disabled. Capturable.
    /// @throws std::invalid_argument when @p grads is null with a non-zero @p count
    /// @throws std::logic_error on a moved-from scaler
    void check(const float* grads, std::size_t count, stream_ref stream);
    /// @brief `check` of a whole buffer.
    void check(const device_buffer<float>& grads, stream_ref stream)
    {
        check(grads.data(), grads.size(), stream);
    }

    /// @brief Whether `unscale` ran since the last `update`: the gradients are then unscaled and
    /// an optimizer step must not divide them again (what `adamw::step` with a scaler asks).
    [[nodiscard]] bool unscaled() const noexcept { return unscaled_; }

    /// @brief Applies the update rule (see the class) on the device (`scaler.update()`). Does
    /// nothing when disabled. Capturable. The flag keeps its value, so that `found_inf()` still
    /// tells whether the step was skipped; the next step's first check clears it.
    /// @throws std::logic_error when no `unscale` or `check` ran since the last update (PyTorch:
    /// "No inf checks were recorded prior to update"), or on a moved-from scaler
    void update(stream_ref stream);

    /// @brief The scale, read from the device after the work queued on @p stream (synchronises
    /// it). 1 when disabled.
    /// @throws std::logic_error on a moved-from scaler
    [[nodiscard]] float current_scale(stream_ref stream) const;
    /// @brief `current_scale` on the stream the scaler was made on.
    [[nodiscard]] float current_scale() const { return current_scale(values_.stream()); }
    /// @brief Whether the flag is set: an Inf or NaN was found in this step's gradients, or, after
    /// `update`, in the last step's (which was then skipped). Synchronises @p stream.
    /// @throws std::logic_error on a moved-from scaler
    [[nodiscard]] bool found_inf(stream_ref stream) const;
    /// @brief `found_inf` on the stream the scaler was made on.
    [[nodiscard]] bool found_inf() const { return found_inf(values_.stream()); }
    /// @brief The growth tracker (good steps in a row). Synchronises @p stream.
    /// @throws std::logic_error on a moved-from scaler
    [[nodiscard]] std::int32_t growth_tracker(stream_ref stream) const;
    /// @brief `growth_tracker` on the stream the scaler was made on.
    [[nodiscard]] std::int32_t growth_tracker() const { return growth_tracker(tracker_.stream()); }

    /// @brief The scale and tracker for a checkpoint. Synchronises @p stream.
    /// @throws std::logic_error on a moved-from scaler
    [[nodiscard]] grad_scaler_state state(stream_ref stream) const;
    /// @brief Restores a checkpoint's scale and tracker on @p stream (a one-thread kernel given
    /// the values: capturable, and @p state need not outlive the call) and clears the flag.
    /// Ignored by a disabled scaler, as PyTorch's `load_state_dict` is.
    /// @throws std::invalid_argument when the scale is not finite and > 0, or the tracker is not in
    /// [0, growth_interval) (the values are named)
    /// @throws std::logic_error on a moved-from scaler
    void load_state(const grad_scaler_state& state, stream_ref stream);

    /// @brief Moving leaves the source empty: its members then throw std::logic_error.
    grad_scaler(grad_scaler&& other) noexcept = default;
    /// @brief Frees this scaler's device state and takes @p other's.
    grad_scaler& operator=(grad_scaler&& other) noexcept = default;
    grad_scaler(const grad_scaler&) = delete;
    grad_scaler& operator=(const grad_scaler&) = delete;
    /// @brief Frees the device state on its stream.
    ~grad_scaler() = default;

private:
    grad_scaler(stream_ref stream, const grad_scaler_options& options, std::string reason);
    void require_state(const char* function) const;
    void begin_check(stream_ref stream);

    grad_scaler_options options_;
    bool enabled_ = true;
    std::string reason_;
    device_buffer<float> values_;         // [0] scale, [1] found_inf
    device_buffer<std::int32_t> tracker_; // growth tracker
    bool checked_ = false;                // unscale or check ran since the last update
    bool unscaled_ = false;               // unscale ran since the last update
};

} // namespace gpu::nn
