// The CPU baseline: GEMM through the standard Fortran BLAS interface (any BLAS), what that BLAS
// is (OpenBLAS's extension functions are looked up at run time, so another BLAS still links),
// and the warning for OpenBLAS's generic-kernel fallback.
#include <gpu/detail/enum_names.hpp>
#include <gpu/host_blas.hpp>

#include <algorithm>
#include <cctype>
#include <cstddef>
#include <fstream>
#include <thread>
#include <type_traits>

#if GPU_HOST_BLAS_HAS_BLAS
#include <dlfcn.h>

// The reference BLAS interface that every BLAS exports (and that FindBLAS checks for). The two
// trailing lengths are the hidden lengths of the CHARACTER arguments that gfortran passes; C
// implementations such as OpenBLAS ignore them, Fortran ones (the reference BLAS) need them.
extern "C" {
void sgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
            const float* alpha, const float* a, const int* lda, const float* b, const int* ldb,
            const float* beta, float* c, const int* ldc, std::size_t transa_length,
            std::size_t transb_length);
void dgemm_(const char* transa, const char* transb, const int* m, const int* n, const int* k,
            const double* alpha, const double* a, const int* lda, const double* b, const int* ldb,
            const double* beta, double* c, const int* ldc, std::size_t transa_length,
            std::size_t transb_length);
}
#endif

namespace gpu::host_blas {

namespace {

std::string lower(std::string_view text)
{
    std::string result(text);
    std::transform(result.begin(), result.end(), result.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    return result;
}

// OpenBLAS's kernels that use AVX2 and FMA (the last three also AVX-512): anything else on a
// CPU that has them is a fallback to an older CPU's kernels.
bool is_avx2_class_core(const std::string& core)
{
    static constexpr std::string_view avx2_cores[] = {"haswell",  "zen",        "excavator",
                                                      "skylakex", "cooperlake", "sapphirerapids"};
    return std::find(std::begin(avx2_cores), std::end(avx2_cores), core) != std::end(avx2_cores);
}

std::string cpu_model_name()
{
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line)) {
        if (line.rfind("model name", 0) == 0) {
            const auto colon = line.find(':');
            if (colon != std::string::npos) {
                const auto start = line.find_first_not_of(' ', colon + 1);
                return start == std::string::npos ? std::string() : line.substr(start);
            }
        }
    }
    return {};
}

#if GPU_HOST_BLAS_HAS_BLAS
// OpenBLAS's extensions, found at run time in whatever library provides BLAS (Debian's
// alternatives can swap libblas.so.3 for another BLAS after the build).
template <class Function>
Function* find_function(const char* name) noexcept
{
    return reinterpret_cast<Function*>(dlsym(RTLD_DEFAULT, name));
}
#endif

template <class T>
void naive_loop(gpu::matrix::matrix_view<const T> a, gpu::matrix::matrix_view<const T> b,
                gpu::matrix::matrix_view<T> c, T alpha, T beta)
{
    const auto at = [](const auto& view, std::int64_t i, std::int64_t j) -> auto&
    {
        return view.order() == gpu::matrix::layout::row_major
                   ? view.data()[i * view.leading_dimension() + j]
                   : view.data()[i + j * view.leading_dimension()];
    };
    for (std::int64_t i = 0; i < c.rows(); ++i) {
        for (std::int64_t j = 0; j < c.cols(); ++j) {
            T sum = 0;
            for (std::int64_t p = 0; p < a.cols(); ++p) {
                sum += at(a, i, p) * at(b, p, j);
            }
            T& out = at(c, i, j);
            // As in BLAS: with beta = 0, C is not read (NaN in it does not propagate).
            out = beta == T(0) ? alpha * sum : alpha * sum + beta * out;
        }
    }
}

template <class T>
void checked_naive_loop(gpu::matrix::matrix_view<const T> a, gpu::matrix::matrix_view<const T> b,
                        gpu::matrix::matrix_view<T> c, T alpha, T beta)
{
    static_cast<void>(gpu::matrix::plan_gemm(a, b, c, "gpu::host_blas::naive_gemm"));
    naive_loop(a, b, c, alpha, beta);
}

template <class T>
void blas_gemm(gpu::matrix::matrix_view<const T> a, gpu::matrix::matrix_view<const T> b,
               gpu::matrix::matrix_view<T> c, T alpha, T beta)
{
    const gpu::matrix::gemm_plan plan = gpu::matrix::plan_gemm(a, b, c, "gpu::host_blas::gemm");
#if GPU_HOST_BLAS_HAS_BLAS
    if (plan.empty()) {
        return;
    }
    const char transa = gpu::matrix::to_char(plan.op_first);
    const char transb = gpu::matrix::to_char(plan.op_second);
    // plan_gemm has checked that every size and leading dimension fits an int.
    const int m = static_cast<int>(plan.m);
    const int n = static_cast<int>(plan.n);
    const int k = static_cast<int>(plan.k);
    const int lda = static_cast<int>(plan.ld_first);
    const int ldb = static_cast<int>(plan.ld_second);
    const int ldc = static_cast<int>(plan.ldc);
    auto* const routine = [] {
        if constexpr (std::is_same_v<T, float>) {
            return &sgemm_;
        } else {
            return &dgemm_;
        }
    }();
    routine(&transa, &transb, &m, &n, &k, &alpha, plan.first(a.data(), b.data()), &lda,
            plan.second(a.data(), b.data()), &ldb, &beta, c.data(), &ldc, 1, 1);
#else
    static_cast<void>(plan);
    naive_loop(a, b, c, alpha, beta);
#endif
}

} // namespace

