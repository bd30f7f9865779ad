/// @file nn.hpp
/// @brief Umbrella header of the `nn` component (`cudagap::nn`): layers, parameters, mixed
/// precision, above the blas and dnn wings.
#pragma once

#include <gpu/nn/accumulate.hpp>
#include <gpu/nn/context.hpp>
#include <gpu/nn/flatten.hpp>
#include <gpu/nn/layer.hpp>
#include <gpu/nn/linear.hpp>
#include <gpu/nn/mixed_precision.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/nn/tensor.hpp>
