// cudagap-train --gpus N: what the training loop asks of the other ranks (average the
// gradients, agree to stop, check that the replicas ended identical), as an interface the loop
// calls without knowing NCCL, so that trainer.cpp builds without it. data_parallel.cpp
// implements it with cudagap's nccl wrapper; it is built only when cudagap has that component.
#pragma once

#include "launcher.hpp"

#include <gpu/nn/parameters.hpp>
#include <gpu/stream.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace train {

/// The ranks of a data-parallel job, seen from one of them. Every rank makes the same calls in
/// the same order with the same sizes (NCCL's rule for collectives).
class replica_group {
public:
    virtual ~replica_group() = default;
    /// This rank, in [0, size()).
    [[nodiscard]] virtual int rank() const = 0;
    /// The number of ranks.
    [[nodiscard]] virtual int size() const = 0;
    /// Replaces @p values (device memory) by their average over the ranks, queued on @p stream;
    /// it never synchronises the stream, so a captured step can hold it. Run eagerly, the host
    /// polls until NCCL has queued it (the communicator is non-blocking: `ncclCommGetAsyncError`
    /// up to its deadline), which may wait for the other ranks to reach it.
    virtual void average(std::span<float> values, gpu::stream_ref stream) = 0;
    /// The largest of every rank's @p mine; waits for every rank (and for @p stream).
    [[nodiscard]] virtual std::uint32_t maximum(std::uint32_t mine, gpu::stream_ref stream) = 0;
    /// Whether any rank passed true; waits for every rank.
    [[nodiscard]] bool any(bool flag, gpu::stream_ref stream)
    {
        return maximum(flag ? 1U : 0U, stream) != 0;
    }
    /// Gathers every rank's master parameters and, on rank 0, throws std::runtime_error naming
    /// the first parameter that differs from rank 0's in any bit (`replica_difference`).
    virtual void check_identical(const gpu::nn::parameters& store, gpu::stream_ref stream) = 0;
    /// After a failure: ends this rank's collectives without waiting for the others (their
    /// launcher stops them).
    virtual void abort() noexcept = 0;

    replica_group() = default;
    replica_group(const replica_group&) = delete;
    replica_group& operator=(const replica_group&) = delete;
};

/// Joins the job of @p rank on its GPU (made current): rank 0 writes NCCL's unique id to the
/// bootstrap file, the others wait up to a minute for it; then one NCCL communicator of
/// `rank.size` ranks. With NCCL only (CUDAGAP_TRAIN_NCCL).
/// Throws gpu::nccl::bootstrap_error (no id in time), gpu::nccl::nccl_error, gpu::cuda_error.
[[nodiscard]] std::unique_ptr<replica_group> join_replicas(const rank_info& rank);

/// The first difference between the replicas' parameters in @p gathered (`ranks` copies of the
/// master buffer, rank by rank, as `all_gather` leaves them), compared bit for bit with rank
/// 0's parameter by parameter in the order of @p parameters; nothing when they are identical.
/// The text names the parameter, the element, the rank and both values. Host only; with NCCL
/// only (CUDAGAP_TRAIN_NCCL).
/// Throws std::invalid_argument when @p gathered is not @p ranks equal copies that hold them.
[[nodiscard]] std::optional<std::string>
replica_difference(std::span<const float> gathered, int ranks,
                   const std::vector<gpu::nn::parameter_info>& parameters);

} // namespace train
