/// @file accumulate.hpp
/// @brief Adding gradients into the FP32 gradient buffer: element by element from an FP32, FP16
/// or BF16 gradient (cuDNN's backward filter and bias write theirs in the data type), the same
/// unless a device flag says skip (a step the grad scaler skipped), and as the column sums of a
/// row-major matrix (the bias gradient of a batch).
///
/// @code
/// // a convolution's FP16 dw (from cuDNN) into the FP32 gradient of its weight
/// gpu::nn::accumulate(dw16.data(), gpu::element_type::fp16, store.view("conv1.weight").gradient,
///                     count, stream);
/// // db += Σ over the batch of dY (rows x cols, row-major)
/// gpu::nn::accumulate_column_sums(dy, gpu::element_type::fp16, rows, cols, db, stream);
/// @endcode
///
/// All are stream-ordered kernels (capturable) that sum in FP32 in a fixed order: the results
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
void accumulate(const void* from, element_type from_type, float* to, std::size_t count,
                stream_ref stream);

/// @brief `to[i] += from[i]` as `accumulate` does, unless `*skip` is not 0 on the device when the
/// kernel runs: the flag is read there, not on the host, so a captured step adds or skips at
/// each replay. For the grad scaler's found-Inf flag (`grad_scaler::found_inf_flag`): the loss of
/// a step that the scaler skipped is left out of a running sum, with no synchronisation.
/// @code
/// optimizer.step(params, grads, scaler, s);   // sets the flag when the gradients hold Inf/NaN
/// gpu::nn::accumulate_unless(scaler.found_inf_flag(), loss.data(), gpu::element_type::fp32,
///                            loss_sum.data(), 1, s);
/// @endcode
/// @throws std::invalid_argument as `accumulate`, or when @p skip is null
/// @throws gpu::cuda_error when the kernel cannot run
void accumulate_unless(const float* skip, const void* from, element_type from_type, float* to,
                       std::size_t count, stream_ref stream);

/// @brief `to[j] += Σᵢ from[i·cols + j]` for the @p rows x @p cols row-major matrix @p from of
/// type @p from_type, on @p stream: the bias gradient of a batch of output gradients.
/// @throws std::invalid_argument as `accumulate`, or when rows·cols overflows
/// @throws gpu::cuda_error when the kernel cannot run
void accumulate_column_sums(const void* from, element_type from_type, std::size_t rows,
                            std::size_t cols, float* to, stream_ref stream);

} // namespace gpu::nn
