// bench/conv: planning one policy's row. A policy that cannot plan the case (no algorithm fits,
// or cuDNN or CUDA fails the planning) loses its own row, with a note that says why; the other
// policies, the raw call, torch and the run's exit status are untouched. Kept apart from
// main.cpp so that a host test (tests/bench/test_conv_policy_plan.cpp) can check it.
#pragma once

#include "harness.hpp"

#include <gpu/dnn/convolution.hpp>
#include <gpu/error.hpp>

#include <optional>
#include <string>
#include <utility>

namespace gpu::bench::conv {

/// @brief The note a lost row leaves: `<case> / <variant>: no row: <why>`.
[[nodiscard]] inline std::string lost_row_note(const std::string& case_name,
                                               const std::string& variant, const std::string& why)
{
    return case_name + " / " + variant + ": no row: " + why;
}

/// @brief Runs @p make_plan (which plans @p variant of @p case_name) and returns its plan; when
/// planning fails, records why in a note of @p r and returns nothing.
///
/// Lost rows: `gpu::dnn::no_algorithm_error` (every candidate and its reason go in the note) and
/// any other `gpu::error` of the planning (a cuDNN status, out of memory). Still thrown, so that
/// the case fails as before: a sticky CUDA error (the context is gone; nothing after it can be
/// measured) and anything that is not a `gpu::error` (a bad problem is a bug of the benchmark).
template <class MakePlan>
[[nodiscard]] auto plan_or_lose_row(report& r, const std::string& case_name,
                                    const std::string& variant, MakePlan&& make_plan)
    -> std::optional<decltype(make_plan())>
{
    const std::string failed = "planning failed: ";
    try {
        return std::forward<MakePlan>(make_plan)();
    } catch (const gpu::dnn::no_algorithm_error& e) {
        r.add_note(lost_row_note(case_name, variant, failed + e.what()));
    } catch (const gpu::cuda_error& e) {
        if (e.is_sticky()) {
            throw;
        }
        r.add_note(lost_row_note(case_name, variant, failed + e.what()));
    } catch (const gpu::error& e) {
        r.add_note(lost_row_note(case_name, variant, failed + e.what()));
    }
    r.progress(case_name + " / " + variant + ": no row (planning failed; the notes say why)");
    return std::nullopt;
}

} // namespace gpu::bench::conv
