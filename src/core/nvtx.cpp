// gpu::nvtx: the on/off switch, the thread's stack of open range names (which the memory ledger
// reads), and the nvtx3 calls. nvtx3 is header-only; only this file includes it, so the public
// header names no NVTX type.
#include <gpu/memory_ledger.hpp>
#include <gpu/nvtx.hpp>
#include <gpu/profile.hpp>

#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <mutex>

namespace gpu::nvtx {

namespace {
std::vector<std::string>& stack_of_this_thread() noexcept
{
    thread_local std::vector<std::string> names;
    return names;
}

nvtxEventAttributes_t attributes_for(const std::string& name, colour shade) noexcept
{
    nvtxEventAttributes_t attributes{};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = name.c_str();
    if (shade != colours::none) {
        attributes.colorType = NVTX_COLOR_ARGB;
        attributes.color = shade.argb;
    }
    return attributes;
}

nvtxDomainHandle_t handle_of(const domain& where)
{
    return static_cast<nvtxDomainHandle_t>(where.native());
}

std::string_view innermost_for_ledger() noexcept
{
    return innermost_range();
}

/// The environment's word, read once when the library is loaded: CUDAGAP_NVTX=1 (or 0) says it
/// outright, else the profile CUDAGAP_PROFILE names decides. A bad profile name is left for
/// the program's own select_profile to report.
bool environment_says_on() noexcept
{
    if (const char* value = std::getenv("CUDAGAP_NVTX"); value != nullptr && *value != '\0') {
        return std::string_view(value) != "0";
    }
    try {
        const std::optional<profile> chosen = profile_from_environment();
        return chosen.has_value() && chosen->nvtx_ranges;
    } catch (const std::exception&) {
        return false;
    }
}

// Read and applied while the library loads, before main: a program's own enable() or apply()
// later wins.
const bool environment_on = [] {
    const bool on = environment_says_on();
    if (on) {
        enable(true);
    }
    return on;
}();
} // namespace

const domain& domain::cudagap()
{
    static const domain instance("cudagap");
    return instance;
}

void* domain::native() const
{
    void* handle = handle_.load(std::memory_order_acquire);
    if (handle == nullptr) {
        // Two threads may both create it; NVTX returns the same domain for the same name.
        handle = nvtxDomainCreateA(name_.c_str());
        handle_.store(handle, std::memory_order_release);
    }
    return handle;
}

namespace detail {
void push(const domain& where, std::string name, colour shade)
{
    std::vector<std::string>& names = stack_of_this_thread();
    names.push_back(std::move(name));
    const nvtxEventAttributes_t attributes = attributes_for(names.back(), shade);
    nvtxDomainRangePushEx(handle_of(where), &attributes);
}

void pop(const domain& where) noexcept
{
    std::vector<std::string>& names = stack_of_this_thread();
    if (!names.empty()) {
        names.pop_back();
    }
    // The handle exists: the push created it.
    nvtxDomainRangePop(static_cast<nvtxDomainHandle_t>(where.native()));
}

void mark(const domain& where, const std::string& name, colour shade)
{
    const nvtxEventAttributes_t attributes = attributes_for(name, shade);
    nvtxDomainMarkEx(handle_of(where), &attributes);
}
} // namespace detail

void enable(bool on)
{
    detail::ranges_on.store(on, std::memory_order_relaxed);
    memory_ledger::set_range_name_source(on ? &innermost_for_ledger : nullptr);
}

bool enabled_by_environment() noexcept
{
    return environment_on;
}

void apply(const profile& settings)
{
    enable(settings.nvtx_ranges);
}

const std::vector<std::string>& open_ranges() noexcept
{
    return stack_of_this_thread();
}

std::string_view innermost_range() noexcept
{
    const std::vector<std::string>& names = stack_of_this_thread();
    return names.empty() ? std::string_view{} : std::string_view(names.back());
}

std::string size_name(std::size_t bytes)
{
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    std::size_t unit = 0;
    std::size_t scale = 1;
    while (unit + 1 < std::size(units) && bytes >= scale * 1024) {
        scale *= 1024;
        ++unit;
    }
    char text[32];
    if (bytes % scale == 0) {
        std::snprintf(text, sizeof text, "%zu %s", bytes / scale, units[unit]);
    } else {
        std::snprintf(text, sizeof text, "%.1f %s",
                      static_cast<double>(bytes) / static_cast<double>(scale), units[unit]);
    }
    return text;
}

} // namespace gpu::nvtx
