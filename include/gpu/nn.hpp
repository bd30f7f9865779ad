/// @file nn.hpp
/// @brief Umbrella header of the nn component (`cudagap::nn`): the floor above the blas and dnn
/// wings with what training and inference need: AdamW, cross-entropy, the grad scaler,
/// checkpoints (safetensors) and data sets (IDX).
#pragma once

#include <gpu/nn/adamw.hpp>
#include <gpu/nn/cross_entropy.hpp>
#include <gpu/nn/format_error.hpp>
#include <gpu/nn/grad_scaler.hpp>
#include <gpu/nn/idx.hpp>
#include <gpu/nn/safetensors.hpp>
