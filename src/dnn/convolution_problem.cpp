// convolution_problem: its checks, the output shape, its element counts, its work and its
// description.
#include "translate.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/dnn/convolution_planning.hpp>

#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace gpu::dnn {

void convolution_problem::validate() const
{
    // The shape rules include the output's: every dimension and element count cuDNN receives
    // as int is checked in 64 bits there.
    (void)output();
}

std::vector<int> convolution_problem::output() const
{
    detail::require_named("gpu::dnn convolution", "data_type", type);
    detail::require_named("gpu::dnn convolution", "tensor_layout", layout);
    detail::require_named("gpu::dnn convolution", "convolution_epilogue", epilogue);
    return convolution_output_dims(input, filter, geometry);
}

std::size_t convolution_problem::input_elements() const
{
    validate();
    return detail::product(input);
}

std::size_t convolution_problem::filter_elements() const
{
    validate();
    return detail::product(filter);
}

std::size_t convolution_problem::output_elements() const
{
    return detail::product(output());
}

double convolution_problem::flops() const
{
    // Each output element is a dot product over C / groups channels and the filter's taps.
    const double taps = static_cast<double>(filter_elements()) / filter.at(0);
    return 2.0 * static_cast<double>(output_elements()) * taps;
}

double convolution_problem::minimum_bytes() const
{
    double elements = static_cast<double>(input_elements() + filter_elements() + output_elements());
    if (epilogue != convolution_epilogue::none) {
        elements += filter.at(0);
    }
    return elements * static_cast<double>(element_size(type));
}

std::string convolution_problem::to_string() const
{
    std::string text = std::string(dnn::to_string(type)) + " " +
                       std::string(dnn::to_string(layout)) + " input " + dnn::to_string(input) +
                       " filter " + dnn::to_string(filter) + ", " + geometry.to_string();
    if (epilogue != convolution_epilogue::none) {
        text += ", epilogue ";
        text += dnn::to_string(epilogue);
    }
    return text;
}

} // namespace gpu::dnn
