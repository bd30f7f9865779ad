/// @file numerics.hpp
/// @brief `gpu::non_finite_report`, what a NaN/Inf check of device data found, and
/// `gpu::numerics_error`, what an operation throws when a profile's `check_numerics` finds NaN or
/// Inf in its output (the `torch.autograd.set_detect_anomaly` idea).
///
/// The wings count (`gpu::blas::check_finite` with a kernel, `gpu::dnn::find_non_finite` with a
/// host scan); the report and the error are shared, so one `catch (const gpu::numerics_error&)`
/// covers a GEMM and a convolution:
///
/// @code
/// try {
///     conv.forward(h, x, w, y);                 // a plan made with the development profile
/// } catch (const gpu::numerics_error& e) {
///     // gpu::dnn::convolution (...): non-finite output (3): 3 NaN and 0 Inf in 1024 elements, ...
///     // hint: ...
///     std::fprintf(stderr, "%s\n", e.what());
/// }
/// @endcode
#pragma once

#include <gpu/error.hpp>

#include <cstddef>
#include <optional>
#include <source_location>
#include <string>

namespace gpu {

/// @brief What a NaN/Inf check found. Plain data.
struct non_finite_report {
    std::size_t elements = 0;  ///< elements checked
    std::size_t nan_count = 0; ///< NaN among them (quiet or signalling)
    std::size_t inf_count = 0; ///< +Inf or -Inf among them
    /// The first NaN or Inf, counted in elements from the start of the data as it lies in memory
    /// (for a padded matrix the padding counts); empty when every element is finite.
    std::optional<std::size_t> first_index{};

    /// @brief No NaN and no Inf.
    [[nodiscard]] bool all_finite() const noexcept { return nan_count == 0 && inf_count == 0; }
    /// @brief `3 NaN and 1 Inf in 1000000 elements, the first at index 42`, or
    /// `all 1000000 elements are finite`.
    [[nodiscard]] std::string to_string() const;
};

/// @brief An operation's output holds NaN or Inf, found by the check a profile's
/// `check_numerics` asks for (a `gpu::blas::handle`'s or a `gpu::dnn::convolution`'s).
///
/// `what()` reads `<operation>: non-finite output (<NaN + Inf count>): <report>` then a line
/// `hint: ...` on where NaN and Inf usually come from. `api()` is the operation,
/// `status_name()` is `non-finite output` and `code()` the number of NaN and Inf.
class numerics_error : public error {
public:
    /// @brief Builds the error.
    /// @param operation what produced the output, e.g. `gpu::blas::gemm (FP16 inputs, ...)`
    /// @param report what the check found
    /// @param device the device the output lives on; empty reads the current device (-1 when
    /// none can be read)
    /// @param where the source location of the check
    numerics_error(std::string operation, const non_finite_report& report,
                   std::optional<int> device = std::nullopt,
                   std::source_location where = std::source_location::current());

    /// @brief The operation whose output was checked (the same as `api()`).
    [[nodiscard]] const std::string& operation() const noexcept { return api(); }
    /// @brief What the check found.
    [[nodiscard]] const non_finite_report& report() const noexcept { return report_; }

private:
    non_finite_report report_;
};

} // namespace gpu
