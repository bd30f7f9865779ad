// The element formats as the kernels' launchers take them: plain ints, so that the launchers'
// headers and the .cu files need no cudagap header and nvcc compiles them in its default
// dialect. The values are gpu::element_type's (element_type.cpp checks that they agree), so a
// caller passes static_cast<int>(type). Shared by the blas and nn kernels.
#pragma once

namespace gpu::detail::kernels {

enum element_code : int { fp32 = 0, fp64 = 1, fp16 = 2, bf16 = 3 };

} // namespace gpu::detail::kernels
