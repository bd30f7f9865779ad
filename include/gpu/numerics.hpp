/// @file numerics.hpp
/// @brief The NaN/Inf check of cudagap, once for every wrapper: `gpu::check_finite` counts NaN and
/// Inf in device memory with one kernel, `gpu::check_finite_on_host` does the same on host bytes;
/// both answer with a `gpu::non_finite_report`. `gpu::numerics_error` is what an operation
/// throws when a profile's `check_numerics` finds NaN or Inf in its output (the
/// `torch.autograd.set_detect_anomaly` idea).
///
/// The library wrappers add typed overloads (`gpu::blas::check_finite` on buffers and matrix views,
/// `gpu::dnn::check_finite` on a `data_type`) that all run this check, and one
/// `catch (const gpu::numerics_error&)` covers a GEMM and a convolution:
///
/// @code
/// const gpu::non_finite_report r = gpu::check_finite(y, count, gpu::element_type::fp16, stream);
/// if (!r.all_finite()) std::printf("%s\n", r.to_string().c_str()); // 3 NaN and 0 Inf in ...
/// try {
///     conv.forward(h, x, w, y);                 // a plan made with the development profile
/// } catch (const gpu::numerics_error& e) {
///     // gpu::dnn::convolution::forward (...): non-finite output (3): 3 NaN and 0 Inf in ...
///     // hint: ...
///     std::fprintf(stderr, "%s\n", e.what());
/// }
/// @endcode
#pragma once

#include <gpu/element_type.hpp>
#include <gpu/error.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <source_location>
#include <span>
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

/// @brief Counts NaN and Inf in @p count elements of @p type in device memory at @p data, after
/// the work queued on @p stream (required: a pointer carries no stream); waits for the answer.
///
/// One kernel reads each element's bits once (a signalling NaN counts like a quiet one); the
/// counts come back in one small copy, then the stream is synchronised. Not capturable in a CUDA
/// graph (it synchronises); for debugging and for `check_numerics`.
/// @param data the device address of the first element
/// @param count the number of elements
/// @param type their format
/// @param stream where the check is queued
/// @throws std::invalid_argument for a @p type outside the enumeration, a count whose bytes
/// exceed the address space, null @p data with a non-zero count, or @p data not aligned to the
/// element size (each named; the address with the alignment: the kernel would fault on it)
/// @throws gpu::cuda_error when the check cannot run (no GPU, a bad pointer)
[[nodiscard]] non_finite_report check_finite(const void* data, std::size_t count, element_type type,
                                             stream_ref stream);

/// @brief Counts NaN and Inf in @p count elements of @p type in host memory, by the same rules
/// as the kernel of `check_finite` (the reference it is tested against without a GPU).
/// @param host the raw bytes, at least `count * element_size(type)` of them
/// @param count the number of elements
/// @param type their format
/// @throws std::invalid_argument when @p host is shorter than that (both sizes named; the
/// comparison cannot wrap around), or @p type is outside the enumeration
[[nodiscard]] non_finite_report check_finite_on_host(std::span<const std::byte> host,
                                                     std::size_t count, element_type type);

/// @brief Sets `*flag` to @p code when it is still 0 and the @p count elements of @p type at
/// @p data hold a NaN or an Inf: a check that never waits, for a whole pass of a model.
///
/// One kernel on @p stream, no copy to the host and no synchronisation, so it can be captured
/// in a CUDA graph and replayed. Checks queued one after another on one stream keep the code of
/// the first that found NaN or Inf (the later ones see a non-zero flag and leave it): give the
/// output of each layer its own code, queue a check after each, and read the flag once, where
/// the host waits anyway (after an epoch), to learn which output went non-finite first. Clear the
/// flag with a memset to start again. The same bit rules as `check_finite` (a signalling NaN
/// counts).
///
/// @code
/// gpu::device_buffer<std::uint32_t> first_bad(1, s);
/// first_bad.fill_zero_async(s);
/// for (std::uint32_t i = 0; i < layers; ++i) {
///     forward(i);
///     gpu::flag_non_finite(out[i], count[i], gpu::element_type::fp16, first_bad.data(), i + 1, s);
/// }
/// if (const std::uint32_t bad = first_bad.to_host().at(0); bad != 0) { /* layer bad - 1 */ }
/// @endcode
/// @param data the device address of the first element
/// @param count the number of elements (0: nothing is queued)
/// @param type their format
/// @param flag a device address: 0, or the code of the check that found NaN or Inf first
/// @param code what to write, not 0
/// @param stream where the check is queued
/// @throws std::invalid_argument for a @p type outside the enumeration, a @p count whose bytes
/// exceed the address space, null @p data with a non-zero count, @p data not aligned to the
/// element size (the address and the alignment named: the kernel would fault on it), a null
/// @p flag or a @p code of 0 (each named)
/// @throws gpu::cuda_error when the kernel cannot be launched
void flag_non_finite(const void* data, std::size_t count, element_type type, std::uint32_t* flag,
                     std::uint32_t code, stream_ref stream);

namespace detail {

/// @brief Where the elements of strided data lie: @p batch blocks `batch_stride` elements
/// apart, each of @p runs runs of `run_length` contiguous elements `run_stride` apart (a plain
/// buffer of n elements: 1, 0, 1, n, n; a matrix: its rows or columns).
struct strided_elements {
    std::int64_t batch = 1;        ///< number of blocks
    std::int64_t batch_stride = 0; ///< elements between the starts of two blocks
    std::int64_t runs = 1;         ///< runs per block (rows of a row-major matrix)
    std::int64_t run_length = 0;   ///< contiguous elements per run
    std::int64_t run_stride =
        0; ///< elements between the starts of two runs (at least `run_length`)
};

/// @brief `check_finite` on strided data: the same kernel, reading only the elements of
/// @p where (padding between runs and blocks is not read). The report's `first_index` is the
/// storage offset of the first NaN or Inf from @p data.
/// @throws std::invalid_argument for negative extents, a run stride below the run length, an
/// element count beyond 64 bits, null @p data with elements to read, or @p data not aligned to
/// the element size
/// @throws gpu::cuda_error when the check cannot run
[[nodiscard]] non_finite_report check_finite_strided(const void* data, element_type type,
                                                     const strided_elements& where,
                                                     stream_ref stream);

} // namespace detail

} // namespace gpu
