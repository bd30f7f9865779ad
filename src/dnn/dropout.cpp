// Dropout on cuDNN's dropout descriptor: the generator states seeded once on the device, and one
// cuDNN call per forward or backward on the handle's stream.
#include "memory_tags.hpp"
#include "ops.hpp"
#include "translate.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/dnn/dropout.hpp>

#include <climits>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpu::dnn {

namespace {

std::string decimal(float value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%g", static_cast<double>(value));
    return text;
}

void check_probability(const char* operation, float probability)
{
    // Written so that NaN fails too. p = 1 is refused as PyTorch's cuDNN path refuses it: the
    // scale 1 / (1 - p) would be infinite.
    GPU_EXPECTS(probability >= 0.0F && probability < 1.0F, std::invalid_argument, operation,
                ": the probability ", decimal(probability), " is outside [0, 1)");
}

void check_elements(const char* operation, std::size_t elements)
{
    GPU_EXPECTS(elements > 0 && elements <= static_cast<std::size_t>(INT_MAX),
                std::invalid_argument, operation, ": ", elements,
                " elements; cuDNN's dropout "
                "takes 1 to INT_MAX (2^31 - 1) of them");
}

// Dropout is elementwise: the tensor is described as flat, N = the element count.
tensor_descriptor flat_descriptor(std::size_t elements, data_type type)
{
    return tensor_descriptor({static_cast<int>(elements), 1, 1, 1}, type, tensor_layout::nchw);
}

std::size_t reserve_of(const tensor_descriptor& data)
{
    std::size_t bytes = 0;
    GPU_CUDNN_CHECK(cudnnDropoutGetReserveSpaceSize(data.get(), &bytes));
    return bytes;
}

std::size_t state_bytes(handle& h)
{
    std::size_t bytes = 0;
    GPU_CUDNN_CHECK(cudnnDropoutGetStatesSize(h.get(), &bytes));
    return bytes;
}

std::string call_context(float probability, std::size_t elements, data_type type)
{
    return "dropout p " + decimal(probability) + " over " + std::to_string(elements) + " " +
           std::string(to_string(type)) + " elements";
}

cudnnDropoutDescriptor_t create_descriptor()
{
    cudnnDropoutDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreateDropoutDescriptor(&raw));
    return raw;
}

} // namespace

dropout::dropout(handle& h, float probability, std::uint64_t seed) : dropout(probability, seed)
{
    check_probability("gpu::dnn::dropout", probability);
    detail::require_handle(h, "gpu::dnn::dropout");
    descriptor_.reset(create_descriptor());
    states_ =
        device_buffer<std::byte>(state_bytes(h), h.stream(), detail::cudnn_dropout_states_tag());
    // Launches cuDNN's seeding kernel on h's stream, where the states were just allocated.
    detail::check_call(cudnnSetDropoutDescriptor(get(), h.get(), probability, states_.data(),
                                                 states_.size(), seed),
                       "cudnnSetDropoutDescriptor", [&] {
                           return "dropout p " + decimal(probability) + ", seed " +
                                  std::to_string(seed) + ", states " +
                                  std::to_string(states_.size()) + " bytes";
                       });
}

dropout dropout::restore(handle& h, float probability, std::uint64_t seed,
                         device_buffer<std::byte> states)
{
    check_probability("gpu::dnn::dropout::restore", probability);
    detail::require_handle(h, "gpu::dnn::dropout::restore");
    const std::size_t needed = state_bytes(h);
    GPU_EXPECTS(states.size() >= needed, std::invalid_argument,
                "gpu::dnn::dropout::restore: the states hold ", states.size(),
                " bytes but cuDNN's states on this GPU take ", needed,
                " (saved on another kind of GPU?)");
    dropout restored(probability, seed);
    restored.descriptor_.reset(create_descriptor());
    restored.states_ = std::move(states);
    detail::check_call(
        cudnnRestoreDropoutDescriptor(restored.get(), h.get(), probability, restored.states_.data(),
                                      restored.states_.size(), seed),
        "cudnnRestoreDropoutDescriptor",
        [&] { return "dropout p " + decimal(probability) + ", seed " + std::to_string(seed); });
    return restored;
}

std::size_t dropout::reserve_bytes(std::size_t elements, data_type type)
{
    check_elements("gpu::dnn::dropout::reserve_bytes", elements);
    detail::require_named("gpu::dnn::dropout::reserve_bytes", "data_type", type);
    return reserve_of(flat_descriptor(elements, type));
}

void dropout::check_sizes(const char* operation, const char* input_name, std::size_t input,
                          const char* output_name, std::size_t output)
{
    GPU_EXPECTS(input == output, std::invalid_argument, operation, ": ", input_name, " has ", input,
                " elements but ", output_name, " has ", output);
}

const tensor_descriptor& dropout::prepare(const char* operation, handle& h, data_type type,
                                          std::size_t elements, std::size_t reserve_size)
{
    detail::require_ready(static_cast<bool>(descriptor_), h, operation);
    detail::require_named(operation, "data_type", type);
    check_elements(operation, elements);
    if (!data_ || elements != described_elements_ || type != described_type_) {
        data_ = flat_descriptor(elements, type);
        described_elements_ = elements;
        described_type_ = type;
        described_reserve_bytes_ = reserve_of(data_);
    }
    GPU_EXPECTS(reserve_size >= described_reserve_bytes_, std::invalid_argument, operation,
                ": the reserve holds ", reserve_size, " bytes but ", elements, " ", to_string(type),
                " elements need ", described_reserve_bytes_, " (dropout::reserve_bytes)");
    return data_;
}

void dropout::forward_raw(handle& h, data_type type, std::size_t elements, const void* x, void* y,
                          void* reserve, std::size_t reserve_size)
{
    constexpr const char* operation = "gpu::dnn::dropout::forward";
    const tensor_descriptor& data = prepare(operation, h, type, elements, reserve_size);
    detail::require_pointers(operation, {{"x", x}, {"y", y}, {"reserve", reserve}});
    // The states are written on h's stream from now on: free them there, after this forward.
    const stream_ref stream = h.stream();
    if (states_.stream() != stream) {
        states_.set_stream(stream);
    }
    detail::check_call(
        cudnnDropoutForward(h.get(), get(), data.get(), x, data.get(), y, reserve, reserve_size),
        "cudnnDropoutForward", [&] { return call_context(probability_, elements, type); });
}

void dropout::backward_raw(handle& h, data_type type, std::size_t elements, const void* dy,
                           void* dx, const void* reserve, std::size_t reserve_size)
{
    constexpr const char* operation = "gpu::dnn::dropout::backward";
    const tensor_descriptor& data = prepare(operation, h, type, elements, reserve_size);
    detail::require_pointers(operation, {{"dy", dy}, {"dx", dx}, {"reserve", reserve}});
    // cuDNN's prototype takes the reserve as void*, but the backward only reads the mask the
    // forward wrote there ("an input" in cuDNN's documentation).
    detail::check_call(cudnnDropoutBackward(h.get(), get(), data.get(), dy, data.get(), dx,
                                            const_cast<void*>(reserve), reserve_size),
                       "cudnnDropoutBackward",
                       [&] { return call_context(probability_, elements, type); });
}

} // namespace gpu::dnn
