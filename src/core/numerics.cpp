// The NaN/Inf check of every wrapper: its argument checks, the kernel's counters (numerics.cu), the
// host scan by the same bit rules, and the words of a report and of numerics_error: one error
// type, in the house format, whichever library produced the output.
#include <gpu/call_checks.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/numerics.hpp>

#include "finite_bits.hpp"
#include "numerics_kernel.hpp"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpu {

namespace {

constexpr const char* numerics_hint =
    "NaN and Inf usually come from (1) NaN or Inf already in the inputs: check them the same way "
    "(gpu::check_finite, or its typed overloads in blas and dnn) to find the first operation that "
    "made them; (2) FP16 overflow: FP16 holds magnitudes up to 65504 only, so scale the data down, "
    "or "
    "use BF16 (FP32's range) or FP32; (3) an uninitialised buffer: an input or output that was "
    "allocated but never written holds whatever was in memory. This check ran because the "
    "profile asks for check_numerics (the development profile does); it costs a synchronisation "
    "and a pass over the output after every operation, so turn it off where speed matters";

int device_or_current(std::optional<int> device) noexcept
{
    if (device) {
        return *device;
    }
    int current = -1;
    if (cudaGetDevice(&current) != cudaSuccess) {
        static_cast<void>(cudaGetLastError()); // no GPU: the error still has to be built
        return -1;
    }
    return current;
}

// The kernel and the host scan receive the format as an integer in finite_bits' order.
static_assert(static_cast<int>(element_type::fp32) == detail::finite_bits::fp32 &&
              static_cast<int>(element_type::fp64) == detail::finite_bits::fp64 &&
              static_cast<int>(element_type::fp16) == detail::finite_bits::fp16 &&
              static_cast<int>(element_type::bf16) == detail::finite_bits::bf16);

void require_named(element_type type, const char* function)
{
    if (element_size(type) == 0) {
        throw std::invalid_argument(std::string(function) + ": element_type value " +
                                    std::to_string(static_cast<int>(type)) +
                                    " is none of FP32, FP64, FP16 and BF16 (an integer cast to the "
                                    "enum?)");
    }
}

// count * element size for a message, exact even when it does not fit size_t.
std::string byte_count(std::size_t count, element_type type)
{
    std::size_t bytes = 0;
    if (__builtin_mul_overflow(count, element_size(type), &bytes)) {
        return std::to_string(count) + " x " + std::to_string(element_size(type));
    }
    return std::to_string(bytes);
}

// Element i of host bytes, read by its bits (memcpy: the bytes need not be aligned).
detail::finite_bits::kind classify_host(const std::byte* bytes, std::size_t i,
                                        element_type type) noexcept
{
    namespace bits = detail::finite_bits;
    switch (type) {
    case element_type::fp64: {
        std::uint64_t value = 0;
        std::memcpy(&value, bytes + i * sizeof value, sizeof value);
        return bits::classify_fp64(value);
    }
    case element_type::fp16:
    case element_type::bf16: {
        std::uint16_t value = 0;
        std::memcpy(&value, bytes + i * sizeof value, sizeof value);
        return type == element_type::fp16 ? bits::classify_fp16(value) : bits::classify_bf16(value);
    }
    case element_type::fp32: break;
    }
    std::uint32_t value = 0;
    std::memcpy(&value, bytes + i * sizeof value, sizeof value);
    return bits::classify_fp32(value);
}

// The number of elements of `where`, and that the offsets the kernel computes (in bytes, too)
// fit in 64 bits; throws std::invalid_argument naming the extents otherwise.
std::int64_t checked_elements(const detail::strided_elements& where, element_type type)
{
    const auto extents = [&] {
        return "batch " + std::to_string(where.batch) + " (stride " +
               std::to_string(where.batch_stride) + ") of " + std::to_string(where.runs) +
               " runs of " + std::to_string(where.run_length) + " (stride " +
               std::to_string(where.run_stride) + ")";
    };
    if (where.batch < 0 || where.runs < 0 || where.run_length < 0 || where.batch_stride < 0 ||
        where.run_stride < where.run_length) {
        throw std::invalid_argument("gpu::check_finite: invalid extents: " + extents());
    }
    std::int64_t runs = 0;
    std::int64_t elements = 0;
    if (__builtin_mul_overflow(where.batch, where.runs, &runs) ||
        __builtin_mul_overflow(runs, where.run_length, &elements)) {
        throw std::invalid_argument("gpu::check_finite: " + extents() +
                                    ": their element count is more than 64 bits can count");
    }
    if (elements == 0) {
        return 0;
    }
    // The last element's offset + 1, in bytes: what the kernel's index arithmetic reaches.
    std::int64_t last_block = 0;
    std::int64_t last_run = 0;
    std::int64_t span = 0;
    std::int64_t bytes = 0;
    if (__builtin_mul_overflow(where.batch - 1, where.batch_stride, &last_block) ||
        __builtin_mul_overflow(where.runs - 1, where.run_stride, &last_run) ||
        __builtin_add_overflow(last_block, last_run, &span) ||
        __builtin_add_overflow(span, where.run_length, &span) ||
        __builtin_mul_overflow(span, static_cast<std::int64_t>(element_size(type)), &bytes)) {
        throw std::invalid_argument("gpu::check_finite: " + extents() + " of " +
                                    std::string(to_string(type)) + " span more memory than exists");
    }
    return elements;
}

// An address as the messages write it, e.g. 0x7ffd2c1e4a01.
std::string address_text(std::uintptr_t address)
{
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(address));
    return text;
}

