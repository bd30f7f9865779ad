// Tensor, filter and activation descriptors: set through cuDNN after cudagap's own checks, and
// read back from cuDNN.
#include "translate.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/dnn/activation_descriptor.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>

#include <array>
#include <climits>
#include <cmath>
#include <cstdio>
#include <optional>
#include <source_location>
#include <stdexcept>
#include <string>

namespace gpu::dnn {

namespace {

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
    GPU_CUDNN_CHECK(
        cudnnGetTensorNdDescriptor(raw, CUDNN_DIM_MAX, &type, &rank, dims.data(), strides.data()));
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
    GPU_CUDNN_CHECK(
        cudnnGetFilterNdDescriptor(raw, CUDNN_DIM_MAX, &type, &format, &rank, dims.data()));
    return {detail::from_cudnn(type), detail::from_cudnn(format),
            std::vector<int>(dims.begin(), dims.begin() + rank)};
}

std::string describe(data_type type, tensor_layout layout, const std::vector<int>& dims)
{
    return std::string(to_string(type)) + " " + std::string(to_string(layout)) + " " +
           to_string(dims);
}

} // namespace

namespace {

// Why a packed stride cannot be given to cuDNN: a dimension that is not positive, or a stride
// beyond int. `dimension` is the index of the offending dimension.
struct stride_failure {
    std::size_t dimension;
    long long stride; // the stride that does not fit, when the dimension itself is positive
};

// The packed strides of `dims` in `layout`, computed in 64 bits. The running product is checked
// against INT_MAX before each multiplication, so it never exceeds INT_MAX * INT_MAX < 2^63 and
// the last product (which no stride uses) may be as large as it likes.
std::optional<stride_failure> fill_packed_strides(const std::vector<int>& dims,
                                                  tensor_layout layout, std::vector<int>& strides)
{
    // Innermost first: NCHW from the last dimension to N; channels last C, then the spatial
    // dimensions from the last, then N.
    std::vector<std::size_t> order;
    if (layout == tensor_layout::nhwc) {
        order.push_back(1);
    }
    for (std::size_t i = dims.size(); i-- > 2;) {
        order.push_back(i);
    }
    if (layout != tensor_layout::nhwc) {
        order.push_back(1);
    }
    order.push_back(0);
    strides.assign(dims.size(), 0);
    long long stride = 1;
    for (const std::size_t i : order) {
        if (dims[i] <= 0) {
            return stride_failure{i, 0};
        }
        if (stride > INT_MAX) {
            return stride_failure{i, stride};
        }
        strides[i] = static_cast<int>(stride);
        stride *= dims[i];
    }
    return std::nullopt;
}

} // namespace

std::vector<int> packed_strides(const std::vector<int>& dims, tensor_layout layout)
{
    if (dims.size() < 2) {
        throw std::invalid_argument("gpu::dnn::packed_strides: " + to_string(dims) +
                                    " has fewer than 2 dimensions (N and C)");
    }
    detail::require_named("gpu::dnn::packed_strides", "tensor_layout", layout);
    std::vector<int> strides;
    if (const std::optional<stride_failure> failure = fill_packed_strides(dims, layout, strides)) {
        const std::string where = "gpu::dnn::packed_strides: dimension " +
                                  std::to_string(failure->dimension) + " of " + to_string(dims);
        if (failure->stride == 0) {
            throw std::invalid_argument(where + " is " + std::to_string(dims[failure->dimension]) +
                                        "; every dimension must be positive");
        }
        throw std::invalid_argument(where + " would have the " + std::string(to_string(layout)) +
                                    " stride " + std::to_string(failure->stride) +
                                    ", more than INT_MAX (2^31 - 1), which cuDNN's strides "
                                    "cannot hold");
    }
    return strides;
}

// ---- tensor_descriptor ----------------------------------------------------------------------

