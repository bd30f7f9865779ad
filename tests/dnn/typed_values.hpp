// Element types of the convolution tests: the data_type of a C++ element type, conversions
// from float and to double, a quiet NaN to poison outputs with, the tolerance of each type, and
// device buffers filled from (and read back into) float64 references in a layout's order. Test
// code only; the device helpers need a GPU.
#pragma once

#include "reference_convolution.hpp"

#include <gpu/dnn/types.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <limits>
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

/// @p v rounded to @p T.
template <class T>
T from_float(float v)
{
    if constexpr (std::is_same_v<T, float>) {
        return v;
    } else if constexpr (std::is_same_v<T, __half>) {
        return __float2half(v);
    } else {
        return __float2bfloat16(v);
    }
}

inline double to_double(float v) { return v; }
inline double to_double(__half v) { return static_cast<double>(__half2float(v)); }
inline double to_double(__nv_bfloat16 v) { return static_cast<double>(__bfloat162float(v)); }

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

/// Copies @p values (logical order, rounded to T) into @p buffer in @p layout's order and
/// returns what the device holds, as doubles in logical order: the reference sees exactly the
/// GPU's inputs.
template <class T>
std::vector<double> upload_rounded(device_buffer<T>& buffer, const std::vector<float>& values,
                                   const std::vector<int>& dims, dnn::tensor_layout layout)
{
    std::vector<T> typed(values.size());
    std::vector<double> reference(values.size());
    for (std::size_t i = 0; i < values.size(); ++i) {
        typed[i] = from_float<T>(values[i]);
        reference[i] = to_double(typed[i]);
    }
    buffer.copy_from_host(to_storage(typed, dims, layout));
    return reference;
}

/// @p buffer (in @p layout's order) as doubles in logical order, after @p stream's work.
template <class T>
std::vector<double> download(const device_buffer<T>& buffer, const std::vector<int>& dims,
                             dnn::tensor_layout layout, stream_ref stream)
{
    stream.synchronize();
    const std::vector<T> logical = from_storage(buffer.to_host(), dims, layout);
    std::vector<double> values(logical.size());
    for (std::size_t i = 0; i < logical.size(); ++i) {
        values[i] = to_double(logical[i]);
    }
    return values;
}

/// Fills @p buffer with NaN, so that an element a pass leaves unwritten fails the comparison.
template <class T>
void poison(device_buffer<T>& buffer)
{
    buffer.copy_from_host(std::vector<T>(buffer.size(), quiet_nan<T>()));
}

} // namespace gpu::test
