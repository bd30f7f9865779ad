// The NVTX recorder (tests/core/nvtx_recorder.cpp, an NVTX injection library) as a test reads
// it: including this header names the recorder in NVTX_INJECTION64_PATH while the program loads,
// before any NVTX call can initialise NVTX without it, and gpu::test::nvtx_recorder reads back
// what reached NVTX. For a suite of its own (cudagap_use_nvtx_recorder in CudagapTesting.cmake
// gives it the recorder's path), so that no other test's NVTX call comes first. Test code only.
#pragma once

#include <gpu/nvtx.hpp>

#include <dlfcn.h>

#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef CUDAGAP_NVTX_RECORDER
#error "the suite needs cudagap_use_nvtx_recorder (cmake/CudagapTesting.cmake)"
#endif

namespace gpu::test {

/// Set while the program loads (a namespace-scope initialiser), before main.
[[maybe_unused]] inline const bool nvtx_injection_named =
    ::setenv("NVTX_INJECTION64_PATH", CUDAGAP_NVTX_RECORDER, 1) == 0;

/// The recorder's C functions, from the copy NVTX loaded (dlopen of the same path shares it).
/// Each event is a line: `push <domain> <name>[ #<argb>]`, `pop <domain>`, `mark <domain> ...`.
struct nvtx_recorder {
    int (*initialised)() = nullptr;
    unsigned long (*read)(char*, unsigned long) = nullptr;
    void (*clear)() = nullptr;

    /// The recorder, loaded on first use.
    static nvtx_recorder& get()
    {
        static nvtx_recorder instance = [] {
            void* library = ::dlopen(CUDAGAP_NVTX_RECORDER, RTLD_NOW);
            if (library == nullptr) {
                throw std::runtime_error(std::string("cannot load the NVTX recorder: ") +
                                         ::dlerror());
            }
            nvtx_recorder r;
            r.initialised =
                reinterpret_cast<int (*)()>(::dlsym(library, "cudagap_nvtx_recorder_initialised"));
            r.read = reinterpret_cast<unsigned long (*)(char*, unsigned long)>(
                ::dlsym(library, "cudagap_nvtx_recorder_read"));
            r.clear = reinterpret_cast<void (*)()>(::dlsym(library, "cudagap_nvtx_recorder_clear"));
            if (!r.initialised || !r.read || !r.clear) {
                throw std::runtime_error("the NVTX recorder lacks its functions");
            }
            return r;
        }();
        return instance;
    }

    /// What reached NVTX since the last clear.
    [[nodiscard]] std::string lines() const
    {
        std::string text(read(nullptr, 0), '\0');
        std::vector<char> buffer(text.size() + 1);
        read(buffer.data(), buffer.size());
        return std::string(buffer.data());
    }

    /// The lines of @p domain's events alone, in order (the CUDA libraries may have ranges of
    /// their own, in their domains).
    [[nodiscard]] std::vector<std::string> lines_of(const std::string& domain) const
    {
        std::vector<std::string> kept;
        std::istringstream text(lines());
        for (std::string line; std::getline(text, line);) {
            const std::size_t space = line.find(' ');
            if (space != std::string::npos && line.compare(space + 1, domain.size(), domain) == 0 &&
                (line.size() == space + 1 + domain.size() ||
                 line[space + 1 + domain.size()] == ' ')) {
                kept.push_back(line);
            }
        }
        return kept;
    }
};

/// Starts a test: ranges on (or off, with @p ranges_on false), nothing recorded yet.
inline nvtx_recorder& start_nvtx_recording(bool ranges_on = true)
{
    nvtx_recorder& r = nvtx_recorder::get();
    gpu::nvtx::enable(ranges_on);
    r.clear();
    return r;
}

} // namespace gpu::test
