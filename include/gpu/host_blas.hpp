/// @file host_blas.hpp
/// @brief The CPU baseline (`cudagap::host_blas`): a row-major GEMM on a real CPU BLAS, what
/// that BLAS is and what it thinks the CPU is, and a warning when it runs slow generic kernels.
///
/// A CPU-versus-GPU comparison is only honest against a tuned CPU library. This component
/// links whatever `find_package(BLAS)` finds (OpenBLAS on Debian and Ubuntu) and calls its
/// standard Fortran interface (`sgemm_`, `dgemm_`), so any BLAS works. When CMake found no
/// BLAS, `gemm` runs `naive_gemm` instead, and `library()` says so: a naive loop is never
/// presented as a BLAS.
///
/// @code
/// const auto blas = gpu::host_blas::library();
/// std::printf("CPU: %s\n", blas.to_string().c_str());   // OpenBLAS 0.3.21 ..., 16 threads
/// if (const auto warning = gpu::host_blas::kernel_warning(); !warning.empty()) {
///     std::printf("warning: %s\n", warning.c_str());      // generic kernels on an AVX-512 CPU
/// }
/// std::vector<float> a(m * k), b(k * n), c(m * n);
/// gpu::host_blas::gemm(gpu::matrix::row_major(std::as_const(a), m, k),
///                      gpu::matrix::row_major(std::as_const(b), k, n),
///                      gpu::matrix::row_major(c, m, n));
/// @endcode
///
/// The arguments are `gpu::matrix::matrix_view`s and are checked exactly as `gpu::blas::gemm`
/// checks them (`gpu::matrix::plan_gemm`). This component needs no GPU and no CUDA library.
#pragma once

#include <gpu/matrix/gemm_plan.hpp>
#include <gpu/matrix/matrix.hpp>

#include <string>
#include <string_view>

namespace gpu::host_blas {

/// @brief Which implementation `gemm` runs.
enum class implementation {
    openblas,   ///< OpenBLAS (its extension functions were found at run time)
    other_blas, ///< a BLAS that is not OpenBLAS (reference BLAS, MKL, BLIS, ...)
    naive,      ///< no BLAS was found when cudagap was built: `naive_gemm` stands in
};

/// @brief `OpenBLAS`, `BLAS` or `naive loop`.
[[nodiscard]] std::string_view to_string(implementation kind) noexcept;

/// @brief What the CPU offers to a BLAS, as the compiler's CPU detection sees it.
struct cpu_features {
    std::string model{};       ///< the CPU's name (`model name` of /proc/cpuinfo), empty if unknown
    unsigned logical_cpus = 0; ///< hardware threads (`std::thread::hardware_concurrency`)
    bool avx2 = false;         ///< 256-bit integer and float vectors
    bool fma = false;      ///< fused multiply-add (with AVX2: what OpenBLAS's Haswell kernels use)
    bool avx512f = false;  ///< AVX-512 foundation
    bool avx512bw = false; ///< AVX-512 byte and word
    bool avx512dq = false; ///< AVX-512 doubleword and quadword
    bool avx512vl = false; ///< AVX-512 vector length

    /// @brief AVX2 and FMA: enough for OpenBLAS's Haswell kernels.
    [[nodiscard]] bool has_avx2_kernels() const noexcept { return avx2 && fma; }
    /// @brief AVX-512 F, BW, DQ and VL: enough for OpenBLAS's SkylakeX kernels.
    [[nodiscard]] bool has_avx512_kernels() const noexcept
    {
        return avx512f && avx512bw && avx512dq && avx512vl;
    }
};

/// @brief Reads this machine's CPU features (`__builtin_cpu_supports`; all false on non-x86).
[[nodiscard]] cpu_features detect_cpu();

/// @brief The BLAS behind `gemm`, read at run time.
struct library_info {
    implementation kind = implementation::naive; ///< OpenBLAS, another BLAS, or the naive loop
    std::string
        name{}; ///< `OpenBLAS 0.3.21`, `BLAS`, or `naive loop (no BLAS found at build time)`
    std::string path{};   ///< the shared library that provides `sgemm_`, empty when static or naive
    std::string config{}; ///< OpenBLAS's build configuration (`openblas_get_config`), else empty
    /// The kernels OpenBLAS chose for this CPU (`openblas_get_corename`), e.g. `Haswell`.
    std::string core{};
    int threads = 0; ///< threads it uses (`openblas_get_num_threads`); 1 for naive, 0 when unknown

