// Run by ctest with OPENBLAS_CORETYPE set (OpenBLAS reads it when it loads, so this needs a
// fresh process): OpenBLAS must report the forced kernels, and the warning must fire exactly
// when the CPU has AVX2 and the forced kernels are older. Exit code 0 when all holds.
#include <gpu/host_blas.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

int main()
{
    const char* forced = std::getenv("OPENBLAS_CORETYPE");
    if (forced == nullptr) {
        std::printf("FAIL: run this with OPENBLAS_CORETYPE set\n");
        return 1;
    }
    const auto info = gpu::host_blas::library();
    const auto cpu = gpu::host_blas::detect_cpu();
    const std::string warning = gpu::host_blas::kernel_warning();
    std::printf("BLAS: %s\nCPU: %s (AVX2 %d, FMA %d, AVX-512F %d)\nwarning: %s\n",
                info.to_string().c_str(), cpu.model.c_str(), cpu.avx2, cpu.fma, cpu.avx512f,
                warning.empty() ? "(none)" : warning.c_str());
    int failures = 0;
    if (info.kind != gpu::host_blas::implementation::openblas) {
        std::printf("FAIL: expected OpenBLAS\n");
        ++failures;
    }
    if (info.core != forced) {
        std::printf("FAIL: OpenBLAS reports '%s' kernels, OPENBLAS_CORETYPE asked for '%s'\n",
                    info.core.c_str(), forced);
        ++failures;
    }
    const bool expect_warning = cpu.has_avx2_kernels();
    if (expect_warning != !warning.empty()) {
        std::printf("FAIL: expected %s\n", expect_warning ? "a warning" : "no warning");
        ++failures;
    }
    if (expect_warning && (warning.find(std::string("'") + forced + "'") == std::string::npos ||
                           warning.find("OPENBLAS_CORETYPE=") == std::string::npos)) {
        std::printf("FAIL: the warning does not name the kernels and the fix\n");
        ++failures;
    }
    return failures == 0 ? 0 : 1;
}
