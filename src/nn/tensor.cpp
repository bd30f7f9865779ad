// Tensor specs: element and byte counts with overflow checks, and their text.
#include "memory_tags.hpp"
#include <gpu/detail/expects.hpp>
#include <gpu/nn/tensor.hpp>

#include <limits>
#include <stdexcept>

namespace gpu::nn {

std::size_t tensor_spec::elements() const
{
    std::size_t count = 1;
    for (const std::int64_t dimension : shape) {
        GPU_EXPECTS(dimension >= 0, std::invalid_argument, "gpu::nn::tensor_spec: ", to_string(),
                    " has a negative dimension");
        const auto size = static_cast<std::size_t>(dimension);
        GPU_EXPECTS(size == 0 || count <= std::numeric_limits<std::size_t>::max() / size,
                    std::invalid_argument, "gpu::nn::tensor_spec: the element count of ",
                    to_string(), " overflows");
        count *= size;
    }
    return count;
}

std::size_t tensor_spec::bytes() const
{
    const std::size_t count = elements();
    const std::size_t size = element_size(type);
    GPU_EXPECTS(size != 0, std::invalid_argument, "gpu::nn::tensor_spec: element type ",
                static_cast<int>(type), " is not a gpu::element_type");
    return gpu::detail::checked_bytes("gpu::nn::tensor_spec", count, size);
}

std::string tensor_spec::to_string() const
{
    std::string text = std::string(gpu::to_string(type)) + " [";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        text += (i == 0 ? "" : ", ") + std::to_string(shape[i]);
    }
    return text + "] " + std::string(dnn::to_string(layout));
}

namespace detail {
memory_tag tensor_tag() noexcept
{
    const memory_tag scoped = current_memory_tag();
    return scoped == memory_tag::user() ? activations_tag : scoped;
}
} // namespace detail

tensor::tensor(tensor_spec spec, stream_ref stream)
    : spec_(std::move(spec)), buffer_(spec_.bytes(), stream, detail::tensor_tag())
{}

} // namespace gpu::nn
