// cudagap-train --gpus N over NCCL (cudagap's nccl wrapper): the bootstrap through the launcher's
// file, one communicator per rank, the gradients' average, the agreement to stop, and the
// check that the replicas ended identical.
#include "data_parallel.hpp"

#include <gpu/device.hpp>
#include <gpu/memory.hpp>
#include <gpu/nccl.hpp>

#include <bit>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <utility>

namespace train {

namespace {

// How long ranks other than 0 wait for rank 0's unique id: rank 0 reads the data set first.
constexpr std::chrono::seconds bootstrap_timeout{60};

class nccl_replicas final : public replica_group {
public:
    explicit nccl_replicas(gpu::nccl::communicator comm) : comm_(std::move(comm)) {}

    int rank() const override { return comm_.rank(); }
    int size() const override { return comm_.size(); }

    void average(std::span<float> values, gpu::stream_ref stream) override
    {
        gpu::nccl::all_reduce(comm_, values, gpu::nccl::reduction::avg, stream);
    }

    std::uint32_t maximum(std::uint32_t mine, gpu::stream_ref stream) override
    {
        gpu::device_buffer<std::uint32_t> value(1, stream);
        value.copy_from_host_async(std::span(&mine, 1), stream);
        gpu::nccl::all_reduce(comm_, value, gpu::nccl::reduction::max, stream);
        return value.to_host().at(0); // waits on `stream`, so `mine` outlives the copy
    }

    void check_identical(const gpu::nn::parameters& store, gpu::stream_ref stream) override
    {
        gpu::device_buffer<float> all(store.total_elements() * static_cast<std::size_t>(size()),
                                      stream);
        gpu::nccl::all_gather(comm_, store.master(), all, stream);
        if (rank() != 0) {
            stream
                .synchronize(); // rank 0 compares and reports: the others only wait for the gather
            return;
        }
        const std::vector<float> gathered = all.to_host();
        if (const std::optional<std::string> difference =
                replica_difference(gathered, size(), store.infos())) {
            throw std::runtime_error(*difference);
        }
    }

    void abort() noexcept override { comm_.abort(); }

private:
    gpu::nccl::communicator comm_;
};

std::string describe(const gpu::nn::parameter_info& parameter, std::size_t element, int rank,
                     float ours, float theirs)
{
    char values[160];
    std::snprintf(values, sizeof values,
                  "%.9g (bits 0x%08x) on rank 0 and %.9g (bits 0x%08x) on rank %d", ours,
                  std::bit_cast<std::uint32_t>(ours), theirs, std::bit_cast<std::uint32_t>(theirs),
                  rank);
    return "the replicas differ at the end of training: " + parameter.name + "[" +
           std::to_string(element) + "] is " + values +
           " (the first parameter that differs, in the model's order). Every rank applies the same "
           "averaged "
           "gradient at every step, so they must be equal bit for bit: the run's result cannot be "
           "trusted (a GPU "
           "that computes wrongly? run cudagap-doctor)";
}

} // namespace

std::unique_ptr<replica_group> join_replicas(const rank_info& rank)
{
    const gpu::device device(rank.gpu);
    device.make_current();
    const gpu::nccl::unique_id id =
        rank.rank == 0 ? gpu::nccl::unique_id::create_file(rank.bootstrap)
                       : gpu::nccl::unique_id::wait_for_file(rank.bootstrap, bootstrap_timeout);
    return std::make_unique<nccl_replicas>(
        gpu::nccl::communicator::init_rank(id, rank.rank, rank.size, device));
}

std::optional<std::string>
replica_difference(std::span<const float> gathered, int ranks,
                   const std::vector<gpu::nn::parameter_info>& parameters)
{
    if (ranks < 1 || gathered.size() % static_cast<std::size_t>(ranks) != 0) {
        throw std::invalid_argument("replica_difference: " + std::to_string(gathered.size()) +
                                    " values are not " + std::to_string(ranks) + " equal copies");
    }
    const std::size_t each = gathered.size() / static_cast<std::size_t>(ranks);
    for (const gpu::nn::parameter_info& parameter : parameters) {
        if (parameter.offset + parameter.count > each) {
            throw std::invalid_argument("replica_difference: " + parameter.name +
                                        " ends at element " +
                                        std::to_string(parameter.offset + parameter.count) +
                                        ", past the " + std::to_string(each) + " of a copy");
        }
        const float* ours = gathered.data() + parameter.offset;
        for (int rank = 1; rank < ranks; ++rank) {
            const float* theirs = ours + static_cast<std::size_t>(rank) * each;
            if (std::memcmp(ours, theirs, parameter.count * sizeof(float)) == 0) {
                continue;
            }
            std::size_t i = 0;
            while (std::bit_cast<std::uint32_t>(ours[i]) ==
                   std::bit_cast<std::uint32_t>(theirs[i])) {
                ++i;
            }
            return describe(parameter, i, rank, ours[i], theirs[i]);
        }
    }
    return std::nullopt;
}

} // namespace train
