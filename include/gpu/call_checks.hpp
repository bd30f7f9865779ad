/// @file call_checks.hpp
/// @brief The per-call debug checks of a profile (`synchronous_checks`, `check_numerics`),
/// written once for every library wrapper: `gpu::detail::checked_call` refuses them while the
/// stream is being captured into a CUDA graph, before the call is queued, and runs them after
/// it; `gpu::detail::refuse_while_capturing` is the refusal of any call that would synchronise
/// during a capture.
///
/// A wrapper operation that honours the two switches makes one `checked_call` before its library
/// call and calls `finish` once after it:
///
/// @code
/// const gpu::detail::checked_call checked({.synchronous_checks = h.synchronous_checks(),
///                                          .check_numerics = h.check_numerics()},
///                                         h.stream(), "gpu::blas::gemm");
/// enqueue(...);                                         // the library call
/// checked.finish(c, gpu::element_type::fp32, gpu::detail::contiguous_elements(n),
///                [&] { return describe(problem); });   // built only for a numerics_error
/// @endcode
#pragma once

#include <gpu/element_type.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace gpu::detail {

/// @brief Throws `std::logic_error` when @p stream is being captured into a CUDA graph, where
/// a call that synchronises or reads back would invalidate the capture. The message reads
/// `<operation>: the stream is being captured into a CUDA graph, and <synchronises>, which would
/// invalidate the capture: <instead>`. One `cudaStreamIsCapturing`, which never synchronises.
/// @param stream the stream the call would synchronise
/// @param operation the caller, e.g. `gpu::check_finite`
/// @param synchronises what the call does that a capture cannot record, e.g. `this check copies
/// its counts to the host and synchronises the stream`
/// @param instead what to do instead, e.g. `check the outputs after launching the graph`
/// @throws gpu::cuda_error when the capture status cannot be read
void refuse_while_capturing(stream_ref stream, std::string_view operation,
                            std::string_view synchronises, std::string_view instead);

/// @brief The two debugging switches of a profile that act after every wrapper call, as a
/// `gpu::blas::handle` or a `gpu::dnn::convolution_options` holds them. Plain data.
struct call_checks {
    /// Synchronise after the call and report an asynchronous error there (the
    /// `CUDA_LAUNCH_BLOCKING=1` idea).
    bool synchronous_checks = false;
    /// Check the call's output for NaN and Inf and throw `gpu::numerics_error` where they
    /// appear (the `torch.autograd.set_detect_anomaly` idea).
    bool check_numerics = false;

    /// @brief Whether either switch is on, i.e. whether the call synchronises after its work.
    [[nodiscard]] bool any() const noexcept { return synchronous_checks || check_numerics; }
};

/// @brief Where @p count contiguous elements lie, as `check_finite_strided` reads them: one
/// block of one run.
/// A count beyond `std::int64_t` reads as negative, which the check refuses as invalid extents.
[[nodiscard]] constexpr strided_elements contiguous_elements(std::size_t count) noexcept
{
    const auto n = static_cast<std::int64_t>(count);
    return {.batch = 1, .batch_stride = 0, .runs = 1, .run_length = n, .run_stride = n};
}

/// @brief The checks of one wrapper call: made before the call is queued, where it refuses the
/// checks inside a capture, and finished once after it. Holds @p operation by view: a string
/// that outlives the call (a literal, the caller's name). Neither copyable nor movable: a scope.
class checked_call {
public:
    /// @brief Refuses @p checks while @p stream is being captured (both would synchronise it,
    /// which invalidates the capture): the `std::logic_error` names @p operation and the switch,
    /// and says to use a profile without it while capturing. Nothing is queued yet, so the
    /// capture stays intact. Makes no CUDA call when both switches are off.
    /// @param checks the switches the caller's handle or plan holds
    /// @param stream the stream the call runs on
    /// @param operation the caller, e.g. `gpu::blas::gemm`, for every message
    /// @param device the device for a `gpu::numerics_error` (the current one when empty)
    /// @throws std::logic_error when a switch is on and @p stream is being captured
    /// @throws gpu::cuda_error when a switch is on and the capture status cannot be read
    checked_call(call_checks checks, stream_ref stream, std::string_view operation,
                 std::optional<int> device = std::nullopt);

    /// @brief After the library call: with `synchronous_checks`, reports a pending CUDA error
    /// and synchronises the stream, so an asynchronous failure surfaces at this call; with
    /// `check_numerics`, counts NaN and Inf in @p output. Nothing when both are off.
    /// @param output the device address of the call's output
    /// @param type its element type
    /// @param where where its elements lie (`contiguous_elements(n)` for a plain buffer)
    /// @param context called only to build a `gpu::numerics_error`, whose operation reads
    /// `<operation> (<context()>)`: the shapes and types of the call
    /// @throws gpu::cuda_error naming the operation when the work or the synchronisation failed
    /// @throws gpu::numerics_error when the output holds NaN or Inf
    /// @throws std::invalid_argument as `check_finite_strided`, for extents or data it refuses
    template <class Context>
    requires std::convertible_to<std::invoke_result_t<Context&>, std::string>
    void finish(const void* output, element_type type, const strided_elements& where,
                Context&& context) const
    {
        if (checks_.synchronous_checks) {
            synchronise();
        }
        if (checks_.check_numerics) {
            const non_finite_report report = check_finite_strided(output, type, where, stream_);
            if (!report.all_finite()) {
                throw_non_finite(report, std::invoke(context));
            }
        }
    }

    checked_call(const checked_call&) = delete;
    checked_call& operator=(const checked_call&) = delete;
    checked_call(checked_call&&) = delete;
    checked_call& operator=(checked_call&&) = delete;
    ~checked_call() = default;

private:
    void synchronise() const;
    [[noreturn]] void throw_non_finite(const non_finite_report& report,
                                       const std::string& context) const;

    call_checks checks_;
    stream_ref stream_;
    std::string_view operation_;
    std::optional<int> device_;
};

} // namespace gpu::detail
