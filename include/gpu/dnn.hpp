/// @file dnn.hpp
/// @brief Umbrella header of the cuDNN wing (`cudagap::dnn`).
#pragma once

#include <gpu/dnn/version.hpp>
