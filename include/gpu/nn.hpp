/// @file nn.hpp
/// @brief Umbrella header of the `nn` component (`cudagap::nn`), which sits above the blas
/// and dnn wrappers: layers (conv2d, linear, relu, max_pool2d, flatten, dropout), parameters, mixed
/// precision, AdamW, cross-entropy, the grad scaler, a training step captured in a CUDA graph,
/// checkpoints (safetensors) and data sets (IDX).
#pragma once

#include <gpu/nn/accumulate.hpp>
#include <gpu/nn/adamw.hpp>
#include <gpu/nn/captured_step.hpp>
#include <gpu/nn/checkpoint.hpp>
#include <gpu/nn/context.hpp>
#include <gpu/nn/conv2d.hpp>
#include <gpu/nn/cross_entropy.hpp>
#include <gpu/nn/data.hpp>
#include <gpu/nn/dropout.hpp>
#include <gpu/nn/flatten.hpp>
#include <gpu/nn/format_error.hpp>
#include <gpu/nn/grad_scaler.hpp>
#include <gpu/nn/idx.hpp>
#include <gpu/nn/layer.hpp>
#include <gpu/nn/linear.hpp>
#include <gpu/nn/max_pool2d.hpp>
#include <gpu/nn/mixed_precision.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/nn/relu.hpp>
#include <gpu/nn/safetensors.hpp>
#include <gpu/nn/tensor.hpp>
