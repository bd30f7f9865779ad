// flatten: a view of its input under a flatter shape.
#include <gpu/detail/expects.hpp>
#include <gpu/nn/flatten.hpp>

#include <limits>
#include <stdexcept>

namespace gpu::nn {

flatten::flatten(int start_dim) : start_dim_(start_dim)
{
    GPU_EXPECTS(start_dim >= 0, std::invalid_argument, "gpu::nn::flatten: start_dim ", start_dim,
                " is negative (count dimensions from the first, 0)");
}

std::string flatten::describe() const
{
    return "flatten(start_dim " + std::to_string(start_dim_) + ")";
}

std::vector<std::int64_t> flatten::output_shape(const std::vector<std::int64_t>& input) const
{
    const auto start = static_cast<std::size_t>(start_dim_);
    GPU_EXPECTS(input.size() > start, std::invalid_argument, describe(), ": the input has ",
                input.size(), " dimensions; flattening from dimension ", start_dim_, " needs more");
    std::vector<std::int64_t> output(input.begin(),
                                     input.begin() + static_cast<std::ptrdiff_t>(start));
    std::int64_t joined = 1;
    for (std::size_t i = 0; i < input.size(); ++i) {
        GPU_EXPECTS(input[i] > 0, std::invalid_argument, describe(), ": dimension ", i,
                    " of the input is ", input[i], "; every dimension must be positive");
        if (i >= start) {
            GPU_EXPECTS(joined <= std::numeric_limits<std::int64_t>::max() / input[i],
                        std::invalid_argument, describe(), ": the flattened dimension overflows");
            joined *= input[i];
        }
    }
    output.push_back(joined);
    return output;
}

tensor_spec flatten::do_plan(context&, const tensor_spec& input)
{
    // Dimensions of size 1 aside, channels-last memory is not in (C, H, W) order: refuse it
    // rather than hand out features in an order PyTorch's Flatten would not give.
    GPU_EXPECTS(input.layout == dnn::tensor_layout::nchw || input.shape.size() <= 2,
                std::invalid_argument, describe(), ": the input ", input.to_string(),
                " is channels-last; flattening it in PyTorch's order needs a copy (use nchw)");
    return tensor_spec{output_shape(input.shape), input.type, dnn::tensor_layout::nchw};
}

void flatten::do_forward(context&, const tensor_ref&, const tensor_ref&)
{
    // The output is the input's memory (checked by layer::forward): nothing to do.
}

void flatten::do_backward(context&, const tensor_ref&, const tensor_ref&)
{
    // The input gradient is the output gradient's memory (checked by layer::backward).
}

} // namespace gpu::nn