constexpr gpu::detail::enum_name<implementation> implementation_names[] = {
    {implementation::openblas, "OpenBLAS"},
    {implementation::other_blas, "BLAS"},
    {implementation::naive, "naive loop"}};
std::string_view to_string(implementation kind) noexcept
{
    return gpu::detail::name_of(implementation_names, kind);
}

cpu_features detect_cpu()
{
    cpu_features cpu;
    cpu.model = cpu_model_name();
    cpu.logical_cpus = std::thread::hardware_concurrency();
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    cpu.avx2 = __builtin_cpu_supports("avx2") != 0;
    cpu.fma = __builtin_cpu_supports("fma") != 0;
    cpu.avx512f = __builtin_cpu_supports("avx512f") != 0;
    cpu.avx512bw = __builtin_cpu_supports("avx512bw") != 0;
    cpu.avx512dq = __builtin_cpu_supports("avx512dq") != 0;
    cpu.avx512vl = __builtin_cpu_supports("avx512vl") != 0;
#endif
    return cpu;
}

std::string library_info::to_string() const
{
    if (kind == implementation::naive) {
        return name + ", 1 thread";
    }
    std::string text = name + " (";
    if (!core.empty()) {
        text += core + " kernels, ";
    }
    text += threads > 0 ? std::to_string(threads) + (threads == 1 ? " thread" : " threads")
                        : std::string("threads unknown");
    if (!path.empty()) {
        text += ", " + path;
    }
    return text + ")";
}

library_info library()
{
    library_info info;
#if GPU_HOST_BLAS_HAS_BLAS
    info.kind = implementation::other_blas;
    info.name = "BLAS";
    Dl_info where{};
    if (dladdr(reinterpret_cast<void*>(&sgemm_), &where) != 0 && where.dli_fname != nullptr) {
        info.path = where.dli_fname;
    }
    using text_function = char*();
    using int_function = int();
    auto* const get_config = find_function<text_function>("openblas_get_config");
    auto* const get_corename = find_function<text_function>("openblas_get_corename");
    auto* const get_threads = find_function<int_function>("openblas_get_num_threads");
    if (get_config != nullptr && get_corename != nullptr) {
        info.kind = implementation::openblas;
        const char* config = get_config();
        info.config = config == nullptr ? "" : config;
        // The configuration starts with "OpenBLAS <version>".
        const auto space = info.config.find(' ', info.config.find(' ') + 1);
        info.name =
            info.config.rfind("OpenBLAS", 0) == 0 ? info.config.substr(0, space) : "OpenBLAS";
        const char* core = get_corename();
        info.core = core == nullptr ? "" : core;
    }
    if (get_threads != nullptr) {
        info.threads = get_threads();
    }
#else
    info.kind = implementation::naive;
    info.name = "naive loop (no BLAS found at build time)";
    info.threads = 1;
#endif
    return info;
}

std::string kernel_warning(std::string_view core, const cpu_features& cpu)
{
    const std::string name = lower(core);
    if (name.empty() || is_avx2_class_core(name) || !cpu.has_avx2_kernels()) {
        return {};
    }
    const bool avx512 = cpu.has_avx512_kernels();
    const std::string target = avx512 ? "SkylakeX" : "Haswell";
    return "OpenBLAS runs its generic '" + std::string(core) + "' kernels on a CPU with " +
           (avx512 ? "AVX-512" : "AVX2 and FMA") +
           ", so its GEMM is several times slower than this CPU allows (about 10x for SGEMM on an "
           "AVX-512 Xeon): OpenBLAS did not recognise the CPU model" +
           (cpu.model.empty() ? std::string() : " '" + cpu.model + "'") +
           ", as happens in virtual machines and on CPUs newer than the OpenBLAS release (Debian "
           "12's 0.3.21 picks Prescott on recent Xeons). Fix: set OPENBLAS_CORETYPE=" +
           target +
           " in the environment before the program starts (OpenBLAS reads it when it loads), "
           "e.g. `OPENBLAS_CORETYPE=" +
           target + " ./program`";
}

std::string kernel_warning()
{
    const library_info info = library();
    if (info.kind != implementation::openblas) {
        return {};
    }
    return kernel_warning(info.core, detect_cpu());
}

void gemm(gpu::matrix::matrix_view<const float> a, gpu::matrix::matrix_view<const float> b,
          gpu::matrix::matrix_view<float> c, float alpha, float beta)
{
    blas_gemm(a, b, c, alpha, beta);
}

void gemm(gpu::matrix::matrix_view<const double> a, gpu::matrix::matrix_view<const double> b,
          gpu::matrix::matrix_view<double> c, double alpha, double beta)
{
    blas_gemm(a, b, c, alpha, beta);
}

void naive_gemm(gpu::matrix::matrix_view<const float> a, gpu::matrix::matrix_view<const float> b,
                gpu::matrix::matrix_view<float> c, float alpha, float beta)
{
    checked_naive_loop(a, b, c, alpha, beta);
}

void naive_gemm(gpu::matrix::matrix_view<const double> a, gpu::matrix::matrix_view<const double> b,
                gpu::matrix::matrix_view<double> c, double alpha, double beta)
{
    checked_naive_loop(a, b, c, alpha, beta);
}

} // namespace gpu::host_blas
