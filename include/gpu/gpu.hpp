/// @file gpu.hpp
/// @brief Umbrella header of cudagap's core (`cudagap::core`): errors, versions, devices,
/// streams, events, memory, CUDA graphs and their capture, timing, profiles, NaN/Inf reports,
/// launches of your own kernels with occupancy helpers, and NVTX ranges.
/// `<gpu/cccl_stream.hpp>`, which needs CCCL's headers, is included on its own. The cuBLAS and
/// cuDNN wrappers have their own umbrellas, `<gpu/blas.hpp>` and `<gpu/dnn.hpp>`, and so do the
/// tools above them (diagnosis, VRAM advice), `<gpu/tools.hpp>`.
#pragma once

#include <gpu/call_checks.hpp>
#include <gpu/capture.hpp>
#include <gpu/device.hpp>
#include <gpu/element_type.hpp>
#include <gpu/error.hpp>
#include <gpu/event.hpp>
#include <gpu/graph.hpp>
#include <gpu/host_function.hpp>
#include <gpu/launch.hpp>
#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/nvtx.hpp>
#include <gpu/occupancy.hpp>
#include <gpu/peer_copy.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>
#include <gpu/timing.hpp>
#include <gpu/version.hpp>
