// Pooling plans: descriptors built once for a shape, then one cuDNN call per forward or
// backward on the handle's stream.
#include "ops.hpp"
#include "translate.hpp"

#include <gpu/dnn/pooling.hpp>

#include <string>

namespace gpu::dnn {

pooling::pooling(const std::vector<int>& input, const pooling_geometry& geometry, data_type type,
                 tensor_layout layout)
    : geometry_(geometry), input_dims_(input), output_dims_(pooling_output_dims(input, geometry)),
      type_(type), layout_(layout)
{
    // Every check that needs no cuDNN call comes first: the enumerators, then the output's own
    // element count (at most the input's, so cuDNN can index it).
    detail::require_named("gpu::dnn::pooling", "data_type", type);
    detail::require_named("gpu::dnn::pooling", "tensor_layout", layout);
    input_elements_ = detail::product(input_dims_);
    output_elements_ = detail::product(output_dims_);
    input_ = tensor_descriptor(input_dims_, type, layout);
    output_ = tensor_descriptor(output_dims_, type, layout);
    pooling_ = pooling_descriptor(geometry);
}

std::string pooling::to_string() const
{
    return std::string(dnn::to_string(type_)) + " " + std::string(dnn::to_string(layout_)) +
           " input " + dnn::to_string(input_dims_) + " output " + dnn::to_string(output_dims_) +
           ", " + geometry_.to_string();
}

void pooling::check_buffers(const char* operation, data_type given,
                            std::initializer_list<detail::buffer_check> buffers) const
{
    detail::require_planned(static_cast<bool>(input_), operation);
    detail::check_buffers(operation, type_, given, buffers, [this] { return to_string(); });
}

void pooling::forward_raw(handle& h, const void* x, void* y) const
{
    constexpr const char* operation = "gpu::dnn::pooling::forward";
    detail::require_ready(static_cast<bool>(input_), h, operation);
    detail::require_pointers(operation, {{"x", x}, {"y", y}});
    detail::check_call(cudnnPoolingForward(h.get(), pooling_.get(), &detail::scale_one,
                                           input_.get(), x, &detail::scale_zero, output_.get(), y),
                       "cudnnPoolingForward", [this] { return to_string(); });
}

void pooling::backward_raw(handle& h, const void* y, const void* dy, const void* x, void* dx) const
{
    constexpr const char* operation = "gpu::dnn::pooling::backward";
    detail::require_ready(static_cast<bool>(input_), h, operation);
    detail::require_pointers(operation, {{"y", y}, {"dy", dy}, {"x", x}, {"dx", dx}});
    detail::check_call(cudnnPoolingBackward(h.get(), pooling_.get(), &detail::scale_one,
                                            output_.get(), y, output_.get(), dy, input_.get(), x,
                                            &detail::scale_zero, input_.get(), dx),
                       "cudnnPoolingBackward", [this] { return to_string(); });
}

} // namespace gpu::dnn
