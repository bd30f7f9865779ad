// Kernels for the gpu::launch and occupancy tests (launch_kernels.cu), handed out as pointers
// so that the C++20 tests launch them through gpu::launch, with no <<<>>>. Plain types only, so
// that the .cu file needs none of cudagap's C++20 headers.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gpu::test {

/// y[i] = a * x[i] + y[i] for i < n, with a grid-stride loop.
using saxpy_kernel = void (*)(float a, const float* x, float* y, std::size_t n);
/// out[0] = the values of a 64-bit and a 16-bit parameter, to check the argument conversions.
using widths_kernel = void (*)(std::uint64_t wide, std::int16_t narrow, std::uint64_t* out);
/// Writes the launch's grid and block (x, y, z each) to out[0..5], from one thread.
using shape_kernel = void (*)(unsigned* out);
/// Sets *flag to 1 (a kernel without parameters writes to a global).
using no_parameters_kernel = void (*)();

saxpy_kernel saxpy();
widths_kernel widths();
shape_kernel shape();
no_parameters_kernel raise_flag();
/// Reads the flag that raise_flag sets (0 before); resets it to 0 when @p reset.
int read_flag(bool reset);

} // namespace gpu::test
