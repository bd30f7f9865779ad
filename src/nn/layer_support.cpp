// Shared by the layers on the dnn wrapper: types, dimensions, copies.
#include "layer_support.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/error.hpp>

#include <cuda_runtime_api.h>

#include <climits>
#include <cstdint>
#include <optional>
#include <stdexcept>

namespace gpu::nn::detail {

element_type require_compute_input(const context& ctx, const std::string& who,
                                   std::string_view kind, const tensor_spec& input)
{
    const element_type compute = ctx.precision().compute;
    GPU_EXPECTS(input.type == compute, std::invalid_argument, who, ": the input is ",
                input.to_string(), ", but under the ", to_string(compute), " policy ", kind,
                " takes ", to_string(compute), " (convert it first, e.g. with gpu::blas::convert)");
    return compute;
}

dnn::data_type dnn_type_of(const std::string& who, const tensor_spec& spec)
{
    if (const std::optional<dnn::data_type> type =
            gpu::detail::mapped_value(dnn::detail::data_types, spec.type)) {
        return *type;
    }
    gpu::detail::fail<std::invalid_argument>(who, ": the input is ", spec.to_string(),
                                             "; cuDNN takes FP32, FP16 or BF16 tensors");
}

std::vector<int> dnn_dims(const std::string& who, const tensor_spec& spec)
{
    GPU_EXPECTS(!spec.shape.empty(), std::invalid_argument, who, ": the input ", spec.to_string(),
                " has no dimensions");
    std::vector<int> dims;
    dims.reserve(spec.shape.size());
    std::int64_t elements = 1;
    for (std::size_t i = 0; i < spec.shape.size(); ++i) {
        const std::int64_t d = spec.shape[i];
        GPU_EXPECTS(d > 0 && d <= INT_MAX, std::invalid_argument, who, ": dimension ", i,
                    " of the input ", spec.to_string(), " is ", d,
                    "; every dimension must be in [1, 2^31 - 1]");
        GPU_EXPECTS(elements <= INT_MAX / d, std::invalid_argument, who, ": the input ",
                    spec.to_string(), " has more than 2^31 - 1 elements, more than cuDNN indexes");
        elements *= d;
        dims.push_back(static_cast<int>(d));
    }
    return dims;
}

std::vector<int> elementwise_dims(const std::string& who, const tensor_spec& spec)
{
    GPU_EXPECTS(spec.shape.size() <= 8, std::invalid_argument, who, ": the input ",
                spec.to_string(), " has ", spec.shape.size(),
                " dimensions; cuDNN describes at most 8");
    std::vector<int> dims = dnn_dims(who, spec);
    dims.resize(dims.size() < 3 ? 3 : dims.size(), 1);
    return dims;
}

std::string pair_text(const std::array<int, 2>& values)
{
    // Appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "[" + std::to_string(...).
    std::string text("[");
    text.append(std::to_string(values[0]))
        .append(", ")
        .append(std::to_string(values[1]))
        .append("]");
    return text;
}

void copy_device(void* to, const void* from, std::size_t bytes, stream_ref stream)
{
    if (to == from || bytes == 0) {
        return;
    }
    GPU_CUDA_CHECK(cudaMemcpyAsync(to, from, bytes, cudaMemcpyDeviceToDevice, stream.get()));
}

} // namespace gpu::nn::detail
