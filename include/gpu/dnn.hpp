/// @file dnn.hpp
/// @brief Umbrella header of the cuDNN wing (`cudagap::dnn`): errors, the handle, descriptors,
/// convolution plans (forward and backward) and NaN/Inf checks.
#pragma once

#include <gpu/dnn/activation_descriptor.hpp>
#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/convolution_backward.hpp>
#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/numerics.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>
#include <gpu/dnn/version.hpp>
