// gpu::nn::grad_scaler: its argument checks, the host-side record of what ran since the last
// update, and the launches of its kernels (grad_scaler.cu).
#include "memory_tags.hpp"
#include <gpu/detail/expects.hpp>
#include <gpu/device_value.hpp>
#include <gpu/nn/grad_scaler.hpp>
#include <gpu/detail/unique_handle.hpp>

#include "math_kernels.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpu::nn {

namespace {

constexpr const char* enabled_reason = "loss scaling is on (grad_scaler_options::enabled)";
constexpr const char* options_off_reason =
    "loss scaling is off (grad_scaler_options::enabled is false)";
constexpr const char* fp16_reason =
    "FP16 has 5 exponent bits: gradients below 2^-24 flush to zero, so the loss gradient is "
    "scaled up and the gradients unscaled before the step (torch.amp.GradScaler)";
constexpr const char* bf16_reason =
    "BF16 has FP32's 8 exponent bits, so its gradients underflow no sooner than FP32's: no loss "
    "scaling is needed (PyTorch uses GradScaler with float16 only)";
constexpr const char* fp32_reason =
    "FP32 gradients do not underflow in practice: no loss scaling is needed";
constexpr const char* fp64_reason =
    "FP64 gradients do not underflow in practice: no loss scaling is needed";

void check_options(const grad_scaler_options& o)
{
    constexpr const char* function = "gpu::nn::grad_scaler";
    GPU_EXPECTS(std::isfinite(o.init_scale) && o.init_scale > 0.0F, std::invalid_argument, function,
                ": init_scale ", o.init_scale, " must be finite and > 0");
    GPU_EXPECTS(std::isfinite(o.growth_factor) && o.growth_factor > 1.0F, std::invalid_argument,
                function, ": growth_factor ", o.growth_factor, " must be finite and > 1");
    GPU_EXPECTS(o.backoff_factor > 0.0F && o.backoff_factor < 1.0F, std::invalid_argument, function,
                ": backoff_factor ", o.backoff_factor, " must be in (0, 1)");
    GPU_EXPECTS(o.growth_interval >= 1, std::invalid_argument, function, ": growth_interval ",
                o.growth_interval, " must be >= 1");
}

// The options, validated also for a disabled scaler (a typo is still a typo).
const grad_scaler_options& checked_options(const grad_scaler_options& options)
{
    check_options(options);
    return options;
}

} // namespace

grad_scaler::grad_scaler(stream_ref stream, const grad_scaler_options& options)
    : grad_scaler(stream, options, options.enabled ? enabled_reason : options_off_reason)
{}

grad_scaler::grad_scaler(stream_ref stream, const grad_scaler_options& options, std::string reason)
    : options_(checked_options(options)), enabled_(options.enabled), reason_(std::move(reason)),
      values_(2, stream, detail::optimizer_state_tag),
      tracker_(1, stream, detail::optimizer_state_tag)
{
    const float scale = enabled_ ? options_.init_scale : 1.0F;
    GPU_CUDA_CHECK(
        detail::kernels::scaler_set_state(values_.data(), tracker_.data(), scale, 0, stream.get()));
}

loss_scaling_advice advise_loss_scaling(element_type compute_type)
{
    switch (compute_type) {
    case element_type::fp16: return {.needed = true, .reason = fp16_reason};
    case element_type::bf16: return {.needed = false, .reason = bf16_reason};
    case element_type::fp32: return {.needed = false, .reason = fp32_reason};
    case element_type::fp64: return {.needed = false, .reason = fp64_reason};
    }
    throw std::invalid_argument("gpu::nn::advise_loss_scaling: element_type value " +
                                std::to_string(static_cast<int>(compute_type)) +
                                " is none of FP32, FP64, FP16 and BF16");
}

grad_scaler grad_scaler::for_precision(element_type compute_type, stream_ref stream,
                                       const grad_scaler_options& options)
{
    loss_scaling_advice advice = advise_loss_scaling(compute_type);
    if (advice.needed && !options.enabled) {
        return grad_scaler(stream, options, options_off_reason);
    }
    grad_scaler_options chosen = options;
    chosen.enabled = advice.needed;
    return grad_scaler(stream, chosen, std::move(advice.reason));
}

