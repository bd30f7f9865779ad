/// @file memory.hpp
/// @brief Memory, all of it: device buffers (`<gpu/device_buffer.hpp>`), pinned host buffers
/// (`<gpu/pinned_buffer.hpp>`), reading one device value (`<gpu/device_value.hpp>`), memory pools
/// (`<gpu/memory_pool.hpp>`) and cudagap's byte counters (`<gpu/allocation_stats.hpp>`).
#pragma once

#include <gpu/allocation_stats.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/device_value.hpp>
#include <gpu/memory_pool.hpp>
#include <gpu/pinned_buffer.hpp>
