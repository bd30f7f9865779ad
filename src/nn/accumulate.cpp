// Gradient accumulation into FP32: argument checks, then the kernels of gradient_kernels.cu.
#include <gpu/detail/expects.hpp>
#include <gpu/error.hpp>
#include <gpu/nn/accumulate.hpp>

#include "gradient_kernels.hpp"

#include <limits>
#include <stdexcept>

namespace gpu::nn {

namespace {

// The kernels' code of a gradient type: FP32, FP16 or BF16 only.
int type_code(element_type type, const char* function)
{
    switch (type) {
    case element_type::fp32: return detail::kernels::fp32;
    case element_type::fp16: return detail::kernels::fp16;
    case element_type::bf16: return detail::kernels::bf16;
    case element_type::fp64: break;
    }
    GPU_EXPECTS(false, std::invalid_argument, function, ": gradients of type ", to_string(type),
                " (", static_cast<int>(type), ") are not accumulated; FP32, FP16 or BF16 are");
    return 0; // not reached
}

void check_pointers(const char* function, const void* from, const float* to, std::size_t count)
{
    GPU_EXPECTS(count == 0 || (from != nullptr && to != nullptr), std::invalid_argument, function,
                ": ", count, " elements with a null ", from == nullptr ? "source" : "target");
    GPU_EXPECTS(count <= static_cast<std::size_t>(std::numeric_limits<long long>::max()),
                std::invalid_argument, function, ": ", count,
                " elements are more than a kernel indexes");
}

} // namespace

void accumulate(const void* from, element_type from_type, float* to, std::size_t count,
                stream_ref stream)
{
    constexpr const char* function = "gpu::nn::accumulate";
    const int code = type_code(from_type, function);
    check_pointers(function, from, to, count);
    if (count == 0) {
        return;
    }
    GPU_CUDA_CHECK(detail::kernels::accumulate(code, from, to, static_cast<long long>(count),
                                               nullptr, stream.get()));
}

void accumulate_unless(const float* skip, const void* from, element_type from_type, float* to,
                       std::size_t count, stream_ref stream)
{
    constexpr const char* function = "gpu::nn::accumulate_unless";
    const int code = type_code(from_type, function);
    GPU_EXPECTS(skip != nullptr, std::invalid_argument, function,
                ": the skip flag is null (use gpu::nn::accumulate to add always)");
    check_pointers(function, from, to, count);
    if (count == 0) {
        return;
    }
    GPU_CUDA_CHECK(detail::kernels::accumulate(code, from, to, static_cast<long long>(count), skip,
                                               stream.get()));
}

void accumulate_column_sums(const void* from, element_type from_type, std::size_t rows,
                            std::size_t cols, float* to, stream_ref stream)
{
    constexpr const char* function = "gpu::nn::accumulate_column_sums";
    const int code = type_code(from_type, function);
    GPU_EXPECTS(cols == 0 || rows <= std::numeric_limits<std::size_t>::max() / cols,
                std::invalid_argument, function, ": ", rows, " x ", cols, " elements overflow");
    check_pointers(function, from, to, rows * cols);
    if (rows == 0 || cols == 0) {
        return; // an empty batch adds nothing
    }
    GPU_CUDA_CHECK(detail::kernels::accumulate_column_sums(
        code, from, static_cast<long long>(rows), static_cast<long long>(cols), to, stream.get()));
}

} // namespace gpu::nn
