// The diagnosis report (its counts, recommendations and text) and gpu::tools::diagnose, which
// runs the CUDA checks, then the checks of every wrapper this cudagap was built with, then the
// other platforms.
#include <gpu/detail/enum_names.hpp>
#include <gpu/tools/diagnose.hpp>

#include "checks.hpp"

#include <gpu/device.hpp>
#include <gpu/tools/library_copies.hpp>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <optional>

namespace gpu::tools {

namespace {

// A switch, not a table indexed by the status: a status cast from an out-of-range number (a
// report read back from elsewhere) must not read past the table.
std::string_view tag(diagnostic_status status) noexcept
{
    switch (status) {
    case diagnostic_status::ok: return "[ OK ]";
    case diagnostic_status::info: return "[INFO]";
    case diagnostic_status::skipped: return "[SKIP]";
    case diagnostic_status::warning: return "[WARN]";
    case diagnostic_status::error: return "[FAIL]";
    }
    return "[ ?? ]";
}

// A wrapper this cudagap was built without still shows in the report, with how to get it.
[[maybe_unused]] diagnostic missing_wrapper(const char* name, const char* how)
{
    return {name, diagnostic_status::skipped,
            std::string("this cudagap was built without it: ") + how, "", ""};
}

// The checks of the wrappers that were built (CUDAGAP_TOOLS_WITH_*: src/tools/CMakeLists.txt).
std::vector<diagnostic> wrapper_checks()
{
    std::vector<diagnostic> checks;
#if CUDAGAP_TOOLS_WITH_BLAS
    checks = detail::run_checks("cuBLAS", detail::blas_checks);
#else
    checks.push_back(missing_wrapper("cuBLAS", "configure with -DCUDAGAP_ENABLE_BLAS=ON"));
#endif
#if CUDAGAP_TOOLS_WITH_DNN
    for (diagnostic& check : detail::run_checks("cuDNN", detail::dnn_checks)) {
        checks.push_back(std::move(check));
    }
#else
    checks.push_back(missing_wrapper("cuDNN", "set CUDNN_ROOT to a cuDNN 9 and reconfigure"));
#endif
#if CUDAGAP_TOOLS_WITH_NCCL
    for (diagnostic& check : detail::run_checks("NCCL", detail::nccl_checks)) {
        checks.push_back(std::move(check));
    }
#else
    checks.push_back(
        missing_wrapper("NCCL", "set NCCL_ROOT (or pip install nvidia-nccl-cu13) and reconfigure"));
#endif
    return checks;
}

void append(diagnosis& report, std::vector<diagnostic> checks)
{
    for (diagnostic& check : checks) {
        report.checks.push_back(std::move(check));
    }
}

} // namespace

constexpr gpu::detail::enum_name<diagnostic_status> diagnostic_status_names[] = {
    {diagnostic_status::ok, "ok"},
    {diagnostic_status::info, "info"},
    {diagnostic_status::skipped, "skipped"},
    {diagnostic_status::warning, "warning"},
    {diagnostic_status::error, "error"}};
std::string_view to_string(diagnostic_status status) noexcept
{
    return gpu::detail::name_of(diagnostic_status_names, status);
}

const diagnostic* diagnosis::find(std::string_view name) const noexcept
{
    const auto it = std::find_if(checks.begin(), checks.end(),
                                 [&](const diagnostic& check) { return check.name == name; });
    return it == checks.end() ? nullptr : &*it;
}

std::size_t diagnosis::count(diagnostic_status status) const noexcept
{
    return static_cast<std::size_t>(
        std::count_if(checks.begin(), checks.end(),
                      [&](const diagnostic& check) { return check.status == status; }));
}

diagnostic_status diagnosis::worst() const noexcept
{
    diagnostic_status worst = diagnostic_status::ok;
    for (const diagnostic& check : checks) {
        worst = std::max(worst, check.status);
    }
    return worst;
}

bool diagnosis::healthy(bool strict) const noexcept
{
    return count(diagnostic_status::error) == 0 &&
           (!strict || count(diagnostic_status::warning) == 0);
}

std::vector<std::string> diagnosis::recommendations() const
{
    const auto failed = [](diagnostic_status status) {
        return status == diagnostic_status::error || status == diagnostic_status::warning;
    };
    std::vector<std::string> fixes;
    for (const diagnostic_status level : {diagnostic_status::error, diagnostic_status::warning}) {
        for (const diagnostic& check : checks) {
            if (check.status != level || check.fix.empty()) {
                continue;
            }
            const diagnostic* cause = check.caused_by.empty() ? nullptr : find(check.caused_by);
            if (cause != nullptr && failed(cause->status)) {
                continue; // fixing the cause fixes this one
            }
            if (std::find(fixes.begin(), fixes.end(), check.fix) == fixes.end()) {
                fixes.push_back(check.fix);
            }
        }
    }
    return fixes;
}

std::vector<std::string> diagnosis::describe() const
{
    std::vector<std::string> lines;
    for (const diagnostic& check : checks) {
        lines.push_back(std::string(tag(check.status)) + " " + check.name + ": " + check.detail);
        if (!check.caused_by.empty()) {
            lines.push_back("       (follows from: " + check.caused_by + ")");
        } else if (!check.fix.empty() && check.status != diagnostic_status::ok) {
            lines.push_back("       fix: " + check.fix);
        }
    }
    const std::vector<std::string> fixes = recommendations();
    lines.emplace_back();
    if (fixes.empty()) {
        lines.emplace_back(healthy(true) ? "Your CUDA environment is ready."
                                         : "No errors or warnings that need a fix.");
        return lines;
    }
    lines.push_back("Recommendations (" + std::to_string(count(diagnostic_status::error)) +
                    " error(s), " + std::to_string(count(diagnostic_status::warning)) +
                    " warning(s)):");
    for (std::size_t i = 0; i < fixes.size(); ++i) {
        lines.push_back("  " + std::to_string(i + 1) + ". " + fixes[i]);
    }
    return lines;
}

diagnosis diagnose(const diagnose_options& options)
{
    const std::string search_path = options.search_path.value_or(detail::environment("PATH"));
    diagnosis report;
    append(report, detail::cuda_checks(search_path, options.tool_timeout));
    append(report, wrapper_checks());
    append(report, detail::platform_checks(search_path));
    return report;
}

namespace detail {

std::string environment(const char* name)
{
    const char* value = std::getenv(name);
    return value == nullptr ? std::string() : std::string(value);
}

version_check begin_version_check(std::string name, std::string_view library,
                                  const std::string& loaded, std::string_view unknown_folder)
{
    version_check begun;
    begun.check.name = std::move(name);
    const std::optional<std::string> path = loaded_library_path(library);
    begun.folder =
        path ? std::filesystem::path(*path).parent_path().string() : std::string(unknown_folder);
    begun.check.detail =
        begun.check.name + " " + loaded + " loaded" + (path ? " from " + *path : std::string());
    return begun;
}

void refuse_incompatible(diagnostic& check, std::string_view name, const std::string& compiled,
                         std::string fix)
{
    check.status = diagnostic_status::error;
    check.detail +=
        ": the loaded " + std::string(name) + " cannot serve code built against " + compiled;
    check.fix = std::move(fix);
}

void record_failure(diagnostic& check, const error& failure)
{
    check.status = diagnostic_status::error;
    check.detail = failure.api() + ": " + failure.status_name() + " (" +
                   std::to_string(failure.code()) + "): " + failure.message();
    check.fix = failure.hint().empty() ? std::string("run cudagap-doctor on a machine with a GPU")
                                       : failure.hint();
    if (!is_available()) {
        check.caused_by = gpus_check; // no usable GPU: the CUDA check names the root cause
    }
}

diagnostic check_handle(std::string name, const std::string& api,
                        const std::function<std::string()>& create)
{
    diagnostic check;
    check.name = std::move(name);
    try {
        const std::string said = create();
        const device dev = current_device();
        check.status = diagnostic_status::ok;
        check.detail = api + " works on GPU " + std::to_string(dev.id()) + " (" +
                       dev.properties().name + ")" + said;
    } catch (const gpu::error& e) {
        record_failure(check, e);
    }
    return check;
}

std::vector<diagnostic> run_checks(const std::string& name,
                                   const std::function<std::vector<diagnostic>()>& group)
{
    try {
        return group();
    } catch (const std::exception& e) {
        return {
            {name, diagnostic_status::error, std::string("a check threw: ") + e.what(), {}, {}}};
    }
}

} // namespace detail

} // namespace gpu::tools
