/// @file accumulate.hpp
/// @brief Adding gradients into the FP32 gradient buffer: element by element from an FP32, FP16
/// or BF16 gradient (cuDNN's backward filter and bias write theirs in the data type), and as the
/// column sums of a row-major matrix (the bias gradient of a batch).
///
/// @code
/// // a convolution's FP16 dw (from cuDNN) into the FP32 gradient of its weight
/// gpu::nn::accumulate(dw16.data(), gpu::element_type::fp16, store.view("conv1.weight").gradient,
///                     count, stream);
/// // db += Σ over the batch of dY (rows x cols, row-major)
/// gpu::nn::accumulate_column_sums(dy, gpu::element_type::fp16, rows, cols, db, stream);
/// @endcode
///
/// Both are stream-ordered kernels (capturable) that sum in FP32 in a fixed order: the results
/// are the same from run to run.
#pragma once

#include <gpu/element_type.hpp>
#include <gpu/stream.hpp>

#include <cstddef>

namespace gpu::nn {

/// @brief `to[i] += from[i]` for @p count elements on @p stream, `from` of type @p from_type
/// (FP32, FP16 or BF16) widened to FP32.
/// @throws std::invalid_argument when @p from_type is FP64 or not a named type, or a pointer is
/// null while @p count is not 0 (values named)
/// @throws gpu::cuda_error when the kernel cannot run
void accumulate(const void* from, element_type from_type, float* to, std::size_t count, stream_ref stream);

/// @brief `to[j] += Σᵢ from[i·cols + j]` for the @p rows x @p cols row-major matrix @p from of
/// type @p from_type, on @p stream: the bias gradient of a batch of output gradients.
/// @throws std::invalid_argument as `accumulate`, or when rows·cols overflows
/// @throws gpu::cuda_error when the kernel cannot run
void accumulate_column_sums(const void* from, element_type from_type, std::size_t rows, std::size_t cols,
                            float* to, stream_ref stream);

} // namespace gpu::nn
