// gpu::nn::adamw: option and argument checks, state import and export, and the launch of the
// fused step (adamw.cu).
#include "memory_tags.hpp"
#include <gpu/detail/expects.hpp>
#include <gpu/device_value.hpp>
#include <gpu/nn/adamw.hpp>
#include <gpu/detail/unique_handle.hpp>

#include "math_kernels.hpp"

#include <cmath>
#include <span>
#include <stdexcept>

namespace gpu::nn {

namespace {

// `!(x >= 0)` and `!(x < 1)` also refuse NaN, which no ordered comparison accepts.
void check_options(const adamw_options& o, const char* function)
{
    GPU_EXPECTS(std::isfinite(o.lr) && o.lr >= 0.0, std::invalid_argument, function, ": lr ", o.lr,
                " must be finite and >= 0");
    GPU_EXPECTS(o.beta1 >= 0.0 && o.beta1 < 1.0, std::invalid_argument, function, ": beta1 ",
                o.beta1, " must be in [0, 1)");
    GPU_EXPECTS(o.beta2 >= 0.0 && o.beta2 < 1.0, std::invalid_argument, function, ": beta2 ",
                o.beta2, " must be in [0, 1)");
    GPU_EXPECTS(std::isfinite(o.eps) && o.eps >= 0.0, std::invalid_argument, function, ": eps ",
                o.eps, " must be finite and >= 0");
    GPU_EXPECTS(std::isfinite(o.weight_decay) && o.weight_decay >= 0.0, std::invalid_argument,
                function, ": weight_decay ", o.weight_decay, " must be finite and >= 0");
}

const adamw_options& checked_options(const adamw_options& options)
{
    check_options(options, "gpu::nn::adamw");
    return options;
}

} // namespace

adamw::adamw(std::size_t parameter_count, stream_ref stream, const adamw_options& options)
    : options_(checked_options(options)),
      exp_avg_(parameter_count, stream, detail::optimizer_state_tag),
      exp_avg_sq_(parameter_count, stream, detail::optimizer_state_tag),
      step_(1, stream, detail::optimizer_state_tag),
      factors_(2, stream, detail::optimizer_state_tag)
{
    reset(stream);
}

void adamw::set_options(const adamw_options& options)
{
    check_options(options, "gpu::nn::adamw::set_options");
    options_ = options;
}

void adamw::require_state(const char* function) const
{
    if (step_.data() == nullptr) {
        gpu::detail::throw_empty_owner(std::string("gpu::nn::adamw::") + function, "gpu::nn::adamw",
                                       "state");
    }
}

void adamw::step(float* params, const float* grads, std::size_t count, stream_ref stream,
                 const float* found_inf, const float* grad_scale)
{
    constexpr const char* function = "gpu::nn::adamw::step";
    GPU_EXPECTS((params != nullptr && grads != nullptr) || count == 0, std::invalid_argument,
                function, ": null ", params == nullptr ? "parameters" : "gradients", " for ", count,
                " elements");
    // Before the count is compared with size(): a moved-from optimizer has size 0, and its
    // caller's right-sized buffers must hear that it is empty, not that they are the wrong size.
    require_state("step");
    GPU_EXPECTS(count == size(), std::invalid_argument, function, ": ", count,
                " parameters given to an optimizer of ", size());
    GPU_CUDA_CHECK(detail::kernels::adamw_step(
        params, grads, exp_avg_.data(), exp_avg_sq_.data(), static_cast<long long>(count),
        step_.data(), factors_.data(), options_.lr, options_.beta1, options_.beta2, options_.eps,
        options_.weight_decay, found_inf, grad_scale, stream.get()));
}

void adamw::step(device_buffer<float>& params, const device_buffer<float>& grads, stream_ref stream,
                 const float* found_inf, const float* grad_scale)
{
    GPU_EXPECTS(params.size() == grads.size(), std::invalid_argument,
                "gpu::nn::adamw::step: ", params.size(), " parameters and ", grads.size(),
                " gradients");
    step(params.data(), grads.data(), params.size(), stream, found_inf, grad_scale);
}

void adamw::step(device_buffer<float>& params, const device_buffer<float>& grads,
                 grad_scaler& scaler, stream_ref stream)
{
    if (!scaler.enabled()) {
        static_cast<void>(scaler.scale()); // a moved-from scaler is refused all the same
        step(params, grads, stream);
        return;
    }
    // Everything is checked before the scaler's check is queued, so a refused step queues nothing.
    require_state("step");
    GPU_EXPECTS(params.size() == size() && grads.size() == size(), std::invalid_argument,
                "gpu::nn::adamw::step: ", params.size(), " parameters and ", grads.size(),
                " gradients given to an optimizer of ", size());
    // The check and the step share the flag; gradients unscaled already must not be divided again.
    const bool unscaled = scaler.unscaled();
    if (!unscaled) {
        scaler.check(grads, stream);
    }
    step(params, grads, stream, scaler.found_inf_flag(), unscaled ? nullptr : scaler.scale());
}

std::int64_t adamw::step_count(stream_ref stream) const
{
    require_state("step_count");
    return read_device_value(step_.data(), stream);
}

const std::int64_t* adamw::step_count_data() const
{
    require_state("step_count_data");
    return step_.data();
}

adamw_state adamw::state(stream_ref stream) const
{
    require_state("state");
    adamw_state result{
        .step = 0, .exp_avg = std::vector<float>(size()), .exp_avg_sq = std::vector<float>(size())};
    exp_avg_.copy_to_host_async(result.exp_avg, stream);
    exp_avg_sq_.copy_to_host_async(result.exp_avg_sq, stream);
    result.step = step_count(stream); // synchronises the stream, so the copies above are done
    return result;
}

void adamw::set_step(std::int64_t step, stream_ref stream)
{
    GPU_CUDA_CHECK(detail::kernels::adamw_set_step(step_.data(), step, stream.get()));
}

void adamw::load_state(const adamw_state& state, stream_ref stream)
{
    constexpr const char* function = "gpu::nn::adamw::load_state";
    GPU_EXPECTS(state.step >= 0, std::invalid_argument, function, ": step ", state.step,
                " is negative");
    require_state("load_state"); // before the sizes are compared with size() (0 when moved from)
    GPU_EXPECTS(state.exp_avg.size() == size() && state.exp_avg_sq.size() == size(),
                std::invalid_argument, function, ": exp_avg of ", state.exp_avg.size(),
                " and exp_avg_sq of ", state.exp_avg_sq.size(), " values for an optimizer of ",
                size(), " parameters");
    exp_avg_.copy_from_host_async(state.exp_avg, stream);
    exp_avg_sq_.copy_from_host_async(state.exp_avg_sq, stream);
    set_step(state.step, stream);
    stream.synchronize(); // the host vectors may go away on return
}

void adamw::load_state(std::int64_t step, const device_buffer<float>& exp_avg,
                       const device_buffer<float>& exp_avg_sq, stream_ref stream)
{
    constexpr const char* function = "gpu::nn::adamw::load_state";
    GPU_EXPECTS(step >= 0, std::invalid_argument, function, ": step ", step, " is negative");
    require_state("load_state"); // before the sizes are compared with size() (0 when moved from)
    GPU_EXPECTS(exp_avg.size() == size() && exp_avg_sq.size() == size(), std::invalid_argument,
                function, ": exp_avg of ", exp_avg.size(), " and exp_avg_sq of ", exp_avg_sq.size(),
                " values for an optimizer of ", size(), " parameters");
    exp_avg_.copy_from_async(exp_avg, stream);
    exp_avg_sq_.copy_from_async(exp_avg_sq, stream);
    set_step(step, stream);
}

void adamw::reset(stream_ref stream)
{
    require_state("reset");
    exp_avg_.fill_zero_async(stream);
    exp_avg_sq_.fill_zero_async(stream);
    set_step(0, stream);
}

} // namespace gpu::nn
