// The float64 CPU reference of the convolution tests: a direct convolution over logical NCHW
// data (groups, stride, padding, dilation, both modes), and conversions between the logical
// order and a layout's memory order. Test code only.
#pragma once

#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace gpu::test {

/// Offset in memory of each element, in logical (N, C, spatial...) order, for a packed tensor
/// of @p dims in @p layout.
inline std::vector<std::size_t> storage_offsets(const std::vector<int>& dims, dnn::tensor_layout layout)
{
    const std::vector<int> strides = dnn::packed_strides(dims, layout);
    std::size_t count = 1;
    for (const int d : dims) {
        count *= static_cast<std::size_t>(d);
    }
    std::vector<std::size_t> offsets(count);
    std::vector<int> index(dims.size(), 0);
    for (std::size_t linear = 0; linear < count; ++linear) {
        std::size_t offset = 0;
        for (std::size_t d = 0; d < dims.size(); ++d) {
            offset += static_cast<std::size_t>(index[d]) * static_cast<std::size_t>(strides[d]);
        }
        offsets[linear] = offset;
        for (std::size_t d = dims.size(); d-- > 0;) { // odometer, last dimension fastest
            if (++index[d] < dims[d]) {
                break;
            }
            index[d] = 0;
        }
    }
    return offsets;
}

/// Logical order to memory order.
template <class T>
std::vector<T> to_storage(const std::vector<T>& logical, const std::vector<int>& dims,
                          dnn::tensor_layout layout)
{
    const std::vector<std::size_t> offsets = storage_offsets(dims, layout);
    std::vector<T> stored(logical.size());
    for (std::size_t i = 0; i < logical.size(); ++i) {
        stored[offsets[i]] = logical[i];
    }
    return stored;
}

/// Memory order to logical order.
template <class T>
std::vector<T> from_storage(const std::vector<T>& stored, const std::vector<int>& dims,
                            dnn::tensor_layout layout)
{
    const std::vector<std::size_t> offsets = storage_offsets(dims, layout);
    std::vector<T> logical(stored.size());
    for (std::size_t i = 0; i < stored.size(); ++i) {
        logical[i] = stored[offsets[i]];
    }
    return logical;
}

/// Direct 2-d convolution in float64: x is N×C×H×W, w is K×(C/groups)×R×S, both logical; the
/// result is N×K×P×Q, logical. Cross-correlation unless the geometry says convolution (then
/// the filter is flipped).
inline std::vector<double> reference_convolution(const std::vector<double>& x,
                                                 const std::vector<int>& in,
                                                 const std::vector<double>& w,
                                                 const std::vector<int>& filter,
                                                 const dnn::convolution_geometry& g)
{
    if (in.size() != 4 || filter.size() != 4) {
        throw std::invalid_argument("reference_convolution: 2-d convolutions only");
    }
    const std::vector<int> out = dnn::convolution_output_dims(in, filter, g);
    const int n_ = in[0], c_ = in[1], h_ = in[2], w_ = in[3];
    const int k_ = filter[0], cg = filter[1], r_ = filter[2], s_ = filter[3];
    const int p_ = out[2], q_ = out[3];
    const int kg = k_ / g.groups;
    const bool flip = g.mode == dnn::convolution_mode::convolution;
    std::vector<double> y(static_cast<std::size_t>(n_) * k_ * p_ * q_, 0.0);
    for (int n = 0; n < n_; ++n) {
        for (int k = 0; k < k_; ++k) {
            const int group = k / kg;
            for (int p = 0; p < p_; ++p) {
                for (int q = 0; q < q_; ++q) {
                    double sum = 0.0;
                    for (int c = 0; c < cg; ++c) {
                        const int channel = group * cg + c;
                        for (int r = 0; r < r_; ++r) {
                            const int ih = p * g.stride[0] - g.padding[0] + r * g.dilation[0];
                            if (ih < 0 || ih >= h_) {
                                continue;
                            }
                            for (int s = 0; s < s_; ++s) {
                                const int iw = q * g.stride[1] - g.padding[1] + s * g.dilation[1];
                                if (iw < 0 || iw >= w_) {
                                    continue;
                                }
                                const int fr = flip ? r_ - 1 - r : r;
                                const int fs = flip ? s_ - 1 - s : s;
                                sum += x[((static_cast<std::size_t>(n) * c_ + channel) * h_ + ih) * w_ + iw] *
                                       w[((static_cast<std::size_t>(k) * cg + c) * r_ + fr) * s_ + fs];
                            }
                        }
                    }
                    y[((static_cast<std::size_t>(n) * k_ + k) * p_ + p) * q_ + q] = sum;
                }
            }
        }
    }
    return y;
}

} // namespace gpu::test
