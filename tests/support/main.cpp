// The Catch2 runner of every cudagap test executable, for Catch2 v3 and v2 alike. Adds
// --require-gpu: ctest passes it to the [gpu] tests, and when no usable GPU exists the run stops
// with exit code 77, which ctest reports as Skipped (with the reason printed here), never as
// passed; --require-gpus N does the same for tests that need N GPUs ([multi-gpu]). Under v3 it
// also accepts the two v2 options that cudagap's scripts use, so that every
// command line means the same with both: --list-test-names-only (v3: --list-tests --verbosity
// quiet) and --warn NoTests (fail when no test case ran, which v3 does by default).
#if CUDAGAP_CATCH2_MAJOR == 3
#include <catch2/catch_session.hpp>
#else
#define CATCH_CONFIG_RUNNER
#endif
#include "catch.hpp"

#include <gpu/device.hpp>

#include <cstdio>
#include <string_view>
#include <vector>

namespace {
constexpr int skip_exit_code = 77;

#if CUDAGAP_CATCH2_MAJOR == 3
namespace clara = Catch::Clara;

/// The command line without `--warn NoTests` / `-w NoTests`, which v3 rejects: it fails a run
/// in which no test case ran unless told --allow-running-no-tests.
std::vector<const char*> without_warn_no_tests(int argc, char* argv[])
{
    std::vector<const char*> kept;
    for (int i = 0; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if ((arg == "--warn" || arg == "-w") && i + 1 < argc &&
            std::string_view(argv[i + 1]) == "NoTests") {
            ++i;
            continue;
        }
        kept.push_back(argv[i]);
    }
    return kept;
}

bool listing(const Catch::ConfigData& config)
{
    return config.listTests || config.listTags || config.listReporters || config.listListeners;
}
#else
namespace clara = Catch::clara;

bool listing(const Catch::ConfigData& config)
{
    return config.listTests || config.listTestNamesOnly || config.listTags || config.listReporters;
}
#endif
} // namespace

int main(int argc, char* argv[])
{
    Catch::Session session;
    bool require_gpu = false;
    int require_gpus = 0;
    auto cli = session.cli() |
               clara::Opt(require_gpu)["--require-gpu"](
                   "skip (exit 77) instead of running when no usable CUDA device exists") |
               clara::Opt(require_gpus, "count")["--require-gpus"](
                   "skip (exit 77) instead of running when fewer usable CUDA devices exist");
#if CUDAGAP_CATCH2_MAJOR == 3
    bool names_only = false;
    cli |= clara::Opt(names_only)["--list-test-names-only"](
        "list the names of the selected test cases, one per line (v2's option)");
    session.cli(cli);
    const std::vector<const char*> args = without_warn_no_tests(argc, argv);
    if (const int status = session.applyCommandLine(static_cast<int>(args.size()), args.data());
        status != 0) {
        return status;
    }
    if (names_only) {
        session.configData().listTests = true;
        session.configData().verbosity = Catch::Verbosity::Quiet;
    }
#else
    session.cli(cli);
    if (const int status = session.applyCommandLine(argc, argv); status != 0) {
        return status;
    }
#endif
    if (require_gpu && !listing(session.configData()) && !gpu::is_available()) {
        std::printf("SKIPPED: this test needs a usable CUDA device: %s\n",
                    gpu::unavailable_reason().c_str());
        return skip_exit_code;
    }
    if (require_gpus > 1 && !listing(session.configData()) && gpu::device_count() < require_gpus) {
        std::printf("SKIPPED: this test needs %d CUDA devices, this host has %d%s%s\n",
                    require_gpus, gpu::device_count(), gpu::is_available() ? "" : ": ",
                    gpu::is_available() ? "" : gpu::unavailable_reason().c_str());
        return skip_exit_code;
    }
    // Catch2 returns the number of failed assertions (up to 255): 77 of them would read as
    // Skipped to ctest, and 99 as compute-sanitizer's error exit code to scripts/gpu-check.
    return session.run() == 0 ? 0 : 1;
}
