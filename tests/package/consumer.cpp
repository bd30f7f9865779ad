// A program a cudagap user might write first: shared by the consumer projects that build it
// against the installed package and against the source tree.
#include <gpu/gpu.hpp>
#if CONSUMER_HAS_BLAS
#include <gpu/blas.hpp>
#endif
#if CONSUMER_HAS_DNN
#include <gpu/dnn.hpp>
#endif
#if CONSUMER_HAS_NCCL
#include <gpu/nccl.hpp>
#endif
#if CONSUMER_HAS_NN
#include <gpu/nn.hpp>

#include <cmath>
#include <vector>
#endif
#if CONSUMER_HAS_TOOLS
#include <gpu/tools.hpp>

#include <cstddef>
#include <string>
#endif
#if CONSUMER_HAS_HOST_BLAS
#include <gpu/host_blas.hpp>

#include <vector>
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
#if CONSUMER_HAS_NCCL
    // The bootstrap of a job needs no GPU: a unique id, through its bytes.
    const gpu::nccl::unique_id id = gpu::nccl::unique_id::create();
    std::printf("NCCL %s, unique id of %zu bytes\n",
                gpu::nccl::version().loaded.to_string().c_str(), id.to_bytes().size());
    if (gpu::nccl::unique_id::from_bytes(id.to_bytes()) != id) {
        return 1;
    }
#endif
#if CONSUMER_HAS_NN
    // A layer registers PyTorch's parameters, initialised (on the host) within PyTorch's bounds.
    gpu::nn::parameters store(gpu::nn::mixed_precision::bf16());
    const gpu::nn::linear fc(store, "fc", 784, 10);
    const std::vector<float> initial = store.initial_values(42);
    std::printf("nn: %s, %zu parameters\n", fc.describe().c_str(), store.parameter_elements());
    const gpu::nn::parameter_info& weight = store.info("fc.weight");
    for (std::size_t i = weight.offset; i < weight.offset + weight.count; ++i) {
        if (std::abs(initial[i]) > 1.0 / std::sqrt(784.0)) {
            return 1;
        }
    }
    if (store.parameter_elements() != 7850) {
        return 1;
    }
#endif
#if CONSUMER_HAS_TOOLS
    const gpu::tools::vram_advice advice = gpu::tools::advise_vram(std::size_t{24} << 30);
    std::printf("VRAM advice for 24 GiB: %s, batch size %d\n",
                std::string(gpu::tools::to_string(advice.tier)).c_str(), advice.batch_size);
    if (advice.tier != gpu::tools::vram_tier::class_24gb) {
        return 1;
    }
#endif
#if CONSUMER_HAS_HOST_BLAS
    const std::vector<double> a{1, 2, 3, 4};
    std::vector<double> c(4);
    gpu::host_blas::gemm(gpu::matrix::row_major(a, 2, 2), gpu::matrix::row_major(a, 2, 2),
                         gpu::matrix::row_major(c, 2, 2));
    std::printf("CPU BLAS %s: [[1 2] [3 4]]^2 = [[%g %g] [%g %g]]\n",
                gpu::host_blas::library().to_string().c_str(), c[0], c[1], c[2], c[3]);
    if (c != std::vector<double>{7, 10, 15, 22}) {
        return 1;
    }
#endif
    if (gpu::is_available()) {
        const gpu::stream stream;
        gpu::device_buffer<float> buffer(1024, stream);
        buffer.fill_zero();
        std::printf("%d device(s); allocated and cleared %zu bytes\n", gpu::device_count(),
                    buffer.size_bytes());
    } else {
        std::printf("no GPU: %s\n", gpu::unavailable_reason().c_str());
    }
    std::printf("cudagap consumer ok\n");
    return 0;
}
