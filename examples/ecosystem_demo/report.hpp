// The report cudagap-demo builds as it runs, which --json prints: nlohmann::json when the build
// has nlohmann-json. Without it the demo still builds and prints its text (a GPU host may have
// only the CUDA Toolkit, CMake and a compiler): demo::report is then demo::text_only_report,
// which takes the same entries and keeps none, and --json says how to get nlohmann-json.
#pragma once

#if CUDAGAP_DEMO_HAS_JSON

#include <gpu/json.hpp>

namespace demo {
/// The report as JSON.
using report = nlohmann::json;
} // namespace demo

#else

#include <initializer_list>

namespace demo {

/// @brief The report of a build without nlohmann-json: written to as nlohmann::json is (objects
/// from braced lists, `r["key"] = value`, `push_back`), it keeps nothing, since such a build
/// prints text only.
class text_only_report {
public:
    text_only_report() = default;
    /// Any value the JSON report would hold.
    template <class Value>
    text_only_report(const Value& /*value*/) // NOLINT(google-explicit-constructor): as json
    {}
    /// An object or array written as a braced list.
    text_only_report(std::initializer_list<text_only_report> /*entries*/) {}
    /// An empty array.
    static text_only_report array() { return {}; }
    /// The entry @p key, which takes a value and keeps none.
    text_only_report& operator[](const char* /*key*/) { return *this; }
    /// Appends nothing.
    void push_back(const text_only_report& /*entry*/) {}
};

/// The report, kept by nobody.
using report = text_only_report;

} // namespace demo

#endif
