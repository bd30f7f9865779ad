// cudagap-doctor: cuda_gap_diagnosis.py's CUDA environment diagnosis in C++ (docs/doctor.md).
//
// Every check (driver, runtime, GPUs, kernel images, nvcc, cuBLAS, cuDNN, NCCL and the GPUs'
// peer access, duplicate libraries, other platforms) reports ok / info / skipped / warning / error with what it found and the
// exact fix; the report ends with the fixes to apply, root causes first. gpu::tools::diagnose (the
// tools component) runs the checks of every wrapper this cudagap was built with.
//
//   cudagap-doctor            the report as text
//   cudagap-doctor --json     the same report as one JSON object
//   cudagap-doctor --strict   warnings fail too
//
// Exit status: 0 when nothing is wrong, 1 when a check failed, 2 for a bad command line.
#include <gpu/tools/diagnose.hpp>
#include <gpu/tools/json.hpp>
#include <gpu/version.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* usage = R"(usage: cudagap-doctor [--json] [--strict] [--help]

Diagnoses this machine's CUDA environment: nvidia-smi, the NVIDIA driver, the CUDA runtime,
the GPUs and the kernel images this build has for them, nvcc, cuBLAS, cuDNN, NCCL and the
GPUs' peer access, duplicate copies of them on the library path, and other GPU platforms (ROCm,
oneAPI). Each problem comes with the exact fix.

  --json     print the report as one JSON object (for scripts)
  --strict   exit 1 on warnings too, not only on errors
  --help     print this text

Exit status: 0 when nothing is wrong, 1 otherwise, 2 for a bad command line.
)";

void print(const gpu::tools::diagnosis& report)
{
    const std::string rule(60, '=');
    std::printf("%s\nCUDA Environment Diagnosis (cudagap %s)\n%s\n", rule.c_str(),
                gpu::library_version().to_string().c_str(), rule.c_str());
    for (const std::string& line : report.describe()) {
        std::printf("%s\n", line.c_str());
    }
    std::printf("%s\n", rule.c_str());
}

} // namespace

int main(int argc, char* argv[])
{
    bool json = false;
    bool strict = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--json") {
            json = true;
        } else if (arg == "--strict") {
            strict = true;
        } else if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            return 0;
        } else {
            std::fprintf(stderr, "cudagap-doctor: unknown option '%s'\n\n%s", argv[i], usage);
            return 2;
        }
    }
    try {
        std::fprintf(stderr, "cudagap-doctor: checking the driver, runtime, GPUs, toolkit and "
                             "libraries...\n");
        const gpu::tools::diagnosis report = gpu::tools::diagnose();
        if (json) {
            nlohmann::json out = report;
            out["strict"] = strict;
            std::cout << gpu::to_json_text(out) << '\n';
        } else {
            print(report);
        }
        return report.exit_code(strict);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-doctor: the diagnosis itself failed: %s\n", e.what());
        return 1;
    }
}
