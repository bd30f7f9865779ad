/// @file dnn.hpp
/// @brief Umbrella header of the cuDNN wrapper (`cudagap::dnn`): errors, the handle, descriptors,
/// convolution plans (forward and backward), pooling, activations, softmax, dropout and NaN/Inf
/// checks.
#pragma once

#include <gpu/dnn/activation.hpp>
#include <gpu/dnn/activation_descriptor.hpp>
#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/convolution_backward.hpp>
#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/dropout.hpp>
#include <gpu/dnn/element.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/numerics.hpp>
#include <gpu/dnn/pooling.hpp>
#include <gpu/dnn/pooling_descriptor.hpp>
#include <gpu/dnn/softmax.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>
#include <gpu/dnn/version.hpp>
