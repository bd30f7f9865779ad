/// @file softmax.hpp
/// @brief `gpu::dnn::softmax`: softmax or log-softmax, forward and backward, planned once for a
/// tensor shape, element type and layout (`torch.nn.functional.softmax` and `log_softmax`).
///
/// @code
/// // Class scores of a batch of 32, 10 classes, as a 4-d tensor: N, C, 1, 1.
/// gpu::dnn::softmax log_probabilities({32, 10, 1, 1}, gpu::dnn::softmax_algorithm::log);
/// log_probabilities.forward(h, logits, y);   // F.log_softmax(logits, dim=1)
/// @endcode
///
/// See docs/dnn_ops.md for the PyTorch counterparts.
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/dnn/element.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::dnn {

/// @brief What a softmax computes and how (`cudnnSoftmaxAlgorithm_t`).
enum class softmax_algorithm {
    /// e^x / sum(e^x) without subtracting the maximum first: overflows for inputs above ~88
    /// (fp32); cuDNN's fastest.
    fast,
    /// e^(x - max) / sum(e^(x - max)): never overflows (what PyTorch's `softmax` computes).
    accurate,
    /// x - max - log(sum(e^(x - max))): the log-softmax (PyTorch's `log_softmax`), accurate
    /// where the softmax itself would round to 0.
    log,
};

/// @brief `fast`, `accurate` or `log`; `unknown` for a value that is none of them.
[[nodiscard]] std::string_view to_string(softmax_algorithm algorithm) noexcept;

/// @brief Over which elements one softmax runs (`cudnnSoftmaxMode_t`).
enum class softmax_mode {
    /// Over C for each N and spatial position: PyTorch's `dim=1`. For class scores of shape
    /// N x C, describe them as `{N, C, 1, 1}`.
    channel,
    /// Over C and every spatial position together, for each N: PyTorch's softmax of
    /// `x.flatten(1)` along `dim=1`.
    instance,
};

/// @brief `channel` or `instance`; `unknown` for a value that is none of them.
[[nodiscard]] std::string_view to_string(softmax_mode mode) noexcept;

/// @brief A softmax planned for one tensor shape, element type and layout. Move-only.
///
/// Planning needs no GPU and no handle. `forward` and `backward` are one cuDNN call each on the
/// handle's stream: no allocation, no host synchronisation, so both may be captured in a CUDA
/// graph. The plan holds no buffers; one plan may serve several streams at once.
class softmax {
public:
    /// @brief Plans a softmax.
    /// @param dims N, C, spatial... (4 to 8 dimensions, cuDNN's range for softmax: class
    /// scores are `{N, C, 1, 1}`)
    /// @param algorithm softmax (`accurate`, `fast`) or log-softmax (`log`)
    /// @param mode over the channels at each position (`channel`), or over each whole sample
    /// @param type the element type of x, y, dy and dx
    /// @param layout their layout: `nchw` or `nhwc`
    /// @throws std::invalid_argument when @p dims has fewer than 4 or more than 8 dimensions or
    /// as `tensor_descriptor`, or when an enum argument is not a named enumerator (values named)
    /// @throws gpu::dnn::dnn_error when cuDNN rejects the descriptor
    explicit softmax(const std::vector<int>& dims,
                     softmax_algorithm algorithm = softmax_algorithm::accurate,
                     softmax_mode mode = softmax_mode::channel, data_type type = data_type::fp32,
                     tensor_layout layout = tensor_layout::nchw);

    /// @brief y = softmax(x) (or log-softmax), on @p h's stream.
    /// @tparam T the element type planned: `float`, `__half` or `__nv_bfloat16`
    /// @throws std::invalid_argument when the element type or a buffer's size does not match
    /// the plan (sizes named)
    /// @throws std::logic_error when the plan or the handle is empty (moved from)
    /// @throws gpu::dnn::dnn_error when cuDNN fails, with its own message
    template <dnn_element T>
    void forward(handle& h, const device_buffer<T>& x, device_buffer<T>& y) const
    {
        check_buffers("gpu::dnn::softmax::forward", data_type_of<T>,
                      {{"x", x.size(), elements_}, {"y", y.size(), elements_}});
        forward_raw(h, x.data(), y.data());
    }

    /// @brief dx, the gradient with respect to x, from the forward's output y and the gradient
    /// dy of y, on @p h's stream: `y * (dy - sum(dy * y))` for the softmax,
    /// `dy - e^y * sum(dy)` for the log-softmax (whose y is the log-probabilities).
    /// @throws as `forward`
    template <dnn_element T>
    void backward(handle& h, const device_buffer<T>& y, const device_buffer<T>& dy,
                  device_buffer<T>& dx) const
    {
        check_buffers("gpu::dnn::softmax::backward", data_type_of<T>,
                      {{"y", y.size(), elements_},
                       {"dy", dy.size(), elements_},
                       {"dx", dx.size(), elements_}});
        backward_raw(h, y.data(), dy.data(), dx.data());
    }

    /// @brief The forward on raw device pointers (memory cudagap does not own): no size checks
    /// are possible; the tensors must be packed in the plan's layout and type.
    /// @throws std::logic_error for an empty plan or handle
    /// @throws std::invalid_argument for a null pointer
    void forward_raw(handle& h, const void* x, void* y) const;

    /// @brief The backward on raw device pointers; as `forward_raw`.
    void backward_raw(handle& h, const void* y, const void* dy, void* dx) const;

    /// @brief N, C, spatial... of every buffer.
    [[nodiscard]] const std::vector<int>& dims() const noexcept { return dims_; }
    /// @brief Softmax or log-softmax.
    [[nodiscard]] softmax_algorithm algorithm() const noexcept { return algorithm_; }
    /// @brief Over which elements.
    [[nodiscard]] softmax_mode mode() const noexcept { return mode_; }
    /// @brief The element type.
    [[nodiscard]] data_type type() const noexcept { return type_; }
    /// @brief The layout.
    [[nodiscard]] tensor_layout layout() const noexcept { return layout_; }
    /// @brief Elements of each buffer.
    [[nodiscard]] std::size_t elements() const noexcept { return elements_; }
    /// @brief The descriptor of x, y, dy and dx, for raw cuDNN calls.
    [[nodiscard]] const tensor_descriptor& data_descriptor() const noexcept { return data_; }
    /// @brief E.g. `log softmax over channel of fp32 nchw [32, 10, 1, 1]`.
    [[nodiscard]] std::string to_string() const;

    /// @brief Moving leaves the source without a descriptor; it may only be destroyed or
    /// assigned.
    /// @post `other.data_descriptor().get() == nullptr`
    softmax(softmax&& other) noexcept = default;
    /// @brief Releases this plan and takes @p other's.
    /// @post `other.data_descriptor().get() == nullptr`
    softmax& operator=(softmax&& other) noexcept = default;
    softmax(const softmax&) = delete;
    softmax& operator=(const softmax&) = delete;
    /// @brief Destroys the descriptor.
    ~softmax() = default;

private:
    // Refuses an empty plan, another element type, or a buffer of another size.
    void check_buffers(const char* operation, data_type given,
                       std::initializer_list<detail::buffer_check> buffers) const;

    std::vector<int> dims_;
    softmax_algorithm algorithm_ = softmax_algorithm::accurate;
    softmax_mode mode_ = softmax_mode::channel;
    data_type type_ = data_type::fp32;
    tensor_layout layout_ = tensor_layout::nchw;
    std::size_t elements_ = 0;
    tensor_descriptor data_ = tensor_descriptor::from_native_handle(nullptr);
};

} // namespace gpu::dnn
