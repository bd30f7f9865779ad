/// @file blas.hpp
/// @brief Umbrella header of the cuBLAS wrapper (`cudagap::blas`), with the matrix views and the
/// GEMM plan (`cudagap::matrix`) that its GEMMs take.
#pragma once

#include <gpu/blas/capabilities.hpp>
#include <gpu/blas/convert.hpp>
#include <gpu/blas/error.hpp>
#include <gpu/blas/gemm.hpp>
#include <gpu/blas/handle.hpp>
#include <gpu/blas/lt.hpp>
#include <gpu/blas/numerics.hpp>
#include <gpu/blas/random.hpp>
#include <gpu/blas/types.hpp>
#include <gpu/blas/version.hpp>
#include <gpu/matrix/gemm_plan.hpp>
#include <gpu/matrix/matrix.hpp>

// The deprecated gpu::blas names of gpu::matrix, kept for one release.
#include <gpu/blas/gemm_plan.hpp>
#include <gpu/blas/matrix.hpp>
