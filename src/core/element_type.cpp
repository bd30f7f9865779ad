// The refusal of the precision mappings (gpu/element_type.hpp), out of line so that the header
// builds no strings.
#include "element_codes.hpp"

#include <gpu/element_type.hpp>

#include <array>
#include <iterator>
#include <stdexcept>
#include <string>

namespace gpu::detail {

// The kernels' launchers take static_cast<int>(type) as their element code.
static_assert(static_cast<int>(element_type::fp32) == kernels::fp32 &&
              static_cast<int>(element_type::fp64) == kernels::fp64 &&
              static_cast<int>(element_type::fp16) == kernels::fp16 &&
              static_cast<int>(element_type::bf16) == kernels::bf16);

namespace {
// `FP32, FP16 or BF16`: the names of @p types, the last after `or`.
std::string either_of(std::span<const element_type> types)
{
    std::string text;
    for (std::size_t i = 0; i < types.size(); ++i) {
        if (i != 0) {
            text += i + 1 == types.size() ? " or " : ", ";
        }
        text += to_string(types[i]);
    }
    return text;
}
} // namespace

void throw_unmapped_element_type(std::string_view function, std::string_view enum_type,
                                 element_type type, std::span<const element_type> accepted)
{
    std::string message = std::string(function) + ": ";
    if (facts_of(type) == nullptr) {
        std::array<element_type, std::size(element_types)> every{};
        for (std::size_t i = 0; i < every.size(); ++i) {
            every[i] = element_types[i].value;
        }
        message += "element_type value " + std::to_string(static_cast<int>(type)) + " is none of " +
                   either_of(every);
    } else {
        message += std::string(to_string(type)) + " is not a " + std::string(enum_type) + "; " +
                   either_of(accepted) + (accepted.size() == 1 ? " is" : " are");
    }
    throw std::invalid_argument(message);
}

} // namespace gpu::detail
