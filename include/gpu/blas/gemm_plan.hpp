/// @file gemm_plan.hpp
/// @brief The old home of the GEMM plan: it is now `<gpu/matrix/gemm_plan.hpp>`, in
/// `gpu::matrix`, the namespace of the component (`cudagap::matrix`) that owns it.
///
/// This header forwards there and keeps the `gpu::blas` names for one release, deprecated so
/// that a build says which name to write instead. It is to be removed in the release after.
#pragma once

#include <gpu/blas/matrix.hpp>
#include <gpu/matrix/gemm_plan.hpp>

namespace gpu::blas {

/// @deprecated use `gpu::matrix::operation`
using operation [[deprecated("use gpu::matrix::operation (<gpu/matrix/gemm_plan.hpp>)")]] =
    gpu::matrix::operation;

/// @deprecated use `gpu::matrix::strided_batch`
using strided_batch [[deprecated("use gpu::matrix::strided_batch (<gpu/matrix/gemm_plan.hpp>)")]] =
    gpu::matrix::strided_batch;

/// @deprecated use `gpu::matrix::gemm_plan`
using gemm_plan [[deprecated("use gpu::matrix::gemm_plan (<gpu/matrix/gemm_plan.hpp>)")]] =
    gpu::matrix::gemm_plan;

// Using-declarations, not deprecated wrappers: both take gpu::matrix types, so a wrapper here
// and the function that argument-dependent lookup finds in gpu::matrix would make every
// unqualified call ambiguous.
using gpu::matrix::plan_gemm;
using gpu::matrix::to_char;

} // namespace gpu::blas
