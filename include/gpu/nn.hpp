/// @file nn.hpp
/// @brief Umbrella header of the nn component (`cudagap::nn`): the floor above the blas and dnn
/// wings with what training and inference need: checkpoints (safetensors) and data sets (IDX).
#pragma once

#include <gpu/nn/format_error.hpp>
#include <gpu/nn/idx.hpp>
#include <gpu/nn/safetensors.hpp>
