// An NVTX injection library for the tests of gpu/nvtx.hpp: NVTX loads it from
// NVTX_INJECTION64_PATH at the process's first NVTX call, as it loads Nsight Systems', and calls
// InitializeInjectionNvtx2, which fills NVTX's function table with the recorders below. They
// write one line per event: "push <domain> <name>[ #<argb>]", "pop <domain>",
// "mark <domain> <name>[ #<argb>]". The test reads the lines through the C functions at the
// end (after dlopen of this same library).
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <deque>
#include <mutex>
#include <string>

namespace {

std::mutex guard;
std::string recorded;
bool initialised = false;
std::deque<std::string> domain_names; // stable addresses: the handles point into it

const std::string& name_of(nvtxDomainHandle_t domain)
{
    static const std::string global = "(global)";
    return domain == nullptr ? global : *reinterpret_cast<const std::string*>(domain);
}

void record(const char* kind, nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes)
{
    const std::lock_guard lock(guard);
    recorded += kind;
    recorded += ' ';
    recorded += name_of(domain);
    if (attributes != nullptr) {
        recorded += ' ';
        recorded += attributes->messageType == NVTX_MESSAGE_TYPE_ASCII ? attributes->message.ascii
                                                                       : "(not ascii)";
        if (attributes->colorType == NVTX_COLOR_ARGB) {
            char colour[16];
            std::snprintf(colour, sizeof colour, " #%08x", attributes->color);
            recorded += colour;
        }
    }
    recorded += '\n';
}

nvtxDomainHandle_t NVTX_API create_domain(const char* name)
{
    const std::lock_guard lock(guard);
    domain_names.emplace_back(name);
    return reinterpret_cast<nvtxDomainHandle_t>(&domain_names.back());
}

int NVTX_API push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes)
{
    record("push", domain, attributes);
    return 0;
}

int NVTX_API pop(nvtxDomainHandle_t domain)
{
    record("pop", domain, nullptr);
    return 0;
}

void NVTX_API mark(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* attributes)
{
    record("mark", domain, attributes);
}

template <class Function>
void install(NvtxFunctionTable table, unsigned size, unsigned id, Function function)
{
    if (id < size && table[id] != nullptr) {
        *table[id] = reinterpret_cast<NvtxFunctionPointer>(function);
    }
}

} // namespace

extern "C" {

/// What NVTX calls after loading the library; returns 1 for success.
__attribute__((visibility("default"))) int
InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    const auto* callbacks =
        static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (callbacks == nullptr || callbacks->GetModuleFunctionTable == nullptr) {
        return 0;
    }
    NvtxFunctionTable table = nullptr;
    unsigned size = 0;
    if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) == 0 ||
        table == nullptr) {
        return 0;
    }
    install(table, size, NVTX_CBID_CORE2_DomainCreateA, &create_domain);
    install(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &push);
    install(table, size, NVTX_CBID_CORE2_DomainRangePop, &pop);
    install(table, size, NVTX_CBID_CORE2_DomainMarkEx, &mark);
    const std::lock_guard lock(guard);
    initialised = true;
    return 1;
}

/// Whether NVTX has loaded and initialised the library.
__attribute__((visibility("default"))) int cudagap_nvtx_recorder_initialised()
{
    const std::lock_guard lock(guard);
    return initialised ? 1 : 0;
}

/// The lines recorded since the last clear, copied into @p out (at most @p size bytes, with
/// the terminating 0); returns the length of the whole text.
__attribute__((visibility("default"))) unsigned long cudagap_nvtx_recorder_read(char* out,
                                                                                unsigned long size)
{
    const std::lock_guard lock(guard);
    if (size > 0) {
        const unsigned long copied = recorded.size() < size - 1 ? recorded.size() : size - 1;
        recorded.copy(out, copied);
        out[copied] = '\0';
    }
    return recorded.size();
}

/// Forgets what was recorded.
__attribute__((visibility("default"))) void cudagap_nvtx_recorder_clear()
{
    const std::lock_guard lock(guard);
    recorded.clear();
}
}
