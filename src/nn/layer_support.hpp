// What the layers on the dnn wrapper (conv2d, relu, max_pool2d, dropout) share, and the check
// of a layer's input against the precision policy that linear shares with conv2d: the dnn
// element type of a tensor spec, a spec's shape as cuDNN's int dimensions, the check that a
// tensor can be described to cuDNN at all, the runs of a one-input dnn plan, and a
// stream-ordered device copy. Private to src/nn.
#pragma once

#include <gpu/dnn/types.hpp>
#include <gpu/element_type.hpp>
#include <gpu/nn/context.hpp>
#include <gpu/nn/tensor.hpp>
#include <gpu/stream.hpp>

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gpu::nn::detail {

// The dnn wrapper's data type of `type`: FP32, FP16 or BF16. `who` (the layer's describe()) and
// `spec` name the refusal of FP64, which cuDNN's layers do not take.
[[nodiscard]] dnn::data_type dnn_type_of(const std::string& who, const tensor_spec& spec);

// `spec.shape` as cuDNN's dimensions: every dimension positive and at most INT_MAX, and at most
// INT_MAX elements (cuDNN indexes a tensor with an int). Throws std::invalid_argument naming
// `who` and the spec otherwise.
[[nodiscard]] std::vector<int> dnn_dims(const std::string& who, const tensor_spec& spec);

// The dimensions of an elementwise operation over `spec` (ReLU): the shape padded with trailing
// 1s to cuDNN's minimum of 3 dimensions; more than 8 dimensions are refused. Every buffer of an
// elementwise operation is packed in the same layout, so the tensor is described as NCHW
// whatever its layout: element i of x maps to element i of y either way.
[[nodiscard]] std::vector<int> elementwise_dims(const std::string& who, const tensor_spec& spec);

// The compute type of ctx's precision policy, which a layer with parameters (linear, conv2d)
// takes its input in; throws std::invalid_argument naming `who` (the layer's describe()), `kind`
// ("a linear layer") and the input otherwise, with how to convert it.
[[nodiscard]] element_type require_compute_input(const context& ctx, const std::string& who,
                                                 std::string_view kind, const tensor_spec& input);

// `[a, b]`: a window, stride or padding in a message.
[[nodiscard]] std::string pair_text(const std::array<int, 2>& values);

// Copies `bytes` from `from` to `to` on `stream` (device to device, stream-ordered, capturable);
// nothing when both are the same address (a layer run in place).
void copy_device(void* to, const void* from, std::size_t bytes, stream_ref stream);

// y = f(x) by a dnn plan of one input and one output (activation, pooling), on ctx's stream.
template <class Plan>
void run_forward(context& ctx, const Plan& plan, const void* x, void* y)
{
    dnn::handle& h = ctx.dnn();
    h.set_stream(ctx.stream());
    plan.forward_raw(h, x, y);
}

// dx from y = f(x) and dy by the same plan, on ctx's stream; nothing when dx is null (not asked
// for: these layers have no parameters, so nothing else is computed).
template <class Plan>
void run_backward(context& ctx, const Plan& plan, const void* y, const void* dy, const void* x,
                  void* dx)
{
    if (dx == nullptr) {
        return;
    }
    dnn::handle& h = ctx.dnn();
    h.set_stream(ctx.stream());
    plan.backward_raw(h, y, dy, x, dx);
}

} // namespace gpu::nn::detail
