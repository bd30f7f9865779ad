// Fuzzes the shape rules of a convolution (include/gpu/dnn/convolution_descriptor.hpp and
// convolution_problem in convolution.hpp): any dims, padding, stride, dilation, groups, mode,
// type, layout and epilogue, with ranks and list lengths that do not always match.
//
// A problem is accepted exactly when a 128-bit reference of the documented rules says so; an
// accepted problem's output dims are positive, equal the reference, and are what cuDNN's
// cudnnGetConvolutionNdForwardOutputDim answers for descriptors built from it. A refused
// problem whose descriptors can still be built is refused by convolution_descriptor::output_dims
// too, with std::invalid_argument: cuDNN (which answers BAD_PARAM without the value, or a wrong
// size when its int arithmetic wraps) is never asked. Any other exception is a finding.
#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>

#include "dnn_values.hpp"
#include "fuzz_support.hpp"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

namespace dnn = gpu::dnn;
using wide = __int128;

bool named(const dnn::convolution_problem& p)
{
    const auto within = [](auto value, int count) {
        return static_cast<int>(value) >= 0 && static_cast<int>(value) < count;
    };
    return within(p.geometry.mode, 2) && within(p.type, 3) && within(p.layout, 2) &&
           within(p.epilogue, 3);
}

// The documented shape rules (validate_convolution), written out again in 128 bits: the output
// dims when the shapes make a convolution cuDNN can describe, empty otherwise.
std::optional<std::vector<int>> reference(const dnn::convolution_problem& p)
{
    const dnn::convolution_geometry& g = p.geometry;
    const std::size_t spatial = g.padding.size();
    if (spatial < 1 || spatial > 6 || g.stride.size() != spatial || g.dilation.size() != spatial ||
        p.input.size() != spatial + 2 || p.filter.size() != spatial + 2 || g.groups < 1 ||
        static_cast<int>(g.mode) < 0 || static_cast<int>(g.mode) > 1) {
        return std::nullopt;
    }
    for (std::size_t i = 0; i < spatial; ++i) {
        if (g.padding[i] < 0 || g.stride[i] < 1 || g.dilation[i] < 1) {
            return std::nullopt;
        }
    }
    if (fuzz::dnn::int_product(p.input) < 0 || fuzz::dnn::int_product(p.filter) < 0 ||
        p.input[1] % g.groups != 0 || p.filter[0] % g.groups != 0 ||
        static_cast<wide>(p.filter[1]) * g.groups != p.input[1]) {
        return std::nullopt;
    }
    std::vector<int> output{p.input[0], p.filter[0]};
    for (std::size_t i = 0; i < spatial; ++i) {
        const wide padded = static_cast<wide>(p.input[i + 2]) + static_cast<wide>(2) * g.padding[i];
        const wide span = static_cast<wide>(g.dilation[i]) * (p.filter[i + 2] - 1) + 1;
        if (padded > INT_MAX || span > padded) {
            return std::nullopt;
        }
        output.push_back(static_cast<int>((padded - span) / g.stride[i] + 1));
    }
    if (fuzz::dnn::int_product(output) < 0) {
        return std::nullopt;
    }
    return output;
}

dnn::convolution_problem take_problem(fuzz::input& in)
{
    // Rank 1 to 7 spatial dimensions (7 is one too many); the flags make the lengths disagree.
    const auto spatial = static_cast<std::size_t>(1 + in.take<std::uint8_t>() % 7);
    const auto flags = in.take<std::uint8_t>();
    const bool mismatched = (flags & 0xF0) == 0xF0;
    dnn::convolution_problem p;
    p.input = fuzz::dnn::take_ints(in, spatial + 2 - (mismatched && (flags & 1) != 0 ? 1 : 0));
    p.filter = fuzz::dnn::take_ints(in, spatial + 2 + (mismatched && (flags & 2) != 0 ? 1 : 0));
    p.geometry.padding = fuzz::dnn::take_ints(in, spatial);
    p.geometry.stride =
        fuzz::dnn::take_ints(in, spatial + (mismatched && (flags & 4) != 0 ? 1 : 0));
    p.geometry.dilation = fuzz::dnn::take_ints(in, spatial);
    p.geometry.groups = fuzz::dnn::take_int(in);
    p.geometry.mode = fuzz::dnn::take_enum<dnn::convolution_mode>(in, 2);
    p.type = fuzz::dnn::take_enum<dnn::data_type>(in, 3);
    p.layout = fuzz::dnn::take_enum<dnn::tensor_layout>(in, 2);
    p.epilogue = fuzz::dnn::take_enum<dnn::convolution_epilogue>(in, 3);
    return p;
}

