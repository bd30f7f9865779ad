// The float64 CPU reference of the convolution tests: a direct convolution over logical NCHW
// data (groups, stride, padding, dilation, both modes), its adjoints (the backward passes) and
// central finite differences of it, and conversions between the logical order and a layout's
// memory order. Test code only.
#pragma once

#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>

#include <cstddef>
#include <stdexcept>
#include <vector>

namespace gpu::test {

/// The number of elements of a tensor of @p dims.
inline std::size_t element_count(const std::vector<int>& dims)
{
    std::size_t count = 1;
    for (const int d : dims) {
        count *= static_cast<std::size_t>(d);
    }
    return count;
}

/// Offset in memory of each element, in logical (N, C, spatial...) order, for a packed tensor
/// of @p dims in @p layout.
inline std::vector<std::size_t> storage_offsets(const std::vector<int>& dims,
                                                dnn::tensor_layout layout)
{
    const std::vector<int> strides = dnn::packed_strides(dims, layout);
    const std::size_t count = element_count(dims);
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

/// Calls @p visit(x_index, w_index, y_index) once for every multiply-add of a direct 2-d
/// convolution: x is N×C×H×W, w is K×(C/groups)×R×S, y is N×K×P×Q, all logical. Taps that fall
/// into the padding are skipped; the filter is flipped when the geometry says convolution. The
/// forward sums x·w into y; its adjoints sum dy·w into dx and x·dy into dw over the same taps.
template <class Visit>
void for_each_tap(const std::vector<int>& in, const std::vector<int>& filter,
                  const dnn::convolution_geometry& g, Visit&& visit)
{
    if (in.size() != 4 || filter.size() != 4) {
        throw std::invalid_argument("reference_convolution: 2-d convolutions only");
    }
    const std::vector<int> out = dnn::convolution_output_dims(in, filter, g);
    const std::size_t c_ = in[1], h_ = in[2], w_ = in[3];
    const std::size_t k_ = filter[0], cg = filter[1], r_ = filter[2], s_ = filter[3];
    const std::size_t p_ = out[2], q_ = out[3];
    const std::size_t kg = k_ / static_cast<std::size_t>(g.groups);
    const bool flip = g.mode == dnn::convolution_mode::convolution;
    for (std::size_t n = 0; n < static_cast<std::size_t>(in[0]); ++n) {
        for (std::size_t k = 0; k < k_; ++k) {
            const std::size_t first_channel = k / kg * cg;
            for (std::size_t p = 0; p < p_; ++p) {
                for (std::size_t q = 0; q < q_; ++q) {
                    const std::size_t y_index = ((n * k_ + k) * p_ + p) * q_ + q;
                    for (std::size_t c = 0; c < cg; ++c) {
                        for (std::size_t r = 0; r < r_; ++r) {
                            const long ih = static_cast<long>(p) * g.stride[0] - g.padding[0] +
                                            static_cast<long>(r) * g.dilation[0];
                            if (ih < 0 || ih >= static_cast<long>(h_)) {
                                continue;
                            }
                            for (std::size_t s = 0; s < s_; ++s) {
                                const long iw = static_cast<long>(q) * g.stride[1] - g.padding[1] +
                                                static_cast<long>(s) * g.dilation[1];
                                if (iw < 0 || iw >= static_cast<long>(w_)) {
                                    continue;
                                }
                                const std::size_t fr = flip ? r_ - 1 - r : r;
                                const std::size_t fs = flip ? s_ - 1 - s : s;
                                visit(((n * c_ + first_channel + c) * h_ +
                                       static_cast<std::size_t>(ih)) *
                                              w_ +
                                          static_cast<std::size_t>(iw),
                                      ((k * cg + c) * r_ + fr) * s_ + fs, y_index);
                            }
                        }
                    }
                }
            }
        }
    }
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
    std::vector<double> y(element_count(dnn::convolution_output_dims(in, filter, g)), 0.0);
    for_each_tap(in, filter, g,
                 [&](std::size_t xi, std::size_t wi, std::size_t yi) { y[yi] += x[xi] * w[wi]; });
    return y;
}

/// The gradient of the input in float64: dx = the adjoint of `reference_convolution` in x,
/// applied to dy (N×K×P×Q, logical). The result is N×C×H×W, logical.
inline std::vector<double> reference_backward_data(const std::vector<double>& w,
                                                   const std::vector<int>& filter,
                                                   const std::vector<double>& dy,
                                                   const std::vector<int>& in,
                                                   const dnn::convolution_geometry& g)
{
    std::vector<double> dx(element_count(in), 0.0);
    for_each_tap(in, filter, g,
                 [&](std::size_t xi, std::size_t wi, std::size_t yi) { dx[xi] += dy[yi] * w[wi]; });
    return dx;
}

/// The gradient of the filter in float64: dw = the adjoint of `reference_convolution` in w,
/// applied to dy. The result is K×(C/groups)×R×S, logical.
inline std::vector<double> reference_backward_filter(const std::vector<double>& x,
                                                     const std::vector<int>& in,
                                                     const std::vector<double>& dy,
                                                     const std::vector<int>& filter,
                                                     const dnn::convolution_geometry& g)
{
    std::vector<double> dw(element_count(filter), 0.0);
    for_each_tap(in, filter, g,
                 [&](std::size_t xi, std::size_t wi, std::size_t yi) { dw[wi] += x[xi] * dy[yi]; });
    return dw;
}

/// The gradient of a per-channel bias in float64: dy (N×K×spatial, logical) summed over
/// everything but K.
inline std::vector<double> reference_backward_bias(const std::vector<double>& dy,
                                                   const std::vector<int>& out)
{
    std::vector<double> db(static_cast<std::size_t>(out.at(1)), 0.0);
    const std::size_t plane = element_count(out) / (static_cast<std::size_t>(out[0]) * db.size());
    for (std::size_t i = 0; i < dy.size(); ++i) {
        db[(i / plane) % db.size()] += dy[i];
    }
    return db;
}

/// The inner product of two vectors in float64.
inline double dot(const std::vector<double>& a, const std::vector<double>& b)
{
    if (a.size() != b.size()) {
        throw std::invalid_argument("dot: sizes differ");
    }
    double sum = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        sum += a[i] * b[i];
    }
    return sum;
}

/// The derivative of L(x) = <conv(x, w), dy> in x[i] by central finite differences of
/// `reference_convolution` with step @p h: what dx[i] must be.
inline double central_difference_input(std::vector<double> x, const std::vector<int>& in,
                                       const std::vector<double>& w, const std::vector<int>& filter,
                                       const std::vector<double>& dy,
                                       const dnn::convolution_geometry& g, std::size_t i, double h)
{
    const double saved = x.at(i);
    x[i] = saved + h;
    const double plus = dot(reference_convolution(x, in, w, filter, g), dy);
    x[i] = saved - h;
    const double minus = dot(reference_convolution(x, in, w, filter, g), dy);
    return (plus - minus) / (2.0 * h);
}

/// The derivative of L(w) = <conv(x, w), dy> in w[i] by central finite differences: what dw[i]
/// must be.
inline double central_difference_filter(const std::vector<double>& x, const std::vector<int>& in,
                                        std::vector<double> w, const std::vector<int>& filter,
                                        const std::vector<double>& dy,
                                        const dnn::convolution_geometry& g, std::size_t i, double h)
{
    const double saved = w.at(i);
    w[i] = saved + h;
    const double plus = dot(reference_convolution(x, in, w, filter, g), dy);
    w[i] = saved - h;
    const double minus = dot(reference_convolution(x, in, w, filter, g), dy);
    return (plus - minus) / (2.0 * h);
}

} // namespace gpu::test