    /// @brief One line for reports, e.g. `OpenBLAS 0.3.21 (Haswell kernels, 16 threads,
    /// /usr/lib/x86_64-linux-gnu/libopenblas.so.0)`.
    [[nodiscard]] std::string to_string() const;

    /// @brief The old name of `to_string()`.
    [[deprecated("use to_string()")]] [[nodiscard]] std::string describe() const
    {
        return to_string();
    }
};

/// @brief Which BLAS `gemm` calls, its kernels and threads. Never throws for a missing BLAS.
[[nodiscard]] library_info library();

/// @brief The warning for OpenBLAS kernels @p core on a CPU with @p cpu, or an empty string.
///
/// Warns when the CPU has AVX2 and FMA (or AVX-512) but OpenBLAS runs kernels for an older
/// CPU (Prescott, Core2, Nehalem, Sandybridge, ...): it did not recognise the CPU model, which
/// happens in virtual machines and on CPUs newer than the OpenBLAS release (Debian 12's OpenBLAS
/// 0.3.21 picks Prescott on recent Xeons), and GEMM then runs several times slower (about 10x
/// for SGEMM on an AVX-512 Xeon). The warning names the fix: `OPENBLAS_CORETYPE=SkylakeX` (with
/// AVX-512) or `OPENBLAS_CORETYPE=Haswell` in the environment before the program starts.
/// @param core what `openblas_get_corename` returned (case does not matter)
/// @param cpu the CPU's features
[[nodiscard]] std::string kernel_warning(std::string_view core, const cpu_features& cpu);

/// @brief The warning for the BLAS linked into this program on this CPU, or an empty string
/// (always empty for a BLAS other than OpenBLAS, which reports no kernel choice).
[[nodiscard]] std::string kernel_warning();

/// @brief `c = alpha·a·b + beta·c` in single precision on the CPU BLAS (or `naive_gemm` when
/// there is none), with the layouts of the views (see `gpu::matrix::plan_gemm`).
///
/// When @p beta is 0, `c` is not read (NaN in it does not propagate), as in BLAS.
/// @throws std::invalid_argument for every shape error `gpu::matrix::plan_gemm` names, with the
/// function name `gpu::host_blas::gemm`
void gemm(gpu::matrix::matrix_view<const float> a, gpu::matrix::matrix_view<const float> b,
          gpu::matrix::matrix_view<float> c, float alpha = 1.0F, float beta = 0.0F);

/// @brief `c = alpha·a·b + beta·c` in double precision on the CPU BLAS (or `naive_gemm`).
/// @throws std::invalid_argument for every shape error `gpu::matrix::plan_gemm` names
void gemm(gpu::matrix::matrix_view<const double> a, gpu::matrix::matrix_view<const double> b,
          gpu::matrix::matrix_view<double> c, double alpha = 1.0, double beta = 0.0);

/// @brief The naive triple loop (one thread, no blocking, no vectorisation hints): the
/// stand-in when no BLAS was found, and a way to show what a BLAS is worth. Same checks and
/// semantics as `gemm`; accumulates in the element type.
/// @throws std::invalid_argument for every shape error `gpu::matrix::plan_gemm` names
void naive_gemm(gpu::matrix::matrix_view<const float> a, gpu::matrix::matrix_view<const float> b,
                gpu::matrix::matrix_view<float> c, float alpha = 1.0F, float beta = 0.0F);

/// @brief The naive triple loop in double precision.
/// @throws std::invalid_argument for every shape error `gpu::matrix::plan_gemm` names
void naive_gemm(gpu::matrix::matrix_view<const double> a, gpu::matrix::matrix_view<const double> b,
                gpu::matrix::matrix_view<double> c, double alpha = 1.0, double beta = 0.0);

} // namespace gpu::host_blas
