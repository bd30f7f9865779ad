/// @file pooling.hpp
/// @brief `gpu::dnn::pooling`: max or average pooling, forward and backward, planned once for
/// an input shape, element type and layout (`torch.nn.MaxPool2d`, `torch.nn.AvgPool2d`).
///
/// @code
/// gpu::dnn::pooling pool({32, 64, 112, 112}, {.window = {3, 3}, .padding = {1, 1}});
/// gpu::device_buffer<float> y(pool.output_elements(), stream);
/// pool.forward(h, x, y);               // on h's stream
/// pool.backward(h, y, dy, x, dx);      // dx = the gradient of the loss with respect to x
/// @endcode
///
/// See docs/dnn_ops.md for the PyTorch counterparts.
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/dnn/element.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/pooling_descriptor.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>

#include <cstddef>
#include <initializer_list>
#include <string>
#include <vector>

namespace gpu::dnn {

/// @brief A pooling planned for one input shape, element type and layout. Move-only.
///
/// Planning checks the shapes on the host and builds the descriptors; it needs no GPU and no
/// handle. `forward` and `backward` are one cuDNN call each on the handle's stream: no
/// allocation, no host synchronisation, so both may be captured in a CUDA graph. The plan holds
/// no buffers; one plan may serve several streams at once.
class pooling {
public:
    /// @brief Plans a pooling.
    /// @param input N, C, spatial... (logical order, whatever the layout): 4-d for images,
    /// 5-d for volumes, matching the geometry's spatial rank
    /// @param geometry window, padding, stride, mode, NaN propagation
    /// @param type the element type of x, y, dy and dx
    /// @param layout their layout: `nchw` or `nhwc` (channels last)
    /// @throws std::invalid_argument as `pooling_output_dims`, or when @p type or @p layout is
    /// not a named enumerator (values named)
    /// @throws gpu::dnn::dnn_error when cuDNN rejects a descriptor
    pooling(const std::vector<int>& input, const pooling_geometry& geometry,
            data_type type = data_type::fp32, tensor_layout layout = tensor_layout::nchw);

    /// @brief y = pool(x), on @p h's stream.
    /// @tparam T the element type planned: `float`, `__half` or `__nv_bfloat16`
    /// @throws std::invalid_argument when the element type or a buffer's size does not match
    /// the plan (sizes named)
    /// @throws std::logic_error when the plan or the handle is empty (moved from)
    /// @throws gpu::dnn::dnn_error when cuDNN fails, with its own message
    template <dnn_element T>
    void forward(handle& h, const device_buffer<T>& x, device_buffer<T>& y) const
    {
        check_buffers("gpu::dnn::pooling::forward", data_type_of<T>,
                      {{"x", x.size(), input_elements_}, {"y", y.size(), output_elements_}});
        forward_raw(h, x.data(), y.data());
    }

    /// @brief dx = the gradient of pool at x, given y = pool(x) and the gradient dy of y, on
    /// @p h's stream. Max pooling finds each window's maximum again from x and y.
    /// @throws as `forward`
    template <dnn_element T>
    void backward(handle& h, const device_buffer<T>& y, const device_buffer<T>& dy,
                  const device_buffer<T>& x, device_buffer<T>& dx) const
    {
        check_buffers("gpu::dnn::pooling::backward", data_type_of<T>,
                      {{"y", y.size(), output_elements_},
                       {"dy", dy.size(), output_elements_},
                       {"x", x.size(), input_elements_},
                       {"dx", dx.size(), input_elements_}});
        backward_raw(h, y.data(), dy.data(), x.data(), dx.data());
    }

    /// @brief The forward on raw device pointers (memory cudagap does not own): no size checks
    /// are possible; the tensors must be packed in the plan's layout and type.
    /// @throws std::logic_error for an empty plan or handle
    /// @throws std::invalid_argument for a null pointer
    void forward_raw(handle& h, const void* x, void* y) const;

    /// @brief The backward on raw device pointers; as `forward_raw`.
    void backward_raw(handle& h, const void* y, const void* dy, const void* x, void* dx) const;

    /// @brief The geometry it was planned with.
    [[nodiscard]] const pooling_geometry& geometry() const noexcept { return geometry_; }
    /// @brief N, C, spatial... of x and dx.
    [[nodiscard]] const std::vector<int>& input_dims() const noexcept { return input_dims_; }
    /// @brief N, C, pooled spatial... of y and dy.
    [[nodiscard]] const std::vector<int>& output_dims() const noexcept { return output_dims_; }
    /// @brief The element type.
    [[nodiscard]] data_type type() const noexcept { return type_; }
    /// @brief The layout.
    [[nodiscard]] tensor_layout layout() const noexcept { return layout_; }
    /// @brief Elements of x and dx.
    [[nodiscard]] std::size_t input_elements() const noexcept { return input_elements_; }
    /// @brief Elements of y and dy.
    [[nodiscard]] std::size_t output_elements() const noexcept { return output_elements_; }
    /// @brief The input's descriptor, for raw cuDNN calls.
    [[nodiscard]] const tensor_descriptor& input_descriptor() const noexcept { return input_; }
    /// @brief The output's descriptor.
    [[nodiscard]] const tensor_descriptor& output_descriptor() const noexcept { return output_; }
    /// @brief The pooling descriptor.
    [[nodiscard]] const pooling_descriptor& descriptor() const noexcept { return pooling_; }
    /// @brief E.g. `fp32 nchw input [2, 3, 8, 8] output [2, 3, 4, 4], max, window [2, 2], ...`.
    [[nodiscard]] std::string to_string() const;

    /// @brief Moving leaves the source without descriptors; it may only be destroyed or
    /// assigned.
    /// @post `other.input_descriptor().get() == nullptr`
    pooling(pooling&& other) noexcept = default;
    /// @brief Releases this plan and takes @p other's.
    /// @post `other.input_descriptor().get() == nullptr`
    pooling& operator=(pooling&& other) noexcept = default;
    pooling(const pooling&) = delete;
    pooling& operator=(const pooling&) = delete;
    /// @brief Destroys the descriptors.
    ~pooling() = default;

private:
    // Refuses an empty plan, another element type, or a buffer of another size.
    void check_buffers(const char* operation, data_type given,
                       std::initializer_list<detail::buffer_check> buffers) const;

    pooling_geometry geometry_;
    std::vector<int> input_dims_;
    std::vector<int> output_dims_;
    data_type type_ = data_type::fp32;
    tensor_layout layout_ = tensor_layout::nchw;
    std::size_t input_elements_ = 0;
    std::size_t output_elements_ = 0;
    tensor_descriptor input_ = tensor_descriptor::from_native_handle(nullptr);
    tensor_descriptor output_ = tensor_descriptor::from_native_handle(nullptr);
    pooling_descriptor pooling_ = pooling_descriptor::from_native_handle(nullptr);
};

} // namespace gpu::dnn