tensor_descriptor::tensor_descriptor(const std::vector<int>& dims, data_type type,
                                     tensor_layout layout)
{
    // cuDNN's n-d tensors have 3 to 8 dimensions ("do not use 2 dimensions"); given 2 in NHWC,
    // cudnnSetTensorNdDescriptorEx returns success and leaves N's stride uninitialised. The
    // strides are therefore computed here (in 64 bits, bounded by the element count) and set
    // explicitly, as PyTorch does, so cuDNN holds exactly the packed strides of every rank.
    detail::validate_dims("gpu::dnn::tensor_descriptor", dims, 3, max_tensor_rank);
    detail::require_named("gpu::dnn::tensor_descriptor", "data_type", type);
    detail::require_named("gpu::dnn::tensor_descriptor", "tensor_layout", layout);
    const std::vector<int> strides = packed_strides(dims, layout);
    cudnnTensorDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateTensorDescriptor(&raw));
    reset(raw);
    detail::check_set(cudnnSetTensorNdDescriptor(raw, detail::to_cudnn(type),
                                                 static_cast<int>(dims.size()), dims.data(),
                                                 strides.data()),
                      "cudnnSetTensorNdDescriptor", "tensor " + describe(type, layout, dims));
}

int tensor_descriptor::rank() const
{
    return static_cast<int>(read_tensor(get()).dims.size());
}

std::vector<int> tensor_descriptor::dims() const
{
    return read_tensor(get()).dims;
}

std::vector<int> tensor_descriptor::strides() const
{
    return read_tensor(get()).strides;
}

data_type tensor_descriptor::type() const
{
    return read_tensor(get()).type;
}

std::optional<tensor_layout> tensor_descriptor::layout() const
{
    const tensor_readback t = read_tensor(get());
    std::vector<int> packed;
    for (const tensor_layout candidate : {tensor_layout::nchw, tensor_layout::nhwc}) {
        // An adopted descriptor's dims may have no packed strides in int: then it is not packed.
        if (t.dims.size() >= 2 && !fill_packed_strides(t.dims, candidate, packed) &&
            packed == t.strides) {
            return candidate;
        }
    }
    return std::nullopt;
}

std::size_t tensor_descriptor::element_count() const
{
    return detail::product(dims());
}

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
    detail::require_named("gpu::dnn::filter_descriptor", "data_type", type);
    detail::require_named("gpu::dnn::filter_descriptor", "tensor_layout", layout);
    cudnnFilterDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateFilterDescriptor(&raw));
    reset(raw);
    detail::check_set(cudnnSetFilterNdDescriptor(raw, detail::to_cudnn(type),
                                                 detail::to_cudnn(layout),
                                                 static_cast<int>(dims.size()), dims.data()),
                      "cudnnSetFilterNdDescriptor", "filter " + describe(type, layout, dims));
}

int filter_descriptor::rank() const
{
    return static_cast<int>(read_filter(get()).dims.size());
}

std::vector<int> filter_descriptor::dims() const
{
    return read_filter(get()).dims;
}

data_type filter_descriptor::type() const
{
    return read_filter(get()).type;
}

tensor_layout filter_descriptor::layout() const
{
    return read_filter(get()).layout;
}

std::size_t filter_descriptor::element_count() const
{
    return detail::product(dims());
}

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
    detail::require_named("gpu::dnn::activation_descriptor", "activation_mode", mode);
    GPU_EXPECTS(std::isfinite(coefficient), std::invalid_argument,
                "gpu::dnn::activation_descriptor: the coefficient of ", dnn::to_string(mode),
                " is ", coefficient, "; it must be finite");
    GPU_EXPECTS(mode != activation_mode::clipped_relu || coefficient > 0.0, std::invalid_argument,
                "gpu::dnn::activation_descriptor: clipped_relu needs a positive ceiling, got ",
                coefficient);
    cudnnActivationDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateActivationDescriptor(&raw));
    reset(raw);
    detail::check_set(
        cudnnSetActivationDescriptor(raw, detail::to_cudnn(mode),
                                     propagate_nan ? CUDNN_PROPAGATE_NAN : CUDNN_NOT_PROPAGATE_NAN,
                                     coefficient),
        "cudnnSetActivationDescriptor",
        "activation " + std::string(dnn::to_string(mode)) + ", coefficient " +
            std::to_string(coefficient));
}

activation_mode activation_descriptor::mode() const
{
    return read_activation(get()).mode;
}

double activation_descriptor::coefficient() const
{
    return read_activation(get()).coefficient;
}

bool activation_descriptor::propagates_nan() const
{
    return read_activation(get()).propagate_nan;
}

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
