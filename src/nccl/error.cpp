// NCCL statuses by name, NCCL's versions, and the hints that turn the usual failures of a
// multi-GPU job (a duplicated GPU, the wrong network interface, a rank on another NCCL) into
// fixes.
#include <gpu/device.hpp>
#include <gpu/nccl/error.hpp>
#include <gpu/nccl/types.hpp>

#include <array>
#include <cstdio>
#include <string>
#include <string_view>

namespace gpu::nccl {

namespace {

constexpr std::string_view debug_advice =
    "set NCCL_DEBUG=INFO (and NCCL_DEBUG_SUBSYS=INIT,NET for the set-up) on every rank to see "
    "what NCCL did";

std::string with_context(std::string text, std::string_view context)
{
    if (!context.empty()) {
        text += " (" + std::string(context) + ")";
    }
    return text;
}

std::string versions_text(const version_info& versions)
{
    return "this process loaded NCCL " + versions.loaded.to_string() +
           ", cudagap was compiled against " + versions.compiled.to_string();
}

std::string duplicated_gpu_hint()
{
    return "two ranks use the same GPU: give each rank its own device (one process per GPU, "
           "rank r on device r % GPUs per host, or CUDA_VISIBLE_DEVICES=<local rank> per "
           "process), and make sure every rank sets its device before it joins";
}

std::string cuda_hint(const detail::hint_facts& facts)
{
    if (!facts.gpu_available) {
        return "no usable GPU: " + facts.unavailable_reason;
    }
    return "a CUDA call inside NCCL failed: the device may be out of memory (NCCL allocates its "
           "buffers when a communicator is made and at its first collective; NCCL_BUFFSIZE "
           "shrinks them), or the GPU failed (run cudagap-doctor)";
}

std::string usage_hint()
{
    return "NCCL was called in a way it forbids: " + duplicated_gpu_hint() +
           "; or the ranks issued different collectives (every rank must call the same "
           "collectives in the same order with matching counts), a communicator was used after "
           "it was finalized or aborted, or one thread drove several communicators outside a "
           "group (wrap their collectives in gpu::nccl::group_scope)";
}

std::string remote_hint(const detail::hint_facts& facts)
{
    return "another rank failed or the connection to it broke: read that rank's output first; "
           "every rank must load the same NCCL release (" +
           versions_text(facts.nccl) +
           "; a rank on another version fails at set-up or like this), and the hosts must reach "
           "each other on the interface NCCL_SOCKET_IFNAME names";
}

std::string status_hint(ncclResult_t status, const detail::hint_facts& facts)
{
    switch (status) {
    case ncclUnhandledCudaError: return cuda_hint(facts);
    case ncclSystemError:
        return "a system call or socket failed: name the network interface the ranks reach each "
               "other on with NCCL_SOCKET_IFNAME=<interface> (e.g. eth0 or ib0, see `ip addr`; "
               "NCCL may pick a docker or loopback one), open the ports between the hosts, and "
               "in a container give /dev/shm room (docker --shm-size=1g or --ipc=host)";
    case ncclInternalError:
        return "NCCL failed internally: report it with NCCL_DEBUG=INFO's output and the versions "
               "(" +
               versions_text(facts.nccl) + ")";
    case ncclInvalidArgument:
        return "NCCL rejected an argument: a rank outside [0, size), a size or unique id that "
               "differs between ranks, an unknown data type or reduction, or a null buffer";
    case ncclInvalidUsage: return usage_hint();
    case ncclRemoteError: return remote_hint(facts);
    case ncclInProgress:
        return "the operation has not finished: the other ranks have not reached it yet";
    default:
        return "an NCCL status that this cudagap does not know (" + versions_text(facts.nccl) + ")";
    }
}

} // namespace

std::string status_name(ncclResult_t status)
{
    switch (status) {
    case ncclSuccess: return "ncclSuccess";
    case ncclUnhandledCudaError: return "ncclUnhandledCudaError";
    case ncclSystemError: return "ncclSystemError";
    case ncclInternalError: return "ncclInternalError";
    case ncclInvalidArgument: return "ncclInvalidArgument";
    case ncclInvalidUsage: return "ncclInvalidUsage";
    case ncclRemoteError: return "ncclRemoteError";
    case ncclInProgress: return "ncclInProgress";
    default: return "ncclResult(" + std::to_string(static_cast<int>(status)) + ")";
    }
}

std::string status_message(ncclResult_t status)
{
    const char* text = ncclGetErrorString(status);
    std::string message = text == nullptr ? std::string("unknown result code") : std::string(text);
    // NCCL appends "(run with NCCL_DEBUG=... for details)": the hint says that, with more.
    const std::size_t advice = message.find(" (run with NCCL_DEBUG");
    if (advice != std::string::npos) {
        message.erase(advice);
    }
    return message;
}

std::string last_error_text()
{
    const char* text = ncclGetLastError(nullptr);
    return text == nullptr ? std::string() : std::string(text);
}

std::string hint_for(ncclResult_t status, std::string_view nccl_says, std::string_view context)
{
    return detail::hint_for(status, nccl_says, context, detail::current_hint_facts());
}

version_info version() noexcept
{
    version_info info;
    info.compiled = {NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH};
    int loaded = 0;
    if (ncclGetVersion(&loaded) == ncclSuccess) {
        info.loaded = decode_version(loaded);
    }
    return info;
}

namespace {
constexpr gpu::detail::enum_name<ncclDataType_t> nccl_type_names[] = {
    {ncclInt8, "Int8"},        {ncclUint8, "Uint8"},     {ncclInt32, "Int32"},
    {ncclUint32, "Uint32"},    {ncclInt64, "Int64"},     {ncclUint64, "Uint64"},
    {ncclFloat16, "Float16"},  {ncclFloat32, "Float32"}, {ncclFloat64, "Float64"},
    {ncclBfloat16, "Bfloat16"}};
} // namespace

std::string_view to_string(ncclDataType_t type) noexcept
{
    return gpu::detail::name_of(nccl_type_names, type);
}

namespace detail {

hint_facts current_hint_facts()
{
    hint_facts facts;
    facts.gpu_available = gpu::is_available();
    if (!facts.gpu_available) {
        facts.unavailable_reason = gpu::unavailable_reason();
    }
    facts.nccl = nccl::version();
    return facts;
}

std::string hint_for(ncclResult_t status, std::string_view nccl_says, std::string_view context,
                     const hint_facts& facts)
{
    if (status == ncclSuccess) {
        return {};
    }
    // NCCL's text names a duplicated GPU outright; its status alone (ncclInvalidUsage) has
    // several causes. The text is never cleared, so it counts only with the status it comes
    // with: a stale one must not turn every later failure into a duplicated GPU.
    const bool duplicated =
        status == ncclInvalidUsage && nccl_says.find("Duplicate GPU") != std::string_view::npos;
    std::string text = duplicated ? duplicated_gpu_hint() : status_hint(status, facts);
    if (!facts.nccl.compatible()) {
        text += "; the loaded NCCL " + facts.nccl.loaded.to_string() + " is older than the " +
                facts.nccl.compiled.to_string() +
                " cudagap was compiled against: load that one "
                "(LD_LIBRARY_PATH) or rebuild with NCCL_ROOT set to the loaded one";
    }
    return with_context(std::move(text), context) + "; " + std::string(debug_advice);
}

void throw_timeout(const char* api, std::chrono::milliseconds waited, std::string_view why,
                   std::source_location where)
{
    std::array<char, 32> seconds{};
    std::snprintf(seconds.data(), seconds.size(), "%.1f",
                  static_cast<double>(waited.count()) / 1000.0);
    std::string message = "did not finish within " + std::string(seconds.data()) + " s";
    std::string hint = std::string(why) + "; " + std::string(debug_advice);
    throw nccl_error(api, status_name(ncclInProgress), static_cast<long long>(ncclInProgress),
                     std::move(message), std::move(hint), gpu::detail::current_device_or_unknown(),
                     where);
}

void throw_blocking_forced(const char* function, std::string_view value, std::source_location where)
{
    std::string message = "the environment sets NCCL_COMM_BLOCKING=" + std::string(value) +
                          ", which makes NCCL's communicators blocking over cudagap's non-blocking "
                          "configuration: a rank that never came would then block this process "
                          "without a limit";
    std::string hint = "unset NCCL_COMM_BLOCKING (or set it to 0): cudagap's communicators wait "
                       "for the other ranks with deadlines instead (communicator_options); " +
                       std::string(debug_advice);
    throw nccl_error(function, status_name(ncclInvalidUsage),
                     static_cast<long long>(ncclInvalidUsage), std::move(message), std::move(hint),
                     -1, where);
}

} // namespace detail
} // namespace gpu::nccl

namespace gpu::detail {

template void throw_error<ncclResult_t>(ncclResult_t, const char*, std::source_location,
                                        std::string_view);

} // namespace gpu::detail
