// Built against cudagap::cudagap while a component is missing: what was found must still link.
#include <gpu/device.hpp>

#include <cstdio>

int main()
{
    std::printf("CUDA available: %s\n", gpu::is_available() ? "yes" : "no");
    return 0;
}
