// cudagap-train's GPU part: the model, the training loop (eager or captured), the evaluation
// and the checkpoints.
#pragma once

#include "dataset.hpp"
#include "options.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace train {

/// Set by the SIGINT handler; checked between steps (one GPU) or agreed between epochs (--gpus
/// N). A lock-free atomic: the handler may run on any thread (CUDA's and NCCL's included).
extern std::atomic<int> stop_requested;
static_assert(std::atomic<int>::is_always_lock_free,
              "a signal handler may only touch lock-free atomics");

/// What one epoch measured.
struct epoch_result {
    int epoch = 0;
    /// Over the steps that were applied: a step the FP16 grad scaler skipped is left out; NaN
    /// when it skipped every one.
    double mean_loss = 0.0;
    double test_accuracy = 0.0;
    double images_per_second = 0.0;
    double seconds = 0.0;
    double loss_scale = 1.0;
    std::int64_t skipped_steps = 0;
};

/// What a run did.
struct run_report {
    std::vector<epoch_result> epochs;
    bool interrupted = false;              // Ctrl-C: stopped between steps
    std::optional<std::string> checkpoint; // the last complete one written
    bool replicas_identical =
        false; // --gpus N, rank 0: every rank's parameters equal its own, bit for bit
};

/// Called after each epoch (for the per-epoch lines) and with the progress of each step.
struct callbacks {
    std::function<void(const epoch_result&)> epoch_done;
    std::function<void(int epoch, std::int64_t step, std::int64_t steps)> progress;
};

/// Reads the --resume file, if any, and checks it against the model on the host; throws
/// std::runtime_error naming the file and what is wrong (the tensor of another model, a file
/// that cannot be read). Needs no GPU.
void check_checkpoint(const options& opts);

class replica_group;

/// Trains on a GPU as @p opts says; with @p group (--gpus N, data_parallel.hpp), as one rank of
/// its job: this rank's part of every step, the gradients averaged over the ranks, the replicas
/// compared at the end. Throws gpu::out_of_memory (with its numbers), gpu::error,
/// gpu::nn::format_error (a checkpoint of another model) or std::runtime_error: a NaN or Inf
/// loss, or, under the testing and development profiles, the first layer whose output held
/// NaN or Inf; std::runtime_error naming the first parameter in which the replicas differ.
[[nodiscard]] run_report run_training(const options& opts, const fashion_mnist& data,
                                      const callbacks& on, replica_group* group = nullptr);

} // namespace train