// The kernels read each element at its own size: an address that is no multiple of it faults
// on the GPU (cudaErrorMisalignedAddress, which ends the CUDA context), so it is refused here,
// before anything is queued.
void require_aligned(const void* data, element_type type, const char* function)
{
    const auto address = reinterpret_cast<std::uintptr_t>(data);
    const std::size_t size = element_size(type);
    GPU_EXPECTS(address % size == 0, std::invalid_argument, function, ": data at ",
                address_text(address), " is not aligned to its ", size, "-byte ", to_string(type),
                " elements (", address % size, " bytes past a multiple of ", size, ")");
}

} // namespace

std::string non_finite_report::to_string() const
{
    if (all_finite()) {
        return "all " + std::to_string(elements) + " elements are finite";
    }
    std::string text = std::to_string(nan_count) + " NaN and " + std::to_string(inf_count) +
                       " Inf in " + std::to_string(elements) + " elements";
    if (first_index) {
        text += ", the first at index " + std::to_string(*first_index);
    }
    return text;
}

numerics_error::numerics_error(std::string operation, const non_finite_report& report,
                               std::optional<int> device, std::source_location where)
    : error(std::move(operation), "non-finite output",
            static_cast<long long>(report.nan_count + report.inf_count), report.to_string(),
            numerics_hint, device_or_current(device), where),
      report_(report)
{}

non_finite_report check_finite(const void* data, std::size_t count, element_type type,
                               stream_ref stream)
{
    require_named(type, "gpu::check_finite");
    // Offsets are 64-bit signed in the kernel: a count beyond that is no real buffer.
    constexpr auto max_offset = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    if (count > max_offset / element_size(type)) {
        throw std::invalid_argument("gpu::check_finite: " + std::to_string(count) + " " +
                                    std::string(to_string(type)) + " elements need " +
                                    byte_count(count, type) +
                                    " bytes, more than the address space holds");
    }
    return detail::check_finite_strided(data, type, detail::contiguous_elements(count), stream);
}

