/// @file memory.hpp
/// @brief Memory, all of it: device buffers (`<gpu/device_buffer.hpp>`), pinned host buffers
/// (`<gpu/pinned_buffer.hpp>`), reading one device value (`<gpu/device_value.hpp>`), memory pools
/// (`<gpu/memory_pool.hpp>`), cudagap's byte counters (`<gpu/allocation_stats.hpp>`), memory
/// resources (`<gpu/memory_resource.hpp>`, `<gpu/memory_resources.hpp>`,
/// `<gpu/resource_adaptors.hpp>`, `<gpu/ledger_resource.hpp>`), the ledger of who holds the
/// memory (`<gpu/memory_tag.hpp>`, `<gpu/memory_ledger.hpp>`) and its timeline
/// (`<gpu/memory_trace.hpp>`). CCCL's resources: `<gpu/cccl_resource.hpp>`, included alone.
#pragma once

#include <gpu/allocation_stats.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/device_value.hpp>
#include <gpu/ledger_resource.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_pool.hpp>
#include <gpu/memory_resource.hpp>
#include <gpu/memory_resources.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/memory_trace.hpp>
#include <gpu/pinned_buffer.hpp>
#include <gpu/resource_adaptors.hpp>
