/// @file nccl.hpp
/// @brief The nccl wrapper (`cudagap::nccl`): NCCL's communicators and collectives, for one
/// program on several GPUs. Includes every header of `<gpu/nccl/...>`.
///
/// @code
/// #include <gpu/nccl.hpp>
/// const gpu::nccl::unique_id id =
///     rank == 0 ? gpu::nccl::unique_id::create_file(file)
///               : gpu::nccl::unique_id::wait_for_file(file, std::chrono::seconds(60));
/// auto comm = gpu::nccl::communicator::init_rank(id, rank, size, gpu::device(local_rank));
/// gpu::nccl::all_reduce(comm, grads, gpu::nccl::reduction::avg, stream);
/// @endcode
///
/// docs/scaling_out.md is the guide.
#pragma once

#include <gpu/nccl/collectives.hpp>
#include <gpu/nccl/communicator.hpp>
#include <gpu/nccl/error.hpp>
#include <gpu/nccl/group.hpp>
#include <gpu/nccl/types.hpp>
#include <gpu/nccl/unique_id.hpp>
#include <gpu/nccl/version.hpp>
