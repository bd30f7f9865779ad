/// @file activation.hpp
/// @brief `gpu::dnn::activation`: an activation function (ReLU and friends), forward and
/// backward, planned once for a tensor shape, element type and layout (`torch.nn.ReLU` and its
/// gradient).
///
/// @code
/// gpu::dnn::activation relu({32, 64, 56, 56});      // ReLU, fp32, NCHW
/// relu.forward(h, x, y);                            // y = max(x, 0), on h's stream
/// relu.backward(h, y, dy, x, dx);                   // dx = dy where x > 0, else 0
/// @endcode
///
/// See docs/dnn_ops.md for the PyTorch counterparts.
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/dnn/activation_descriptor.hpp>
#include <gpu/dnn/element.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>

#include <cstddef>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

namespace gpu::dnn {

/// @brief An activation planned for one tensor shape, element type and layout. Move-only.
///
/// Planning needs no GPU and no handle. `forward` and `backward` are one cuDNN call each on the
/// handle's stream: no allocation, no host synchronisation, so both may be captured in a CUDA
/// graph. The plan holds no buffers; one plan may serve several streams at once. x and y (and
/// dy and dx) may be the same buffer: cuDNN works in place.
class activation {
public:
    /// @brief Plans an activation.
    /// @param dims N, C, spatial... (3 to 8 dimensions; a matrix is `{rows, columns, 1}`)
    /// @param type the element type of x, y, dy and dx
    /// @param layout their layout; an activation is elementwise, so it matters only in that
    /// every buffer must have it
    /// @param function the function, taken over by the plan; by default ReLU with no upper
    /// bound (the coefficient at the largest double, as PyTorch sets it: cuDNN documents the
    /// coefficient of ReLU as its upper bound)
    /// @throws std::invalid_argument as `tensor_descriptor`, or for the `identity` function,
    /// which cuDNN runs only fused into a convolution
    /// @throws std::logic_error when @p function holds nothing (moved from)
    /// @throws gpu::dnn::dnn_error when cuDNN rejects a descriptor
    explicit activation(const std::vector<int>& dims, data_type type = data_type::fp32,
                        tensor_layout layout = tensor_layout::nchw,
                        activation_descriptor function = activation_descriptor(
                            activation_mode::relu, std::numeric_limits<double>::max()));

    /// @brief y = f(x), on @p h's stream.
    /// @tparam T the element type planned: `float`, `__half` or `__nv_bfloat16`
    /// @throws std::invalid_argument when the element type or a buffer's size does not match
    /// the plan (sizes named)
    /// @throws std::logic_error when the plan or the handle is empty (moved from)
    /// @throws gpu::dnn::dnn_error when cuDNN fails, with its own message
    template <dnn_element T>
    void forward(handle& h, const device_buffer<T>& x, device_buffer<T>& y) const
    {
        check_buffers("gpu::dnn::activation::forward", data_type_of<T>,
                      {{"x", x.size(), elements_}, {"y", y.size(), elements_}});
        forward_raw(h, x.data(), y.data());
    }

    /// @brief dx = f'(x) * dy, given y = f(x) and the gradient dy of y, on @p h's stream
    /// (for ReLU: dx = dy where x > 0, and 0 elsewhere, as PyTorch's `threshold_backward`).
    /// @throws as `forward`
    template <dnn_element T>
    void backward(handle& h, const device_buffer<T>& y, const device_buffer<T>& dy,
                  const device_buffer<T>& x, device_buffer<T>& dx) const
    {
        check_buffers("gpu::dnn::activation::backward", data_type_of<T>,
                      {{"y", y.size(), elements_},
                       {"dy", dy.size(), elements_},
                       {"x", x.size(), elements_},
                       {"dx", dx.size(), elements_}});
        backward_raw(h, y.data(), dy.data(), x.data(), dx.data());
    }

    /// @brief The forward on raw device pointers (memory cudagap does not own): no size checks
    /// are possible; the tensors must be packed in the plan's layout and type.
    /// @throws std::logic_error for an empty plan or handle
    /// @throws std::invalid_argument for a null pointer
    void forward_raw(handle& h, const void* x, void* y) const;

    /// @brief The backward on raw device pointers; as `forward_raw`.
    void backward_raw(handle& h, const void* y, const void* dy, const void* x, void* dx) const;

    /// @brief N, C, spatial... of every buffer.
    [[nodiscard]] const std::vector<int>& dims() const noexcept { return dims_; }
    /// @brief The element type.
    [[nodiscard]] data_type type() const noexcept { return type_; }
    /// @brief The layout.
    [[nodiscard]] tensor_layout layout() const noexcept { return layout_; }
    /// @brief Elements of each buffer.
    [[nodiscard]] std::size_t elements() const noexcept { return elements_; }
    /// @brief The descriptor of x, y, dy and dx, for raw cuDNN calls.
    [[nodiscard]] const tensor_descriptor& data_descriptor() const noexcept { return data_; }
    /// @brief The function's descriptor.
    [[nodiscard]] const activation_descriptor& function() const noexcept { return function_; }
    /// @brief E.g. `relu on fp32 nchw [32, 64, 56, 56]`.
    [[nodiscard]] std::string to_string() const;

    /// @brief Moving leaves the source without descriptors; it may only be destroyed or
    /// assigned.
    /// @post `other.data_descriptor().get() == nullptr`
    activation(activation&& other) noexcept = default;
    /// @brief Releases this plan and takes @p other's.
    /// @post `other.data_descriptor().get() == nullptr`
    activation& operator=(activation&& other) noexcept = default;
    activation(const activation&) = delete;
    activation& operator=(const activation&) = delete;
    /// @brief Destroys the descriptors.
    ~activation() = default;

private:
    // Refuses an empty plan, another element type, or a buffer of another size.
    void check_buffers(const char* operation, data_type given,
                       std::initializer_list<detail::buffer_check> buffers) const;

    std::vector<int> dims_;
    data_type type_ = data_type::fp32;
    tensor_layout layout_ = tensor_layout::nchw;
    std::size_t elements_ = 0;
    tensor_descriptor data_ = tensor_descriptor::from_native_handle(nullptr);
    activation_descriptor function_ = activation_descriptor::from_native_handle(nullptr);
};

} // namespace gpu::dnn
