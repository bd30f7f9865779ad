// Fuzzes the cuDNN wrapper's descriptor factories and packed strides (tensor_descriptor.hpp,
// filter_descriptor.hpp, activation_descriptor.hpp, convolution_descriptor.hpp): any rank, dims,
// layout, type, mode and coefficient, and descriptors adopted from raw cuDNN calls with any
// strides.
//
// packed_strides and every factory either refuse with std::invalid_argument or agree with a
// 128-bit reference, and a descriptor reads back exactly what it was given, twice (a 2-d NHWC
// tensor once came back with an uninitialised stride, different from run to run). An adopted
// descriptor's getters never overflow; element_count() may refuse with std::domain_error.
// Any other exception is a finding.
#include <gpu/dnn/activation_descriptor.hpp>
#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>

#include "dnn_values.hpp"
#include "fuzz_support.hpp"

#include <cudnn.h>

#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace dnn = gpu::dnn;
using wide = __int128;

bool named(dnn::data_type type)
{
    return static_cast<int>(type) >= 0 && static_cast<int>(type) < 3;
}
bool named(dnn::tensor_layout layout)
{
    return static_cast<int>(layout) >= 0 && static_cast<int>(layout) < 2;
}

std::string text(const std::vector<int>& dims, dnn::tensor_layout layout)
{
    return dnn::to_string(dims) + " " + std::string(dnn::to_string(layout));
}

// Packed strides in 128 bits, innermost first; empty when a dim is not positive or a stride
// passes INT_MAX.
std::optional<std::vector<int>> reference_strides(const std::vector<int>& dims,
                                                  dnn::tensor_layout layout)
{
    std::vector<std::size_t> order;
    const bool last = layout == dnn::tensor_layout::nhwc;
    if (last) {
        order.push_back(1);
    }
    for (std::size_t i = dims.size() - 1; i >= 2; --i) {
        order.push_back(i);
    }
    if (!last) {
        order.push_back(1);
    }
    order.push_back(0);
    std::vector<int> strides(dims.size());
    wide stride = 1;
    for (const std::size_t i : order) {
        if (dims[i] <= 0 || stride > INT_MAX) {
            return std::nullopt;
        }
        strides[i] = static_cast<int>(stride);
        stride *= dims[i];
    }
    return strides;
}

void check_packed_strides(const std::vector<int>& dims, dnn::tensor_layout layout)
{
    std::vector<int> strides;
    const bool ok =
        fuzz::accepted([&] { strides = dnn::packed_strides(dims, layout); }, "packed_strides");
    const std::optional<std::vector<int>> expected =
        dims.size() >= 2 && named(layout) ? reference_strides(dims, layout) : std::nullopt;
    fuzz::require(ok == expected.has_value() && (!ok || strides == *expected), [&] {
        return "packed_strides of " + text(dims, layout) +
               (ok ? " answered " + dnn::to_string(strides) : " refused");
    });
}

// Builds a tensor or filter descriptor, which must succeed exactly when the reference says
// the dims (3 to 8, positive, at most INT_MAX elements), type and layout are valid.
template <class Descriptor>
std::optional<Descriptor> build(const char* what, const std::vector<int>& dims, dnn::data_type type,
                                dnn::tensor_layout layout)
{
    const bool valid = dims.size() >= 3 && dims.size() <= 8 && fuzz::dnn::int_product(dims) > 0 &&
                       named(type) && named(layout);
    std::optional<Descriptor> made;
    const bool ok = fuzz::accepted([&] { made.emplace(dims, type, layout); }, what);
    fuzz::require(ok == valid, [&] {
        return std::string(ok ? "accepted " : "refused ") + what + " " + text(dims, layout);
    });
    return made;
}

void check_tensor(const std::vector<int>& dims, dnn::data_type type, dnn::tensor_layout layout)
{
    const std::optional<dnn::tensor_descriptor> t =
        build<dnn::tensor_descriptor>("tensor_descriptor", dims, type, layout);
    if (!t) {
        return;
    }
    const auto count = static_cast<std::size_t>(fuzz::dnn::int_product(dims));
    const std::vector<int> strides = dnn::packed_strides(dims, layout);
    for (int pass = 0; pass < 2; ++pass) {
        fuzz::require(
            t->dims() == dims && t->strides() == strides && t->type() == type &&
                t->rank() == static_cast<int>(dims.size()) && t->element_count() == count &&
                t->size_bytes() == count * dnn::element_size(type),
            [&] { return "the tensor " + text(dims, layout) + " reads back " + t->to_string(); });
        const std::optional<dnn::tensor_layout> seen = t->layout();
        fuzz::require(seen && dnn::packed_strides(dims, *seen) == strides,
                      [&] { return "the tensor " + text(dims, layout) + " has no packed layout"; });
    }
}

void check_filter(const std::vector<int>& dims, dnn::data_type type, dnn::tensor_layout layout)
{
    const std::optional<dnn::filter_descriptor> w =
        build<dnn::filter_descriptor>("filter_descriptor", dims, type, layout);
    if (w) {
        const auto count = static_cast<std::size_t>(fuzz::dnn::int_product(dims));
        fuzz::require(
            w->dims() == dims && w->type() == type && w->layout() == layout &&
                w->element_count() == count && w->size_bytes() == count * dnn::element_size(type),
            [&] { return "the filter " + text(dims, layout) + " reads back " + w->to_string(); });
    }
}

