// Tells the example tests whether this machine has a usable GPU, asking the CUDA runtime
// directly (not through cudagap, whose programs are what the tests check). Prints "gpu" or
// "none".
#include <cuda_runtime_api.h>

#include <cstdio>

int main()
{
    int count = 0;
    const bool usable = cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
    std::puts(usable ? "gpu" : "none");
    return 0;
}
