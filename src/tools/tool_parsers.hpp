// Private to cudagap_tools: the parsers of the answers of the tools the diagnosis runs
// (nvidia-smi's CSV, nvcc's release line). Strict and overflow-free, like the core's
// parse_decimal they build on: what they cannot read exactly they refuse. Not installed; the
// fuzzers (tests/fuzz) call them directly.
#pragma once

#include <gpu/device.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu::tools::detail {

/// @p text without leading and trailing white space.
[[nodiscard]] std::string trim(std::string text);

/// @p text split at every @p separator (a trailing separator adds no empty part).
[[nodiscard]] std::vector<std::string> split(const std::string& text, char separator);

/// "9.0" or "13.0": major and minor, each as `parse_decimal` reads it; nothing otherwise.
[[nodiscard]] std::optional<std::pair<int, int>> parse_major_minor(std::string_view text) noexcept;

/// A compute capability as nvidia-smi prints it ("9.0"), only when it is of that form and has
/// an integer form (`compute_capability::has_int_form`); nothing otherwise.
[[nodiscard]] std::optional<compute_capability>
parse_compute_capability(std::string_view text) noexcept;

/// One GPU of nvidia-smi's CSV answer.
struct smi_gpu {
    std::string name;                             ///< e.g. `NVIDIA H200`
    std::string driver;                           ///< e.g. `570.124.06`
    std::string memory;                           ///< e.g. `143771 MiB`
    std::optional<compute_capability> capability; ///< nothing when not asked for or not readable
};

/// The GPUs of `nvidia-smi --query-gpu=name,driver_version,memory.total[,compute_cap]
/// --format=csv,noheader`: one per line with enough fields (three, or four @p with_capability);
/// other lines are skipped. A capability that `parse_compute_capability` refuses is left out.
[[nodiscard]] std::vector<smi_gpu> parse_smi_rows(const std::string& output, bool with_capability);

} // namespace gpu::tools::detail
