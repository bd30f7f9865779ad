// Softmax plans: a tensor descriptor built once, then one cuDNN call per forward or backward on
// the handle's stream.
#include "ops.hpp"
#include "translate.hpp"

#include <gpu/dnn/softmax.hpp>

#include <string>

namespace gpu::dnn {

std::string_view to_string(softmax_algorithm algorithm) noexcept
{
    return gpu::detail::name_of(detail::names<softmax_algorithm>, algorithm);
}

std::string_view to_string(softmax_mode mode) noexcept
{
    return gpu::detail::name_of(detail::names<softmax_mode>, mode);
}

namespace {

cudnnSoftmaxAlgorithm_t to_cudnn(softmax_algorithm algorithm) noexcept
{
    switch (algorithm) {
    case softmax_algorithm::fast: return CUDNN_SOFTMAX_FAST;
    case softmax_algorithm::log: return CUDNN_SOFTMAX_LOG;
    case softmax_algorithm::accurate: break;
    }
    return CUDNN_SOFTMAX_ACCURATE;
}

cudnnSoftmaxMode_t to_cudnn(softmax_mode mode) noexcept
{
    return mode == softmax_mode::instance ? CUDNN_SOFTMAX_MODE_INSTANCE
                                          : CUDNN_SOFTMAX_MODE_CHANNEL;
}

} // namespace

softmax::softmax(const std::vector<int>& dims, softmax_algorithm algorithm, softmax_mode mode,
                 data_type type, tensor_layout layout)
    : dims_(dims), algorithm_(algorithm), mode_(mode), type_(type), layout_(layout)
{
    // cuDNN's softmax takes 4-d tensors and up (its documentation: all formats with 4 and 5
    // dimensions, more when packed, which cudagap's tensors always are).
    detail::validate_dims("gpu::dnn::softmax", dims, 4, max_tensor_rank);
    detail::require_named("gpu::dnn::softmax", "softmax_algorithm", algorithm);
    detail::require_named("gpu::dnn::softmax", "softmax_mode", mode);
    data_ = tensor_descriptor(dims, type, layout);
    elements_ = detail::product(dims_);
}

std::string softmax::to_string() const
{
    return std::string(algorithm_ == softmax_algorithm::log ? "log softmax" : "softmax") + " (" +
           std::string(dnn::to_string(algorithm_)) + ") over " +
           std::string(dnn::to_string(mode_)) + " of " + std::string(dnn::to_string(type_)) + " " +
           std::string(dnn::to_string(layout_)) + " " + dnn::to_string(dims_);
}

void softmax::check_buffers(const char* operation, data_type given,
                            std::initializer_list<detail::buffer_check> buffers) const
{
    detail::require_planned(static_cast<bool>(data_), operation);
    detail::check_buffers(operation, type_, given, buffers, [this] { return to_string(); });
}

void softmax::forward_raw(handle& h, const void* x, void* y) const
{
    constexpr const char* operation = "gpu::dnn::softmax::forward";
    detail::require_ready(static_cast<bool>(data_), h, operation);
    detail::require_pointers(operation, {{"x", x}, {"y", y}});
    detail::check_call(cudnnSoftmaxForward(h.get(), to_cudnn(algorithm_), to_cudnn(mode_),
                                           &detail::scale_one, data_.get(), x, &detail::scale_zero,
                                           data_.get(), y),
                       "cudnnSoftmaxForward", [this] { return to_string(); });
}

void softmax::backward_raw(handle& h, const void* y, const void* dy, void* dx) const
{
    constexpr const char* operation = "gpu::dnn::softmax::backward";
    detail::require_ready(static_cast<bool>(data_), h, operation);
    detail::require_pointers(operation, {{"y", y}, {"dy", dy}, {"dx", dx}});
    detail::check_call(cudnnSoftmaxBackward(h.get(), to_cudnn(algorithm_), to_cudnn(mode_),
                                            &detail::scale_one, data_.get(), y, data_.get(), dy,
                                            &detail::scale_zero, data_.get(), dx),
                       "cudnnSoftmaxBackward", [this] { return to_string(); });
}

} // namespace gpu::dnn
