// A program a cudagap user might write first: shared by the consumer projects that build it
// against the installed package and against the source tree.
#include <gpu/gpu.hpp>
#if CONSUMER_HAS_BLAS
#include <gpu/blas.hpp>
#endif
#if CONSUMER_HAS_DNN
#include <gpu/dnn.hpp>
#endif

#include <cstdio>

int main()
{
    std::printf("cudagap %s, CUDA runtime %s\n", gpu::library_version().to_string().c_str(),
                gpu::runtime_version().to_string().c_str());
#if CONSUMER_HAS_BLAS
    std::printf("cuBLAS %s\n", gpu::blas::version().loaded.to_string().c_str());
#endif
#if CONSUMER_HAS_DNN
    std::printf("cuDNN %s\n", gpu::dnn::version().loaded.to_string().c_str());
#endif
    if (gpu::is_available()) {
        gpu::device_buffer<float> buffer(1024);
        buffer.fill_zero();
        std::printf("%d device(s); allocated and cleared %zu bytes\n", gpu::device_count(),
                    buffer.size_bytes());
    } else {
        std::printf("no GPU: %s\n", gpu::unavailable_reason().c_str());
    }
    std::printf("cudagap consumer ok\n");
    return 0;
}
