// gpu/element_type.hpp: the one table of the element types, and the mappings of the other
// precision enums onto it (gpu::preferred_precision here; gpu::dnn::data_type in tests/dnn).
#include <gpu/element_type.hpp>
#include <gpu/profile.hpp>

#include "catch.hpp"

#include <cctype>
#include <cstddef>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>

using Catch::Matchers::ContainsSubstring;
using gpu::element_type;
using gpu::preferred_precision;

namespace {
constexpr element_type every_element_type[] = {element_type::fp32, element_type::fp64,
                                               element_type::fp16, element_type::bf16};
constexpr preferred_precision every_preferred_precision[] = {
    preferred_precision::fp32, preferred_precision::fp16, preferred_precision::bf16};

std::string lower_case(std::string_view text)
{
    std::string lower(text);
    for (char& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return lower;
}
} // namespace

TEST_CASE("the table holds every element type once, in the enumeration's order", "[precision]")
{
    STATIC_REQUIRE(std::size(gpu::detail::element_types) == std::size(every_element_type));
    std::set<std::string_view> names;
    std::set<std::string_view> enumerator_names;
    for (std::size_t i = 0; i < std::size(gpu::detail::element_types); ++i) {
        const gpu::detail::element_type_facts& row = gpu::detail::element_types[i];
        CHECK(static_cast<std::size_t>(row.value) == i);
        CHECK(gpu::detail::facts_of(row.value) == &row);
        CHECK(lower_case(row.name) == row.enumerator_name);
        names.insert(row.name);
        enumerator_names.insert(row.enumerator_name);
    }
    CHECK(names.size() == std::size(every_element_type));
    CHECK(enumerator_names.size() == std::size(every_element_type));
    STATIC_REQUIRE(gpu::element_size(element_type::fp32) == sizeof(float));
    STATIC_REQUIRE(gpu::element_size(element_type::fp64) == sizeof(double));
    CHECK(gpu::detail::facts_of(static_cast<element_type>(9)) == nullptr);
}

TEST_CASE("enumerator names are the enumerators' spellings", "[precision]")
{
    STATIC_REQUIRE(gpu::enumerator_name(element_type::fp32) == "fp32");
    STATIC_REQUIRE(gpu::enumerator_name(element_type::fp64) == "fp64");
    STATIC_REQUIRE(gpu::enumerator_name(element_type::fp16) == "fp16");
    STATIC_REQUIRE(gpu::enumerator_name(element_type::bf16) == "bf16");
    CHECK(gpu::enumerator_name(static_cast<element_type>(9)) == "unknown");
    // The table's richer rows serve the name table functions as they are.
    CHECK(gpu::detail::value_of(gpu::detail::element_types, "BF16") == element_type::bf16);
    CHECK_FALSE(gpu::detail::value_of(gpu::detail::element_types, "bf16").has_value());
    CHECK(gpu::detail::is_named(gpu::detail::element_types, element_type::fp64));
    CHECK_FALSE(gpu::detail::is_named(gpu::detail::element_types, static_cast<element_type>(9)));
}

TEST_CASE("every preferred precision round-trips through its element type", "[precision]")
{
    for (const preferred_precision precision : every_preferred_precision) {
        const element_type type = gpu::to_element_type(precision);
        CHECK(gpu::to_preferred_precision(type) == precision);
        CHECK(gpu::to_string(precision) == gpu::enumerator_name(type));
    }
    CHECK(gpu::to_element_type(preferred_precision::fp16) == element_type::fp16);
    CHECK(gpu::to_element_type(preferred_precision::bf16) == element_type::bf16);
    STATIC_REQUIRE(gpu::to_string(preferred_precision::fp32) == "fp32");
}

TEST_CASE("every element type is a preferred precision or refused by name", "[precision]")
{
    for (const element_type type : every_element_type) {
        if (type == element_type::fp64) {
            CHECK_THROWS_WITH(gpu::to_preferred_precision(type),
                              "gpu::to_preferred_precision: FP64 is not a preferred_precision; "
                              "FP32, FP16 or BF16 are");
        } else {
            CHECK(gpu::to_element_type(gpu::to_preferred_precision(type)) == type);
        }
    }
    CHECK_THROWS_WITH(gpu::to_preferred_precision(static_cast<element_type>(9)),
                      "gpu::to_preferred_precision: element_type value 9 is none of FP32, FP64, "
                      "FP16 or BF16");
}

TEST_CASE("a preferred precision outside the enumeration is refused", "[precision]")
{
    const auto unnamed = static_cast<preferred_precision>(5);
    CHECK(gpu::to_string(unnamed) == "unknown");
    CHECK_THROWS_AS(gpu::to_element_type(unnamed), std::invalid_argument);
    CHECK_THROWS_WITH(gpu::to_element_type(unnamed),
                      ContainsSubstring("gpu::to_element_type: preferred_precision value 5 is "
                                        "none of the enumerators cudagap names"));
}

namespace {
enum class single_precision { only };
constexpr gpu::detail::element_type_mapping<single_precision> single_precisions[] = {
    {single_precision::only, element_type::fp32}};
} // namespace

TEST_CASE("a mapping table names its rows after their element types", "[precision]")
{
    STATIC_REQUIRE(gpu::detail::name_of(single_precisions, single_precision::only) == "fp32");
    STATIC_REQUIRE(gpu::detail::mapped_value(single_precisions, element_type::fp32) ==
                   single_precision::only);
    STATIC_REQUIRE_FALSE(gpu::detail::mapped_value(single_precisions, element_type::fp16));
    STATIC_REQUIRE_FALSE(
        gpu::detail::mapped_element_type(single_precisions, static_cast<single_precision>(1)));
    CHECK_THROWS_WITH(gpu::detail::from_element_type(single_precisions, element_type::bf16, "f",
                                                     "single_precision"),
                      "f: BF16 is not a single_precision; FP32 is");
}
