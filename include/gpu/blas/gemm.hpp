/// @file gemm.hpp
/// @brief `gpu::blas::gemm` and `gemm_strided_batched`: `C = alpha·A·B + beta·C` on cuBLAS
/// (`cublasGemmEx`, `cublasGemmStridedBatchedEx`) for FP32, FP64, FP16 and BF16, in either
/// layout, with every shape checked before cuBLAS is called.
///
/// | inputs | output | accumulation (compute type) |
/// |---|---|---|
/// | `float` | `float` | FP32 (`CUBLAS_COMPUTE_32F`), TF32 tensor cores with `math_mode::tf32` |
/// | `double` | `double` | FP64 (`CUBLAS_COMPUTE_64F`) |
/// | `__half` | `__half` or `float` | FP32 on tensor cores (`CUBLAS_COMPUTE_32F`) |
/// | `__nv_bfloat16` | `__nv_bfloat16` or `float` | FP32 on tensor cores (`CUBLAS_COMPUTE_32F`) |
///
/// With `math_mode::tf32` the FP32 row's compute type is `CUBLAS_COMPUTE_32F_FAST_TF32`; with
/// `math_mode::strict_fp32` every row uses the `_PEDANTIC` compute type.
///
/// What a call adds to `cublasGemmEx` on the host: the shape checks of `plan_gemm` and the
/// handle's record of its math and pointer modes (no other cuBLAS or CUDA call; with a
/// profile's `synchronous_checks` or `check_numerics` on, those checks follow). `bench/overhead`
/// measures it: cudagap `gemm` against a raw `cublasGemmEx` on the same handle, host time per
/// call (case `GEMM launch FP32 64x64x64`; docs/precisions.md says where the numbers appear).
///
/// @code
/// gpu::blas::handle h(stream);                                 // a, b, c live on `stream` too
/// gpu::blas::gemm(h, gpu::matrix::row_major(a, m, k), gpu::matrix::row_major(b, k, n),
///                 gpu::matrix::row_major(c, m, n));              // c = a·b, row-major
/// gpu::blas::gemm(h, A.transposed(), B, C, 2.0F, 1.0F);        // C = 2·Aᵀ·B + C
/// @endcode
#pragma once

#include <gpu/matrix/gemm_plan.hpp>
#include <gpu/blas/handle.hpp>
#include <gpu/matrix/matrix.hpp>
#include <gpu/blas/types.hpp>
#include <gpu/numerics.hpp> // what check_numerics throws
#include <gpu/stream.hpp>

#include <string_view>
#include <type_traits>