std::string grad_scaler::to_string() const
{
    std::ostringstream text;
    if (enabled_) {
        text << "grad_scaler: enabled, init scale " << options_.init_scale << ", growth x"
             << options_.growth_factor << " after " << options_.growth_interval
             << " steps without Inf/NaN, backoff x" << options_.backoff_factor << ": " << reason_;
    } else {
        text << "grad_scaler: disabled (scale 1): " << reason_;
    }
    return text.str();
}

void grad_scaler::require_state(const char* function) const
{
    if (values_.data() == nullptr) {
        gpu::detail::throw_empty_owner(std::string("gpu::nn::grad_scaler::") + function,
                                       "gpu::nn::grad_scaler", "state");
    }
}

const float* grad_scaler::scale() const
{
    require_state("scale");
    return values_.data();
}

const float* grad_scaler::found_inf_flag() const
{
    require_state("found_inf_flag");
    return values_.data() + 1;
}

// The first check of a step clears the flag the last update left for the readers.
void grad_scaler::begin_check(stream_ref stream)
{
    if (!checked_) {
        GPU_CUDA_CHECK(cudaMemsetAsync(values_.data() + 1, 0, sizeof(float), stream.get()));
        checked_ = true;
    }
}

void grad_scaler::unscale(float* grads, std::size_t count, stream_ref stream)
{
    GPU_EXPECTS(grads != nullptr || count == 0, std::invalid_argument,
                "gpu::nn::grad_scaler::unscale: null gradients for ", count, " elements");
    require_state("unscale");
    if (!enabled_) {
        return;
    }
    begin_check(stream);
    unscaled_ = true;
    if (count != 0) {
        GPU_CUDA_CHECK(detail::kernels::unscale(grads, grads, static_cast<long long>(count),
                                                values_.data(), values_.data() + 1, stream.get()));
    }
}

void grad_scaler::check(const float* grads, std::size_t count, stream_ref stream)
{
    GPU_EXPECTS(grads != nullptr || count == 0, std::invalid_argument,
                "gpu::nn::grad_scaler::check: null gradients for ", count, " elements");
    require_state("check");
    if (!enabled_) {
        return;
    }
    begin_check(stream);
    if (count != 0) {
        GPU_CUDA_CHECK(detail::kernels::unscale(grads, nullptr, static_cast<long long>(count),
                                                values_.data(), values_.data() + 1, stream.get()));
    }
}

void grad_scaler::update(stream_ref stream)
{
    require_state("update");
    if (!enabled_) {
        return;
    }
    GPU_EXPECTS(
        checked_, std::logic_error,
        "gpu::nn::grad_scaler::update: no gradients were checked for Inf/NaN since the last "
        "update (call unscale, check, or adamw::step with this scaler first)");
    GPU_CUDA_CHECK(detail::kernels::scaler_update(values_.data(), tracker_.data(),
                                                  options_.growth_factor, options_.backoff_factor,
                                                  options_.growth_interval, stream.get()));
    checked_ = false;
    unscaled_ = false;
}

float grad_scaler::current_scale(stream_ref stream) const
{
    require_state("current_scale");
    return read_device_value(values_.data(), stream);
}

bool grad_scaler::found_inf(stream_ref stream) const
{
    require_state("found_inf");
    return read_device_value(values_.data() + 1, stream) != 0.0F;
}

std::int32_t grad_scaler::growth_tracker(stream_ref stream) const
{
    require_state("growth_tracker");
    return read_device_value(tracker_.data(), stream);
}

grad_scaler_state grad_scaler::state(stream_ref stream) const
{
    return {current_scale(stream), growth_tracker(stream)};
}

void grad_scaler::load_state(const grad_scaler_state& state, stream_ref stream)
{
    constexpr const char* function = "gpu::nn::grad_scaler::load_state";
    GPU_EXPECTS(std::isfinite(state.scale) && state.scale > 0.0F, std::invalid_argument, function,
                ": scale ", state.scale, " must be finite and > 0");
    GPU_EXPECTS(state.growth_tracker >= 0 && state.growth_tracker < options_.growth_interval,
                std::invalid_argument, function, ": growth_tracker ", state.growth_tracker,
                " must be in [0, growth_interval ", options_.growth_interval, ")");
    require_state("load_state");
    if (!enabled_) {
        return;
    }
    GPU_CUDA_CHECK(detail::kernels::scaler_set_state(values_.data(), tracker_.data(), state.scale,
                                                     state.growth_tracker, stream.get()));
    checked_ = false;
    unscaled_ = false;
}

} // namespace gpu::nn
