// Tensor, filter and activation descriptors: set through cuDNN after cudagap's own checks, and
// read back from cuDNN.
#include "translate.hpp"

#include <gpu/dnn/activation_descriptor.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>

#include <array>
#include <cmath>
#include <cstdio>
#include <source_location>
#include <stdexcept>
#include <string>

namespace gpu::dnn {

namespace {

// Calls a cuDNN setter; on failure throws the dnn_error with what was being described.

struct tensor_readback {
    data_type type;
    std::vector<int> dims;
    std::vector<int> strides;
};

tensor_readback read_tensor(cudnnTensorDescriptor_t raw)
{
    if (raw == nullptr) {
        detail::throw_empty("gpu::dnn::tensor_descriptor");
    }
    cudnnDataType_t type{};
    int rank = 0;
    std::array<int, CUDNN_DIM_MAX> dims{};
    std::array<int, CUDNN_DIM_MAX> strides{};
    GPU_CUDNN_CHECK(cudnnGetTensorNdDescriptor(raw, CUDNN_DIM_MAX, &type, &rank, dims.data(),
                                               strides.data()));
    return {detail::from_cudnn(type), std::vector<int>(dims.begin(), dims.begin() + rank),
            std::vector<int>(strides.begin(), strides.begin() + rank)};
}

struct filter_readback {
    data_type type;
    tensor_layout layout;
    std::vector<int> dims;
};

filter_readback read_filter(cudnnFilterDescriptor_t raw)
{
    if (raw == nullptr) {
        detail::throw_empty("gpu::dnn::filter_descriptor");
    }
    cudnnDataType_t type{};
    cudnnTensorFormat_t format{};
    int rank = 0;
    std::array<int, CUDNN_DIM_MAX> dims{};
    GPU_CUDNN_CHECK(cudnnGetFilterNdDescriptor(raw, CUDNN_DIM_MAX, &type, &format, &rank, dims.data()));
    return {detail::from_cudnn(type), detail::from_cudnn(format),
            std::vector<int>(dims.begin(), dims.begin() + rank)};
}

std::string describe(data_type type, tensor_layout layout, const std::vector<int>& dims)
{
    return std::string(to_string(type)) + " " + std::string(to_string(layout)) + " " +
           to_string(dims);
}

} // namespace

std::vector<int> packed_strides(const std::vector<int>& dims, tensor_layout layout)
{
    if (dims.size() < 2) {
        throw std::invalid_argument("gpu::dnn::packed_strides: " + to_string(dims) +
                                    " has fewer than 2 dimensions (N and C)");
    }
    std::vector<int> strides(dims.size());
    if (layout == tensor_layout::nchw) {
        int stride = 1;
        for (std::size_t i = dims.size(); i-- > 0;) {
            strides[i] = stride;
            stride *= dims[i];
        }
        return strides;
    }
    // Channels last: C is contiguous, then the spatial dimensions from the last, then N.
    int stride = 1;
    strides[1] = stride;
    stride *= dims[1];
    for (std::size_t i = dims.size(); i-- > 2;) {
        strides[i] = stride;
        stride *= dims[i];
    }
    strides[0] = stride;
    return strides;
}

// ---- tensor_descriptor ----------------------------------------------------------------------

tensor_descriptor::tensor_descriptor(const std::vector<int>& dims, data_type type,
                                     tensor_layout layout)
{
    detail::validate_dims("gpu::dnn::tensor_descriptor", dims, 2, max_tensor_rank);
    cudnnTensorDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateTensorDescriptor(&raw));
    handle_.reset(raw);
    detail::check_set(cudnnSetTensorNdDescriptorEx(raw, detail::to_cudnn(layout), detail::to_cudnn(type),
                                           static_cast<int>(dims.size()), dims.data()),
              "cudnnSetTensorNdDescriptorEx", "tensor " + describe(type, layout, dims));
}

int tensor_descriptor::rank() const { return static_cast<int>(read_tensor(get()).dims.size()); }

std::vector<int> tensor_descriptor::dims() const { return read_tensor(get()).dims; }

std::vector<int> tensor_descriptor::strides() const { return read_tensor(get()).strides; }

data_type tensor_descriptor::type() const { return read_tensor(get()).type; }

std::optional<tensor_layout> tensor_descriptor::layout() const
{
    const tensor_readback t = read_tensor(get());
    for (const tensor_layout candidate : {tensor_layout::nchw, tensor_layout::nhwc}) {
        if (packed_strides(t.dims, candidate) == t.strides) {
            return candidate;
        }
    }
    return std::nullopt;
}

std::size_t tensor_descriptor::element_count() const { return detail::product(dims()); }