// An accepted problem: its descriptors build, cuDNN answers the same output dims, and the
// problem's own accessors agree.
void check_accepted(const dnn::convolution_problem& p, const std::vector<int>& output,
                    dnn::math_type math)
{
    const std::string text = p.to_string();
    fuzz::require(fuzz::accepted([&] { fuzz::require(p.output() == output, "output() differs"); },
                                 "convolution_problem::output"),
                  [&] { return "output() refused the accepted " + text; });
    fuzz::require(p.output_elements() == static_cast<std::size_t>(fuzz::dnn::int_product(output)) &&
                      p.input_elements() ==
                          static_cast<std::size_t>(fuzz::dnn::int_product(p.input)) &&
                      p.flops() >= 0 && p.minimum_bytes() > 0,
                  [&] { return "element counts of " + text + " are wrong"; });
    const bool built = fuzz::accepted(
        [&] {
            const dnn::tensor_descriptor x(p.input, p.type, p.layout);
            const dnn::filter_descriptor w(p.filter, p.type, p.layout);
            const dnn::tensor_descriptor y(output, p.type, p.layout);
            const dnn::convolution_descriptor conv(p.geometry, dnn::data_type::fp32, math);
            fuzz::require(conv.output_dims(x, w) == output,
                          [&] { return "cuDNN's output dims differ from the host's for " + text; });
            fuzz::require(y.size_bytes() == p.output_elements() * dnn::element_size(p.type),
                          [&] { return "the output descriptor's bytes are wrong for " + text; });
        },
        "building the descriptors of an accepted problem");
    fuzz::require(built,
                  [&] { return "a descriptor or output_dims refused the accepted " + text; });
}

// A refused problem: when its descriptors can be built, output_dims refuses it on the host.
void check_refused(const dnn::convolution_problem& p, dnn::math_type math)
{
    std::optional<dnn::tensor_descriptor> x;
    std::optional<dnn::filter_descriptor> w;
    std::optional<dnn::convolution_descriptor> conv;
    if (!fuzz::accepted([&] { x.emplace(p.input, p.type, p.layout); }, "tensor_descriptor") ||
        !fuzz::accepted([&] { w.emplace(p.filter, p.type, p.layout); }, "filter_descriptor") ||
        !fuzz::accepted([&] { conv.emplace(p.geometry, dnn::data_type::fp32, math); },
                        "convolution_descriptor")) {
        return;
    }
    std::vector<int> answer;
    const bool answered = fuzz::accepted([&] { answer = conv->output_dims(*x, *w); },
                                         "convolution_descriptor::output_dims");
    fuzz::require(!answered, [&] {
        return "output_dims answered " + dnn::to_string(answer) + " for the refused " +
               p.to_string();
    });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzz::input in(data, size);
    const dnn::convolution_problem p = take_problem(in);
    const auto math = fuzz::dnn::take_enum<dnn::math_type>(in, 4);
    const std::optional<std::vector<int>> expected = reference(p);

    std::vector<int> output;
    const bool ok = fuzz::accepted(
        [&] { output = dnn::convolution_output_dims(p.input, p.filter, p.geometry); },
        "convolution_output_dims");
    fuzz::require(ok == expected.has_value() && (!ok || output == *expected), [&] {
        return "convolution_output_dims " +
               (ok ? "answered " + dnn::to_string(output) : "refused") + " where the reference " +
               (expected ? "answers " + dnn::to_string(*expected) : "refuses") + ": " +
               p.to_string();
    });
    const bool valid = fuzz::accepted([&] { p.validate(); }, "convolution_problem::validate");
    fuzz::require(valid == (ok && named(p)), [&] {
        return std::string(valid ? "accepted" : "refused") + " the problem " + p.to_string();
    });
    if (static_cast<int>(math) < 0 || static_cast<int>(math) > 3) {
        fuzz::require(
            !fuzz::accepted([&] { dnn::convolution_descriptor c({}, dnn::data_type::fp32, math); },
                            "convolution_descriptor"),
            "a convolution descriptor took a math type cudagap does not name");
        return 0;
    }
    if (!ok) {
        check_refused(p, math);
        return 0;
    }
    for (const int d : output) {
        fuzz::require(d > 0, [&] { return "a non-positive output dim for " + p.to_string(); });
    }
    if (valid) {
        check_accepted(p, output, math);
    }
    return 0;
}