void flag_non_finite(const void* data, std::size_t count, element_type type, std::uint32_t* flag,
                     std::uint32_t code, stream_ref stream)
{
    constexpr const char* function = "gpu::flag_non_finite";
    require_named(type, function);
    constexpr auto max_offset = static_cast<std::size_t>(std::numeric_limits<std::int64_t>::max());
    GPU_EXPECTS(count <= max_offset / element_size(type), std::invalid_argument, function, ": ",
                count, " ", to_string(type), " elements need ", byte_count(count, type),
                " bytes, more than the address space holds");
    GPU_EXPECTS(count == 0 || data != nullptr, std::invalid_argument, function, ": null data for ",
                count, " elements");
    GPU_EXPECTS(flag != nullptr, std::invalid_argument, function, ": the flag is null");
    GPU_EXPECTS(code != 0, std::invalid_argument, function,
                ": code 0 is the flag's \"nothing found\"; give each check a code from 1");
    if (count == 0) {
        return;
    }
    require_aligned(data, type, function);
    GPU_CUDA_CHECK(detail::kernels::flag_non_finite(
        static_cast<int>(type), data, static_cast<long long>(count), flag, code, stream.get()));
}

non_finite_report check_finite_on_host(std::span<const std::byte> host, std::size_t count,
                                       element_type type)
{
    require_named(type, "gpu::check_finite_on_host");
    // Compared by division: count * size could wrap around and pass a short span.
    if (count > host.size() / element_size(type)) {
        throw std::invalid_argument("gpu::check_finite_on_host: " + std::to_string(count) + " " +
                                    std::string(to_string(type)) + " elements need " +
                                    byte_count(count, type) + " bytes, the span has " +
                                    std::to_string(host.size()));
    }
    non_finite_report report;
    report.elements = count;
    for (std::size_t i = 0; i < count; ++i) {
        const detail::finite_bits::kind kind = classify_host(host.data(), i, type);
        if (kind == detail::finite_bits::finite) {
            continue;
        }
        ++(kind == detail::finite_bits::nan ? report.nan_count : report.inf_count);
        if (!report.first_index) {
            report.first_index = i;
        }
    }
    return report;
}

namespace detail {

non_finite_report check_finite_strided(const void* data, element_type type,
                                       const strided_elements& where, stream_ref stream)
{
    require_named(type, "gpu::check_finite");
    non_finite_report report;
    report.elements = static_cast<std::size_t>(checked_elements(where, type));
    if (report.elements == 0) {
        return report;
    }
    if (data == nullptr) {
        throw std::invalid_argument("gpu::check_finite: null data for " +
                                    std::to_string(report.elements) + " elements");
    }
    require_aligned(data, type, "gpu::check_finite");
    // The counts come back through a copy to the host and a synchronisation, which would
    // invalidate a capture: refuse clearly instead of breaking the graph.
    refuse_while_capturing(stream, "gpu::check_finite",
                           "this check copies its counts to the host and synchronises the stream",
                           "check the outputs after launching the graph");
    // counters: NaN, Inf (from 0), the first offset (from all ones, the "none" that atomicMin
    // lowers).
    constexpr unsigned long long none = std::numeric_limits<unsigned long long>::max();
    device_buffer<unsigned long long> counters(3, stream);
    GPU_CUDA_CHECK(
        cudaMemsetAsync(counters.data(), 0, 2 * sizeof(unsigned long long), stream.get()));
    GPU_CUDA_CHECK(
        cudaMemsetAsync(counters.data() + 2, 0xff, sizeof(unsigned long long), stream.get()));
    GPU_CUDA_CHECK(kernels::count_non_finite(static_cast<int>(type), data, where.batch,
                                             where.batch_stride, where.runs, where.run_length,
                                             where.run_stride, counters.data(), stream.get()));
    unsigned long long host[3] = {};
    GPU_CUDA_CHECK(
        cudaMemcpyAsync(host, counters.data(), sizeof host, cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
    report.nan_count = static_cast<std::size_t>(host[0]);
    report.inf_count = static_cast<std::size_t>(host[1]);
    if (host[2] != none) {
        report.first_index = static_cast<std::size_t>(host[2]);
    }
    return report;
}

} // namespace detail

} // namespace gpu