void check_activation(fuzz::input& in)
{
    const auto mode = fuzz::dnn::take_enum<dnn::activation_mode>(in, 6);
    const auto bits = in.take<std::uint64_t>();
    double coefficient = 0;
    std::memcpy(&coefficient, &bits, sizeof coefficient);
    const bool propagate = in.take<bool>();
    const bool valid = static_cast<int>(mode) >= 0 && static_cast<int>(mode) < 6 &&
                       std::isfinite(coefficient) &&
                       (mode != dnn::activation_mode::clipped_relu || coefficient > 0);
    std::optional<dnn::activation_descriptor> a;
    const bool ok =
        fuzz::accepted([&] { a.emplace(mode, coefficient, propagate); }, "activation_descriptor");
    fuzz::require(ok == valid,
                  [&] { return (ok ? "accepted" : "refused") + std::string(" an activation"); });
    if (ok) {
        fuzz::require(a->mode() == mode && a->coefficient() == coefficient &&
                          a->propagates_nan() == propagate,
                      [&] { return "the activation reads back " + a->to_string(); });
    }
}

void check_convolution(fuzz::input& in)
{
    const auto spatial = static_cast<std::size_t>(in.take<std::uint8_t>() % 8);
    dnn::convolution_geometry g;
    g.padding = fuzz::dnn::take_ints(in, spatial);
    g.stride = fuzz::dnn::take_ints(in, spatial);
    g.dilation = fuzz::dnn::take_ints(in, spatial);
    g.groups = fuzz::dnn::take_int(in);
    g.mode = fuzz::dnn::take_enum<dnn::convolution_mode>(in, 2);
    const auto compute = fuzz::dnn::take_enum<dnn::data_type>(in, 3);
    const auto math = fuzz::dnn::take_enum<dnn::math_type>(in, 4);
    bool valid = spatial >= 1 && spatial <= 6 && g.groups >= 1 && static_cast<int>(g.mode) >= 0 &&
                 static_cast<int>(g.mode) < 2 &&
                 (compute == dnn::data_type::fp32 || compute == dnn::data_type::fp16) &&
                 static_cast<int>(math) >= 0 && static_cast<int>(math) < 4;
    for (std::size_t i = 0; i < spatial; ++i) {
        valid = valid && g.padding[i] >= 0 && g.stride[i] >= 1 && g.dilation[i] >= 1;
    }
    std::optional<dnn::convolution_descriptor> conv;
    const bool ok =
        fuzz::accepted([&] { conv.emplace(g, compute, math); }, "convolution_descriptor");
    fuzz::require(ok == valid, [&] { return (ok ? "accepted " : "refused ") + g.to_string(); });
    if (ok) {
        fuzz::require(conv->geometry() == g && conv->compute_type() == compute &&
                          conv->math() == math,
                      [&] { return g.to_string() + " reads back " + conv->to_string(); });
    }
}

// A descriptor set by a raw cuDNN call with any dims and strides, then adopted: its getters
// must not overflow on what cuDNN accepted.
void check_adopted(const std::vector<int>& dims, const std::vector<int>& strides)
{
    cudnnTensorDescriptor_t raw = nullptr;
    if (cudnnCreateTensorDescriptor(&raw) != CUDNN_STATUS_SUCCESS) {
        fuzz::finding("cudnnCreateTensorDescriptor failed");
    }
    const dnn::tensor_descriptor t = dnn::tensor_descriptor::from_native_handle(raw);
    if (cudnnSetTensorNdDescriptor(raw, CUDNN_DATA_FLOAT, static_cast<int>(dims.size()),
                                   dims.data(), strides.data()) != CUDNN_STATUS_SUCCESS) {
        return;
    }
    fuzz::require(t.dims() == dims && t.strides() == strides,
                  "an adopted tensor reads back other values");
    static_cast<void>(t.layout());
    static_cast<void>(t.to_string());
    try {
        static_cast<void>(t.element_count());
    } catch (const std::domain_error&) {
        // An adopted descriptor may hold more elements than size_t counts.
    } catch (const std::exception& e) {
        fuzz::finding(std::string("element_count of an adopted tensor threw ") + e.what());
    }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzz::input in(data, size);
    const auto kind = in.take<std::uint8_t>();
    if (kind % 4 == 2) {
        check_activation(in);
        return 0;
    }
    if (kind % 4 == 3) {
        check_convolution(in);
        return 0;
    }
    const auto rank = static_cast<std::size_t>(in.take<std::uint8_t>() % 11);
    const std::vector<int> dims = fuzz::dnn::take_ints(in, rank);
    const auto type = fuzz::dnn::take_enum<dnn::data_type>(in, 3);
    const auto layout = fuzz::dnn::take_enum<dnn::tensor_layout>(in, 2);
    if (kind % 4 == 1) {
        if (rank >= 1 && rank <= 8) {
            check_adopted(dims, fuzz::dnn::take_ints(in, rank));
        }
        return 0;
    }
    check_packed_strides(dims, layout);
    check_tensor(dims, type, layout);
    check_filter(dims, type, layout);
    return 0;
}
