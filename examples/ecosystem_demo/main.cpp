// cudagap-demo: the article's "CUDA ecosystem status" (check_cuda_ecosystem) in C++.
// Prints whether CUDA is usable and why not, the versions of the runtime, driver, cuBLAS and
// cuDNN, and every GPU with its memory and compute capability. Exits 0 without a GPU too.
#include <gpu/blas.hpp>
#include <gpu/gpu.hpp>
#if CUDAGAP_DEMO_HAS_DNN
#include <gpu/dnn.hpp>
#endif

#include <cstdio>
#include <string>

namespace {

void rule(char c) { std::printf("%s\n", std::string(60, c).c_str()); }

void print_status()
{
    rule('=');
    std::printf("CUDA Ecosystem Status\n");
    rule('=');
    const bool available = gpu::is_available();
    std::printf("CUDA available: %s\n", available ? "yes" : "no");
    if (!available) {
        std::printf("  why: %s\n", gpu::unavailable_reason().c_str());
    }
    std::printf("CUDA runtime: %s (compiled against %s)\n",
                gpu::runtime_version().to_string().c_str(),
                gpu::compiled_runtime_version().to_string().c_str());
    const gpu::driver_info driver = gpu::driver_version();
    if (driver.installed()) {
        std::printf("CUDA driver: supports CUDA %s\n", driver.supported_cuda.to_string().c_str());
    } else {
        std::printf("CUDA driver: none (%s)\n", driver.reason.c_str());
    }
    const gpu::blas::version_info blas = gpu::blas::version();
    std::printf("cuBLAS: %s (compiled against %s)\n", blas.loaded.to_string().c_str(),
                blas.compiled.to_string().c_str());
#if CUDAGAP_DEMO_HAS_DNN
    const gpu::dnn::version_info dnn = gpu::dnn::version();
    std::printf("cuDNN: %s (compiled against %s, built for CUDA %s)\n",
                dnn.loaded.to_string().c_str(), dnn.compiled.to_string().c_str(),
                dnn.loaded_for_cuda.to_string().c_str());
#else
    std::printf("cuDNN: not built (cudagap was configured without cuDNN; set CUDNN_ROOT)\n");
#endif
    std::printf("GPU count: %d\n", gpu::device_count());
    for (const gpu::device& dev : gpu::devices()) {
        const gpu::device_properties props = dev.properties();
        std::printf("  GPU %d: %s\n", props.id, props.name.c_str());
        std::printf("    - Memory: %.1f GiB\n",
                    static_cast<double>(props.total_memory_bytes) / (1024.0 * 1024.0 * 1024.0));
        std::printf("    - Compute Capability: %s (%s)\n", props.capability.to_string().c_str(),
                    std::string(props.capability.architecture_name()).c_str());
    }
    rule('=');
}

} // namespace

int main()
{
    try {
        print_status();
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-demo: %s\n", e.what());
        return 1;
    }
}
