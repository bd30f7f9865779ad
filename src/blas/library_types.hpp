// cuBLAS's names for the wrapper's element types and compute types, for the compiled parts that
// call cuBLAS (gemm.cpp) and cuBLASLt (lt.cpp), and the name both give a GEMM's NVTX range.
// Private to src/blas.
#pragma once

#include <gpu/matrix/gemm_plan.hpp>
#include <gpu/element_type.hpp>

#include <cublas_api.h>
#include <library_types.h>

#include <string>
#include <string_view>

namespace gpu::blas::detail {

// The cudaDataType of an element type.
[[nodiscard]] constexpr cudaDataType cuda_data_type(gpu::element_type type) noexcept
{
    switch (type) {
    case gpu::element_type::fp64: return CUDA_R_64F;
    case gpu::element_type::fp16: return CUDA_R_16F;
    case gpu::element_type::bf16: return CUDA_R_16BF;
    case gpu::element_type::fp32: break;
    }
    return CUDA_R_32F;
}

// cuBLAS's operation for a planned operand: transposed or not (plan_gemm says which).
[[nodiscard]] constexpr cublasOperation_t cublas_operation(matrix::operation op) noexcept
{
    return op == matrix::operation::none ? CUBLAS_OP_N : CUBLAS_OP_T;
}

// The compute type of a cuBLASLt matmul on inputs of @p input: FP32 accumulation always (FP16
// and BF16 inputs on tensor cores), TF32 tensor cores for FP32 inputs when allowed.
[[nodiscard]] constexpr cublasComputeType_t lt_compute_type(gpu::element_type input,
                                                            bool allow_tf32) noexcept
{
    return input == gpu::element_type::fp32 && allow_tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32
                                                          : CUBLAS_COMPUTE_32F;
}

// The NVTX range of a GEMM, in the caller's terms (rows x columns x inner of C = A B) and the
// input type, then @p detail when not empty: `gemm 4096x4096x4096 bf16`,
// `gemm 64x128x784 fp32 relu_bias`. Built only while ranges are on (defined in gemm.cpp).
[[nodiscard]] std::string range_name(const matrix::gemm_plan& plan, gpu::element_type input,
                                     std::string_view detail);

} // namespace gpu::blas::detail
