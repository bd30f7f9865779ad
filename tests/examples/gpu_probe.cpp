// Tells the example tests whether this machine has a usable GPU, asking the CUDA runtime
// directly (not through cudagap, whose programs are what the tests check). Prints "gpu" or
// "none".
//
// With --exercise it also allocates, fills and frees device memory and waits for the device,
// and exits 1 naming the first call that failed (0 when all worked). scripts/gpu-check runs it
// under compute-sanitizer to learn whether the tool can work on the host at all: on some
// virtual machines it cannot ("Device not supported", then error 999 at the first allocation),
// and the sanitizer steps are then skipped with that reason instead of failing cudagap's tests.
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

namespace {

bool succeeded(cudaError_t status, const char* call)
{
    if (status != cudaSuccess) {
        std::printf("error: %s: %s (%d)\n", call, cudaGetErrorString(status),
                    static_cast<int>(status));
    }
    return status == cudaSuccess;
}

int exercise()
{
    constexpr std::size_t bytes = std::size_t{1} << 20;
    void* memory = nullptr;
    if (!succeeded(cudaMalloc(&memory, bytes), "cudaMalloc")) {
        return 1;
    }
    const bool worked = succeeded(cudaMemset(memory, 0x5a, bytes), "cudaMemset") &&
                        succeeded(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    return succeeded(cudaFree(memory), "cudaFree") && worked ? 0 : 1;
}

} // namespace

int main(int argc, char* argv[])
{
    const bool exercising = argc == 2 && std::strcmp(argv[1], "--exercise") == 0;
    if (argc > 1 && !exercising) {
        std::fprintf(stderr, "usage: cudagap_gpu_probe [--exercise]\n");
        return 2;
    }
    int count = 0;
    const bool usable = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    std::puts(usable ? "gpu" : "none");
    if (!exercising) {
        return 0;
    }
    return usable ? exercise() : 1;
}
