// The refusal of a value that an enum's name table does not hold (gpu/detail/enum_names.hpp).
#include <gpu/detail/enum_names.hpp>

#include <stdexcept>
#include <string>

namespace gpu::detail {

void throw_unnamed_enumerator(std::string_view function, std::string_view enum_type, int value)
{
    throw std::invalid_argument(std::string(function) + ": " + std::string(enum_type) + " value " +
                                std::to_string(value) +
                                " is none of the enumerators cudagap names (an integer cast to "
                                "the enum?)");
}

} // namespace gpu::detail