namespace gpu::blas {

/// @brief The output types a GEMM on inputs of type @p In can write: the same type, or `float`
/// for FP16 and BF16 inputs (no rounding of the FP32 accumulator).
template <class In, class Out>
concept gemm_output_for =
    blas_element<In> && !std::is_const_v<Out> &&
    (std::is_same_v<In, Out> || ((std::is_same_v<In, __half> ||
                                  std::is_same_v<In, __nv_bfloat16>)&&std::is_same_v<Out, float>));

/// @brief A supported GEMM: A and B of the same element type (either may be `const`), C one of
/// its output types.
template <class TA, class TB, class TC>
concept gemm_types = std::is_same_v<std::remove_const_t<TA>, std::remove_const_t<TB>> &&
    gemm_output_for<std::remove_const_t<TA>, TC>;

namespace detail {

/// @brief Everything the compiled part needs for one `cublasGemmEx` or
/// `cublasGemmStridedBatchedEx` call, without the element types in the signature.
struct gemm_call {
    matrix::gemm_plan plan{};                 ///< the checked column-major call
    const void* first = nullptr;              ///< cuBLAS's A
    const void* second = nullptr;             ///< cuBLAS's B
    void* c = nullptr;                        ///< C
    element_type input = element_type::fp32;  ///< type of A and B
    element_type output = element_type::fp32; ///< type of C
    const void* alpha = nullptr;              ///< host scalar of the compute type
    const void* beta = nullptr;               ///< host scalar of the compute type
    bool batched = false;                     ///< call the strided-batched routine
};

/// @brief Runs the call on the handle's stream, then the checks the handle asks for.
void run_gemm(handle& h, const gemm_call& call, const char* function);

/// @brief The name of the compute type `run_gemm` uses for @p input under @p mode.
[[nodiscard]] std::string_view compute_type_name(element_type input, math_mode mode) noexcept;

template <class TA, class TB, class TC>
void gemm(handle& h, const matrix::matrix_view<TA>& a, const matrix::matrix_view<TB>& b,
          const matrix::matrix_view<TC>& c, scalar_t<std::remove_const_t<TA>> alpha,
          scalar_t<std::remove_const_t<TA>> beta, const matrix::gemm_plan& plan, bool batched,
          const char* function)
{
    using input = std::remove_const_t<TA>;
    const void* pa = a.data();
    const void* pb = b.data();
    run_gemm(h,
             gemm_call{plan, plan.first(pa, pb), plan.second(pa, pb), c.data(),
                       element_type_of<input>, element_type_of<TC>, &alpha, &beta, batched},
             function);
}

} // namespace detail

/// @brief `c = alpha·a·b + beta·c` on the handle's stream.
///
/// The views say the layouts (`row_major` / `column_major`, or `transposed()` for a transpose);
/// cudagap maps them onto cuBLAS's column-major convention. When @p beta is 0, `c` is not read.
/// Views carry no stream, so the handle's decides: make the handle on the buffers' stream (as
/// below), or order the streams that wrote `a`, `b` and `c` before this call.
/// @param h the handle: its stream, math mode and checks apply
/// @param a the left operand, m x k, in device memory
/// @param b the right operand, k x n, in device memory
/// @param c the result, m x n, in device memory; must not overlap `a` or `b`
/// @param alpha scales the product (`double` for `double` data, else `float`)
/// @param beta scales the old `c`
/// @throws std::invalid_argument for bad shapes, named (see `plan_gemm`), before cuBLAS is called
/// @throws std::logic_error on an empty handle, or one in device pointer mode (adopted so, or
/// set through `get()` and refreshed: `alpha` and `beta` are host values)
/// @throws gpu::blas::blas_error when cuBLAS fails (with the status name and a hint)
/// @throws gpu::cuda_error with `synchronous_checks` on, when the work fails
/// @throws gpu::numerics_error with `check_numerics` on, when `c` holds NaN or Inf
template <class TA, class TB, class TC>
requires gemm_types<TA, TB, TC>
void gemm(handle& h, matrix::matrix_view<TA> a, matrix::matrix_view<TB> b,
          matrix::matrix_view<TC> c,
          std::type_identity_t<scalar_t<std::remove_const_t<TA>>> alpha = 1,
          std::type_identity_t<scalar_t<std::remove_const_t<TA>>> beta = 0)
{
    const matrix::gemm_plan plan = matrix::plan_gemm(a, b, c, "gpu::blas::gemm");
    detail::gemm(h, a, b, c, alpha, beta, plan, false, "gpu::blas::gemm");
}

/// @brief `gemm` on @p stream, which the handle is bound to from then on (cheap when it
/// already is; see `handle::set_stream`).
template <class TA, class TB, class TC>
requires gemm_types<TA, TB, TC>
void gemm(handle& h, matrix::matrix_view<TA> a, matrix::matrix_view<TB> b,
          matrix::matrix_view<TC> c, std::type_identity_t<scalar_t<std::remove_const_t<TA>>> alpha,
          std::type_identity_t<scalar_t<std::remove_const_t<TA>>> beta, stream_ref stream)
{
    const matrix::gemm_plan plan = matrix::plan_gemm(a, b, c, "gpu::blas::gemm");
    h.set_stream(stream);
    detail::gemm(h, a, b, c, alpha, beta, plan, false, "gpu::blas::gemm");
}

/// @brief `batch.count` GEMMs `c[i] = alpha·a[i]·b[i] + beta·c[i]` in one call, the matrices
/// of each operand `batch.stride_*` elements apart (a stride of 0 reuses one matrix).
/// @param h the handle
/// @param a the first left operand, m x k
/// @param b the first right operand, k x n
/// @param c the first result, m x n
/// @param batch the count and strides, in elements
/// @param alpha scales the products
/// @param beta scales the old outputs
/// @throws std::invalid_argument for bad shapes, counts or strides (see `plan_gemm`)
/// @throws gpu::blas::blas_error when cuBLAS fails
/// @throws gpu::numerics_error with `check_numerics` on, when an output holds NaN or Inf
template <class TA, class TB, class TC>
requires gemm_types<TA, TB, TC>
void gemm_strided_batched(handle& h, matrix::matrix_view<TA> a, matrix::matrix_view<TB> b,
                          matrix::matrix_view<TC> c, const matrix::strided_batch& batch,
                          std::type_identity_t<scalar_t<std::remove_const_t<TA>>> alpha = 1,
                          std::type_identity_t<scalar_t<std::remove_const_t<TA>>> beta = 0)
{
    const matrix::gemm_plan plan =
        matrix::plan_gemm(a, b, c, batch, "gpu::blas::gemm_strided_batched");
    detail::gemm(h, a, b, c, alpha, beta, plan, true, "gpu::blas::gemm_strided_batched");
}

/// @brief `gemm_strided_batched` on @p stream, which the handle is bound to from then on.
template <class TA, class TB, class TC>
requires gemm_types<TA, TB, TC>
void gemm_strided_batched(handle& h, matrix::matrix_view<TA> a, matrix::matrix_view<TB> b,
                          matrix::matrix_view<TC> c, const matrix::strided_batch& batch,
                          std::type_identity_t<scalar_t<std::remove_const_t<TA>>> alpha,
                          std::type_identity_t<scalar_t<std::remove_const_t<TA>>> beta,
                          stream_ref stream)
{
    const matrix::gemm_plan plan =
        matrix::plan_gemm(a, b, c, batch, "gpu::blas::gemm_strided_batched");
    h.set_stream(stream);
    detail::gemm(h, a, b, c, alpha, beta, plan, true, "gpu::blas::gemm_strided_batched");
}

/// @brief The cuBLAS compute type `gemm` uses for inputs of type @p T under @p mode, by name
/// (e.g. `CUBLAS_COMPUTE_32F_FAST_TF32`), so a report can say what ran.
template <blas_element T>
[[nodiscard]] std::string_view compute_type_name(math_mode mode) noexcept
{
    return detail::compute_type_name(detail::element_type_of<T>, mode);
}

} // namespace gpu::blas
