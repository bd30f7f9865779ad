// The compiled half of gpu::blas::gemm: the cuBLAS call with the compute type the math mode
// asks for, errors that name the GEMM, and the checks a handle's profile asks for.
#include <gpu/blas/error.hpp>
#include <gpu/blas/gemm.hpp>
#include <gpu/call_checks.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/numerics.hpp>
#include <gpu/nvtx.hpp>

#include "library_types.hpp"

#include <cublas_v2.h>

#include <cctype>
#include <stdexcept>
#include <string>

namespace gpu::blas::detail {

namespace {

cublasComputeType_t compute_type(element_type input, math_mode mode) noexcept
{
    const bool pedantic = mode == math_mode::strict_fp32;
    switch (input) {
    case element_type::fp64: return pedantic ? CUBLAS_COMPUTE_64F_PEDANTIC : CUBLAS_COMPUTE_64F;
    case element_type::fp32:
        if (mode == math_mode::tf32) {
            return CUBLAS_COMPUTE_32F_FAST_TF32;
        }
        return pedantic ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
    case element_type::fp16:
    case element_type::bf16: break;
    }
    // FP16 and BF16 inputs accumulate in FP32 (on tensor cores).
    return pedantic ? CUBLAS_COMPUTE_32F_PEDANTIC : CUBLAS_COMPUTE_32F;
}

// The math mode a GEMM computes with, from the handle's record of cuBLAS's mode; modes outside
// math_mode (read from an adopted handle) count as the default.
math_mode gemm_math(cublasMath_t mode) noexcept
{
    switch (static_cast<int>(mode) & 0xf) {
    case CUBLAS_PEDANTIC_MATH: return math_mode::strict_fp32;
    case CUBLAS_TF32_TENSOR_OP_MATH: return math_mode::tf32;
    default: return math_mode::default_math;
    }
}

std::string describe_call(const gemm_call& call, std::string_view compute)
{
    const matrix::gemm_plan& p = call.plan;
    std::string text = std::string(to_string(call.input)) + " inputs, " +
                       std::string(to_string(call.output)) + " output, " + std::string(compute) +
                       ", column-major m=" + std::to_string(p.m) + " n=" + std::to_string(p.n) +
                       " k=" + std::to_string(p.k) + " op " + matrix::to_char(p.op_first) +
                       matrix::to_char(p.op_second) + " ld " + std::to_string(p.ld_first) + "/" +
                       std::to_string(p.ld_second) + "/" + std::to_string(p.ldc);
    if (call.batched) {
        text += ", batch " + std::to_string(p.batch_count);
    }
    return text;
}

// The one cuBLAS call of a GEMM, queued on the stream @p handle is bound to:
// cublasGemmEx, or cublasGemmStridedBatchedEx for a strided batch. A failed status throws the
// blas_error that describes the GEMM.
void enqueue_gemm(cublasHandle_t handle, const gemm_call& call, math_mode mode)
{
    const matrix::gemm_plan& p = call.plan;
    const cublasOperation_t op_a = cublas_operation(p.op_first);
    const cublasOperation_t op_b = cublas_operation(p.op_second);
    const cublasComputeType_t compute = compute_type(call.input, mode);
    const cudaDataType ab_type = cuda_data_type(call.input);
    const cudaDataType c_type = cuda_data_type(call.output);
    // plan_gemm has checked that every size, leading dimension and the batch count fit an int.
    const int m = static_cast<int>(p.m);
    const int n = static_cast<int>(p.n);
    const int k = static_cast<int>(p.k);
    const int lda = static_cast<int>(p.ld_first);
    const int ldb = static_cast<int>(p.ld_second);
    const int ldc = static_cast<int>(p.ldc);
    cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
    const char* api = nullptr;
    if (call.batched) {
        api = "cublasGemmStridedBatchedEx";
        status = cublasGemmStridedBatchedEx(
            handle, op_a, op_b, m, n, k, call.alpha, call.first, ab_type, lda, p.stride_first,
            call.second, ab_type, ldb, p.stride_second, call.beta, call.c, c_type, ldc, p.stride_c,
            static_cast<int>(p.batch_count), compute, CUBLAS_GEMM_DEFAULT);
    } else {
        api = "cublasGemmEx";
        status = cublasGemmEx(handle, op_a, op_b, m, n, k, call.alpha, call.first, ab_type, lda,
                              call.second, ab_type, ldb, call.beta, call.c, c_type, ldc, compute,
                              CUBLAS_GEMM_DEFAULT);
    }
    if (status != CUBLAS_STATUS_SUCCESS) [[unlikely]] {
        gpu::detail::throw_error(status, api, std::source_location::current(),
                                 describe_call(call, compute_type_name(call.input, mode)));
    }
}

} // namespace

std::string_view compute_type_name(element_type input, math_mode mode) noexcept
{
    switch (compute_type(input, mode)) {
    case CUBLAS_COMPUTE_64F: return "CUBLAS_COMPUTE_64F";
    case CUBLAS_COMPUTE_64F_PEDANTIC: return "CUBLAS_COMPUTE_64F_PEDANTIC";
    case CUBLAS_COMPUTE_32F_FAST_TF32: return "CUBLAS_COMPUTE_32F_FAST_TF32";
    case CUBLAS_COMPUTE_32F_PEDANTIC: return "CUBLAS_COMPUTE_32F_PEDANTIC";
    default: return "CUBLAS_COMPUTE_32F";
    }
}

std::string range_name(const matrix::gemm_plan& plan, gpu::element_type input,
                       std::string_view detail)
{
    const std::int64_t rows = plan.swapped ? plan.n : plan.m;
    const std::int64_t columns = plan.swapped ? plan.m : plan.n;
    std::string type(gpu::to_string(input));
    for (char& c : type) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    std::string name = "gemm " + std::to_string(rows) + "x" + std::to_string(columns) + "x" +
                       std::to_string(plan.k) + " " + type;
    if (!detail.empty()) {
        name += ' ';
        name += detail;
    }
    return name;
}

void run_gemm(handle& h, const gemm_call& call, const char* function)
{
    h.require_handle(function);
    if (call.plan.empty()) {
        return;
    }
    // alpha and beta are host scalars. A handle adopted with from_native_handle (or changed
    // through get(), then refreshed) may be in device pointer mode, where cuBLAS would read them
    // as device addresses: an illegal access that ruins the context. Say so instead. Both modes
    // come from the handle's record: no cuBLAS call but the GEMM itself.
    GPU_EXPECTS(!h.device_pointer_mode_, std::logic_error, function,
                ": the cuBLAS handle is in device pointer mode, but alpha and beta are host "
                "values; set CUBLAS_POINTER_MODE_HOST with cublasSetPointerMode, then call "
                "refresh_settings()");
    const gpu::device device = h.device();
    // The checks synchronise after the GEMM: refused before it is queued, not breaking a capture.
    const gpu::detail::checked_call checked(
        {.synchronous_checks = h.synchronous_checks(), .check_numerics = h.check_numerics()},
        h.stream(), function, device.id());
    const math_mode mode = gemm_math(h.math_);
    // cuBLAS runs a handle's work on the device current at the call: the handle's, here, and
    // the caller's again after (the numerics check's kernel is launched there too).
    const scoped_device on(device);
    const nvtx::range range(
        [&] { return range_name(call.plan, call.input, call.batched ? "batched" : ""); },
        nvtx::colours::compute);
    enqueue_gemm(h.get(), call, mode);
    // Column-major C: batch_count blocks stride_c apart, each n columns of m contiguous
    // elements, ldc apart.
    const matrix::gemm_plan& p = call.plan;
    checked.finish(call.c, call.output,
                   {.batch = p.batch_count,
                    .batch_stride = p.stride_c,
                    .runs = p.n,
                    .run_length = p.m,
                    .run_stride = p.ldc},
                   [&] { return describe_call(call, compute_type_name(call.input, mode)); });
}

} // namespace gpu::blas::detail
