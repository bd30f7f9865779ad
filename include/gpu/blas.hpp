/// @file blas.hpp
/// @brief Umbrella header of the cuBLAS wing (`cudagap::blas`).
#pragma once

#include <gpu/blas/version.hpp>
