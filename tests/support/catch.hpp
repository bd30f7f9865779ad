// Catch2 for cudagap's tests, v3 or v2: whichever tests/CMakeLists.txt found, which says so in
// CUDAGAP_CATCH2_MAJOR. Test files include this header, never Catch2's own, and are written in
// v3's spelling; the few v3 names that v2 lacks are provided for v2 here. When v2 support goes,
// only this header changes.
#pragma once

#if !defined(CUDAGAP_CATCH2_MAJOR)
#error                                                                                             \
    "CUDAGAP_CATCH2_MAJOR is not defined: link the target cudagap_test_support (tests/CMakeLists.txt)"
#elif CUDAGAP_CATCH2_MAJOR == 3

#include <catch2/catch_approx.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/catch_version_macros.hpp>
#include <catch2/generators/catch_generators.hpp>
#include <catch2/generators/catch_generators_range.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_predicate.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

// Every matcher the tests use, each from its own header in v3 (v2's catch.hpp has them all): the
// string ones, Message (an exception's what()) and Predicate.

// v2 declares Approx in the global namespace, v3 only as Catch::Approx: the tests write Approx.
using Catch::Approx;

#elif CUDAGAP_CATCH2_MAJOR == 2

#include <catch2/catch.hpp>

#include <string>

namespace Catch::Matchers {
/// v3's name of the substring matcher, which v2 calls Contains (in v3, Contains matches an
/// element of a range, so the tests never use it for text).
inline StdString::ContainsMatcher
ContainsSubstring(const std::string& text, CaseSensitive::Choice sensitivity = CaseSensitive::Yes)
{
    return Contains(text, sensitivity);
}
} // namespace Catch::Matchers

#else
#error "CUDAGAP_CATCH2_MAJOR must be 2 or 3"
#endif

// The headers found must be those of the version CMake found (another Catch2 on the include path
// would otherwise compile against one version's headers and link the other's library).
static_assert(CATCH_VERSION_MAJOR == CUDAGAP_CATCH2_MAJOR,
              "the Catch2 headers on the include path are not the version CMake found");
