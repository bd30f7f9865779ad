// The Catch2 runner of every cudagap test executable. Adds --require-gpu: ctest passes it to the
// [gpu] tests, and when no usable GPU exists the run stops with exit code 77, which ctest
// reports as Skipped (with the reason printed here), never as passed.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <gpu/device.hpp>

#include <cstdio>

namespace {
constexpr int skip_exit_code = 77;
}

int main(int argc, char* argv[])
{
    Catch::Session session;
    bool require_gpu = false;
    using Catch::clara::Opt;
    session.cli(session.cli() |
                Opt(require_gpu)["--require-gpu"](
                    "skip (exit 77) instead of running when no usable CUDA device exists"));
    if (const int status = session.applyCommandLine(argc, argv); status != 0) {
        return status;
    }
    const auto& config = session.configData();
    const bool listing = config.listTests || config.listTestNamesOnly || config.listTags ||
                         config.listReporters;
    if (require_gpu && !listing && !gpu::is_available()) {
        std::printf("SKIPPED: this test needs a usable CUDA device: %s\n",
                    gpu::unavailable_reason().c_str());
        return skip_exit_code;
    }
    // Catch2 returns the number of failed assertions (up to 255): 77 of them would read as
    // Skipped to ctest, and 99 as compute-sanitizer's error exit code to scripts/gpu-check.
    return session.run() == 0 ? 0 : 1;
}
