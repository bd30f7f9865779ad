// Fuzzes the parsing of nvidia-smi's and nvcc's answers (src/tools/tool_parsers.hpp, built on
// the core's parse_decimal in src/core/parse.hpp) and the integer forms of
// gpu::compute_capability and gpu::cuda_version: a tool's output can be anything. The number
// parsers are compared with a reference that reads digits in 128 bits; every capability
// parsed must have an integer form that round-trips.
#include "parse.hpp"
#include "tool_parsers.hpp"

#include <gpu/device.hpp>
#include <gpu/version.hpp>

#include "fuzz_support.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace {

using gpu::compute_capability;
using gpu::cuda_version;
constexpr std::int64_t int_max = std::numeric_limits<int>::max();

std::optional<int> reference_decimal(std::string_view text)
{
    if (text.empty()) {
        return std::nullopt;
    }
    std::int64_t value = 0;
    for (const char c : text) {
        if (c < '0' || c > '9') {
            return std::nullopt;
        }
        value = value * 10 + (c - '0');
        if (value > int_max) {
            return std::nullopt;
        }
    }
    return static_cast<int>(value);
}

void check_numbers(std::string_view text)
{
    const std::optional<int> got = gpu::detail::parse_decimal(text);
    fuzz::require(got == reference_decimal(text), [&] {
        return "parse_decimal('" + std::string(text) + "') differs from the reference";
    });
    const auto pair = gpu::tools::detail::parse_major_minor(text);
    const std::size_t dot = text.find('.');
    const auto major =
        dot == std::string_view::npos ? std::nullopt : reference_decimal(text.substr(0, dot));
    const auto minor =
        dot == std::string_view::npos ? std::nullopt : reference_decimal(text.substr(dot + 1));
    fuzz::require(pair.has_value() == (major && minor) &&
                      (!pair || (pair->first == *major && pair->second == *minor)),
                  [&] {
                      return "parse_major_minor('" + std::string(text) +
                             "') differs from the reference";
                  });
    const auto capability = gpu::tools::detail::parse_compute_capability(text);
    const bool expected =
        major && minor && *minor <= 9 && std::int64_t{*major} * 10 + *minor <= int_max;
    fuzz::require(capability.has_value() == expected, [&] {
        return "parse_compute_capability('" + std::string(text) + "') differs from the reference";
    });
}

void check_capability(compute_capability cc)
{
    const bool form = cc.major >= 0 && cc.minor >= 0 && cc.minor <= 9 &&
                      std::int64_t{cc.major} * 10 + cc.minor <= int_max;
    fuzz::require(cc.has_int_form() == form,
                  [&] { return "has_int_form() of " + cc.to_string() + " is wrong"; });
    int sm = -1;
    const bool ok = fuzz::accepted([&] { sm = cc.as_int(); }, "compute_capability::as_int");
    fuzz::require(ok == form, [&] { return "as_int() of " + cc.to_string() + " is wrong"; });
    if (ok) {
        fuzz::require(
            sm == std::int64_t{cc.major} * 10 + cc.minor && compute_capability::from_int(sm) == cc,
            [&] { return "the integer form of " + cc.to_string() + " does not round-trip"; });
        const auto reparsed = gpu::tools::detail::parse_compute_capability(cc.to_string());
        fuzz::require(reparsed == cc, [&] { return cc.to_string() + " does not parse back"; });
    }
    static_cast<void>(cc.architecture_name());
    fuzz::require(cc.has_fp8() == (cc >= compute_capability{8, 9}), "has_fp8() is wrong");
}

void check_cuda_version(cuda_version v)
{
    const bool form = v.major >= 0 && v.minor >= 0 && v.minor <= 99 &&
                      std::int64_t{v.major} * 1000 + std::int64_t{v.minor} * 10 <= int_max;
    fuzz::require(v.has_int_form() == form, "cuda_version::has_int_form() is wrong");
    int encoded = -1;
    const bool ok = fuzz::accepted([&] { encoded = v.as_int(); }, "cuda_version::as_int");
    fuzz::require(ok == form && (!ok || cuda_version::from_int(encoded) == v), [&] {
        return "cuda_version " + std::to_string(v.major) + "." + std::to_string(v.minor) +
               " has a wrong integer form";
    });
}

void check_from_int(int sm, int encoded)
{
    compute_capability cc;
    const bool ok = fuzz::accepted([&] { cc = compute_capability::from_int(sm); },
                                   "compute_capability::from_int");
    fuzz::require(ok == (sm >= 0) && (!ok || cc.as_int() == sm), [&] {
        return "compute_capability::from_int(" + std::to_string(sm) + ") is wrong";
    });
    cuda_version v;
    const bool v_ok =
        fuzz::accepted([&] { v = cuda_version::from_int(encoded); }, "cuda_version::from_int");
    fuzz::require(v_ok == (encoded >= 0) && (!v_ok || v.as_int() == encoded / 10 * 10), [&] {
        return "cuda_version::from_int(" + std::to_string(encoded) + ") is wrong";
    });
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size)
{
    fuzz::input in(data, size);
    const compute_capability raw{in.take<int>(), in.take<int>()};
    check_capability(raw);
    check_cuda_version({in.take<int>(), in.take<int>()});
    check_from_int(in.take<int>(), in.take<int>());
    const bool with_capability = in.take<bool>();
    const std::string output(in.rest());

    check_numbers(output);
    const std::vector<gpu::tools::detail::smi_gpu> gpus =
        gpu::tools::detail::parse_smi_rows(output, with_capability);
    const std::size_t lines = gpu::tools::detail::split(output, '\n').size();
    fuzz::require(gpus.size() <= lines, "more GPUs than lines");
    const std::vector<gpu::cuda_architecture> built = {
        {75, true, false, ""}, {90, true, true, ""}, {90, true, false, "a"}};
    for (const gpu::tools::detail::smi_gpu& gpu : gpus) {
        fuzz::require(with_capability || !gpu.capability, "a capability nobody asked for");
        if (gpu.capability) {
            check_capability(*gpu.capability);
            static_cast<void>(gpu::kernel_image_for(*gpu.capability, built));
        }
    }
    for (const std::string& field : gpu::tools::detail::split(output, ',')) {
        check_numbers(gpu::tools::detail::trim(field));
    }
    return 0;
}
