/// @file blas.hpp
/// @brief Umbrella header of the cuBLAS wrapper (`cudagap::blas`).
#pragma once

#include <gpu/blas/capabilities.hpp>
#include <gpu/blas/convert.hpp>
#include <gpu/blas/error.hpp>
#include <gpu/blas/gemm.hpp>
#include <gpu/blas/gemm_plan.hpp>
#include <gpu/blas/handle.hpp>
#include <gpu/blas/lt.hpp>
#include <gpu/blas/matrix.hpp>
#include <gpu/blas/numerics.hpp>
#include <gpu/blas/random.hpp>
#include <gpu/blas/types.hpp>
#include <gpu/blas/version.hpp>