std::size_t tensor_descriptor::size_bytes() const
{
    if (get() == nullptr) {
        detail::throw_empty("gpu::dnn::tensor_descriptor");
    }
    std::size_t bytes = 0;
    GPU_CUDNN_CHECK(cudnnGetTensorSizeInBytes(get(), &bytes));
    return bytes;
}

std::string tensor_descriptor::to_string() const
{
    const tensor_readback t = read_tensor(get());
    const std::optional<tensor_layout> l = layout();
    return std::string(dnn::to_string(t.type)) + " " +
           (l ? std::string(dnn::to_string(*l)) : "strides " + dnn::to_string(t.strides)) + " " +
           dnn::to_string(t.dims);
}

// ---- filter_descriptor ----------------------------------------------------------------------

filter_descriptor::filter_descriptor(const std::vector<int>& dims, data_type type,
                                     tensor_layout layout)
{
    detail::validate_dims("gpu::dnn::filter_descriptor", dims, 3, max_tensor_rank);
    cudnnFilterDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateFilterDescriptor(&raw));
    handle_.reset(raw);
    detail::check_set(cudnnSetFilterNdDescriptor(raw, detail::to_cudnn(type), detail::to_cudnn(layout),
                                         static_cast<int>(dims.size()), dims.data()),
              "cudnnSetFilterNdDescriptor", "filter " + describe(type, layout, dims));
}

int filter_descriptor::rank() const { return static_cast<int>(read_filter(get()).dims.size()); }

std::vector<int> filter_descriptor::dims() const { return read_filter(get()).dims; }

data_type filter_descriptor::type() const { return read_filter(get()).type; }

tensor_layout filter_descriptor::layout() const { return read_filter(get()).layout; }

std::size_t filter_descriptor::element_count() const { return detail::product(dims()); }

std::size_t filter_descriptor::size_bytes() const
{
    if (get() == nullptr) {
        detail::throw_empty("gpu::dnn::filter_descriptor");
    }
    std::size_t bytes = 0;
    GPU_CUDNN_CHECK(cudnnGetFilterSizeInBytes(get(), &bytes));
    return bytes;
}

std::string filter_descriptor::to_string() const
{
    const filter_readback f = read_filter(get());
    return describe(f.type, f.layout, f.dims);
}

// ---- activation_descriptor ------------------------------------------------------------------

namespace {
struct activation_readback {
    activation_mode mode;
    bool propagate_nan;
    double coefficient;
};

activation_readback read_activation(cudnnActivationDescriptor_t raw)
{
    if (raw == nullptr) {
        detail::throw_empty("gpu::dnn::activation_descriptor");
    }
    cudnnActivationMode_t mode{};
    cudnnNanPropagation_t nan{};
    double coefficient = 0.0;
    GPU_CUDNN_CHECK(cudnnGetActivationDescriptor(raw, &mode, &nan, &coefficient));
    return {detail::from_cudnn(mode), nan == CUDNN_PROPAGATE_NAN, coefficient};
}
} // namespace

activation_descriptor::activation_descriptor(activation_mode mode, double coefficient,
                                             bool propagate_nan)
{
    if (!std::isfinite(coefficient)) {
        throw std::invalid_argument("gpu::dnn::activation_descriptor: the coefficient of " +
                                    std::string(dnn::to_string(mode)) + " is " +
                                    std::to_string(coefficient) + "; it must be finite");
    }
    if (mode == activation_mode::clipped_relu && !(coefficient > 0.0)) {
        throw std::invalid_argument("gpu::dnn::activation_descriptor: clipped_relu needs a "
                                    "positive ceiling, got " + std::to_string(coefficient));
    }
    cudnnActivationDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateActivationDescriptor(&raw));
    handle_.reset(raw);
    detail::check_set(cudnnSetActivationDescriptor(raw, detail::to_cudnn(mode),
                                           propagate_nan ? CUDNN_PROPAGATE_NAN : CUDNN_NOT_PROPAGATE_NAN,
                                           coefficient),
              "cudnnSetActivationDescriptor",
              "activation " + std::string(dnn::to_string(mode)) + ", coefficient " +
                  std::to_string(coefficient));
}

activation_mode activation_descriptor::mode() const { return read_activation(get()).mode; }

double activation_descriptor::coefficient() const { return read_activation(get()).coefficient; }

bool activation_descriptor::propagates_nan() const { return read_activation(get()).propagate_nan; }

std::string activation_descriptor::to_string() const
{
    const activation_readback a = read_activation(get());
    std::string text(dnn::to_string(a.mode));
    if (a.mode == activation_mode::clipped_relu || a.mode == activation_mode::elu) {
        char number[32];
        std::snprintf(number, sizeof number, "%g", a.coefficient);
        text += '(';
        text += number;
        text += ')';
    }
    return text;
}

} // namespace gpu::dnn
