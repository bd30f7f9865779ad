// Activation plans: a tensor descriptor and the function's descriptor built once, then one
// cuDNN call per forward or backward on the handle's stream.
#include "ops.hpp"
#include "translate.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/dnn/activation.hpp>

#include <stdexcept>
#include <string>
#include <utility>

namespace gpu::dnn {

activation::activation(const std::vector<int>& dims, data_type type, tensor_layout layout,
                       activation_descriptor function)
    : dims_(dims), type_(type), layout_(layout), function_(std::move(function))
{
    // mode() throws logic_error for an empty descriptor.
    const activation_mode mode = function_.mode();
    GPU_EXPECTS(mode != activation_mode::identity, std::invalid_argument,
                "gpu::dnn::activation: cuDNN runs the identity only fused into a convolution "
                "(cudnnActivationForward refuses it); copy the tensor instead");
    data_ = tensor_descriptor(dims, type, layout);
    elements_ = detail::product(dims_);
}

std::string activation::to_string() const
{
    return function_.to_string() + " on " + std::string(dnn::to_string(type_)) + " " +
           std::string(dnn::to_string(layout_)) + " " + dnn::to_string(dims_);
}

void activation::check_buffers(const char* operation, data_type given,
                               std::initializer_list<detail::buffer_check> buffers) const
{
    detail::require_planned(static_cast<bool>(data_), operation);
    detail::check_buffers(operation, type_, given, buffers, [this] { return to_string(); });
}

void activation::forward_raw(handle& h, const void* x, void* y) const
{
    constexpr const char* operation = "gpu::dnn::activation::forward";
    detail::require_ready(static_cast<bool>(data_), h, operation);
    detail::require_pointers(operation, {{"x", x}, {"y", y}});
    detail::check_call(cudnnActivationForward(h.get(), function_.get(), &detail::scale_one,
                                              data_.get(), x, &detail::scale_zero, data_.get(), y),
                       "cudnnActivationForward", [this] { return to_string(); });
}

void activation::backward_raw(handle& h, const void* y, const void* dy, const void* x,
                              void* dx) const
{
    constexpr const char* operation = "gpu::dnn::activation::backward";
    detail::require_ready(static_cast<bool>(data_), h, operation);
    detail::require_pointers(operation, {{"y", y}, {"dy", dy}, {"x", x}, {"dx", dx}});
    detail::check_call(cudnnActivationBackward(h.get(), function_.get(), &detail::scale_one,
                                               data_.get(), y, data_.get(), dy, data_.get(), x,
                                               &detail::scale_zero, data_.get(), dx),
                       "cudnnActivationBackward", [this] { return to_string(); });
}

} // namespace gpu::dnn
