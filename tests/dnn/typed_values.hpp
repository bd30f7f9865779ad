// Element types of the dnn tests (convolutions, and the typed operations through
// typed_tensor.hpp): the data_type of a C++ element type, a quiet NaN to poison outputs with, the
// tolerance of each type, the relative error of a result, and device buffers filled from (and
// read back into) float64 references in a layout's order. The conversions themselves are
// element_cast.hpp's. Test code only; the device helpers need a GPU.
#pragma once

#include "reference_convolution.hpp"

#include <element_cast.hpp>
#include <test_support.hpp>

#include <gpu/dnn/types.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <limits>
#include <span>
#include <type_traits>
#include <vector>

namespace gpu::test {

/// The data_type of @p T: float, __half or __nv_bfloat16.
template <class T>
constexpr dnn::data_type type_of()
{
    if constexpr (std::is_same_v<T, float>) {
        return dnn::data_type::fp32;
    } else if constexpr (std::is_same_v<T, __half>) {
        return dnn::data_type::fp16;
    } else {
        return dnn::data_type::bf16;
    }
}

/// A quiet NaN of @p T.
template <class T>
T quiet_nan()
{
    if constexpr (std::is_same_v<T, float>) {
        return std::numeric_limits<float>::quiet_NaN();
    } else if constexpr (std::is_same_v<T, __half>) {
        __half_raw raw;
        raw.x = 0x7E00;
        return __half(raw);
    } else {
        __nv_bfloat16_raw raw;
        raw.x = 0x7FC0;
        return __nv_bfloat16(raw);
    }
}

/// DESIGN.md's relative error bounds: fp32 1e-5, tf32 1e-3, fp16/bf16 1e-2.
inline double tolerance(dnn::data_type type, bool tf32)
{
    if (type != dnn::data_type::fp32) {
        return 1e-2;
    }
    return tf32 ? 1e-3 : 1e-5;
}

/// The tolerance of @p T without TF32: 1e-5 for fp32, 1e-2 for fp16/bf16.
template <class T>
double tolerance_of()
{
    return tolerance(type_of<T>(), false);
}

/// ‖out − ref‖ / ‖ref‖ of two vectors of doubles (`relative_error`).
inline double error_of(const std::vector<double>& out, const std::vector<double>& ref)
{
    return relative_error(std::span<const double>(out), std::span<const double>(ref));
}

/// Copies @p values (logical order, float or double, rounded to T) into @p buffer in @p layout's
/// order and returns what the device holds, as doubles in logical order: the reference sees
/// exactly the GPU's inputs.
template <class T, class From>
std::vector<double> upload_rounded(device_buffer<T>& buffer, const std::vector<From>& values,
                                   const std::vector<int>& dims, dnn::tensor_layout layout)
{
    const std::vector<T> typed = narrowed<T>(values);
    buffer.copy_from_host(to_storage(typed, dims, layout));
    return widened(typed);
}

/// @p buffer (in @p layout's order) as doubles in logical order, after @p stream's work.
template <class T>
std::vector<double> download(const device_buffer<T>& buffer, const std::vector<int>& dims,
                             dnn::tensor_layout layout, stream_ref stream)
{
    stream.synchronize();
    return widened(from_storage(buffer.to_host(), dims, layout));
}

/// Fills @p buffer with NaN, so that an element a pass leaves unwritten fails the comparison.
template <class T>
void poison(device_buffer<T>& buffer)
{
    buffer.copy_from_host(std::vector<T>(buffer.size(), quiet_nan<T>()));
}

} // namespace gpu::test
