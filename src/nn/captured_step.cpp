// gpu::nn::captured_step: warm-up runs, one capture, then one graph launch per step.
#include <gpu/detail/expects.hpp>
#include <gpu/nn/captured_step.hpp>
#include <gpu/nvtx.hpp>

#include <stdexcept>
#include <utility>

namespace gpu::nn {

captured_step::captured_step(stream_ref stream, work_type work,
                             const captured_step_options& options)
    : stream_(stream), work_(std::move(work)), options_(options),
      warmups_left_(options.warmup_steps)
{
    constexpr const char* function = "gpu::nn::captured_step";
    GPU_EXPECTS(!stream.is_default(), std::invalid_argument, function,
                ": the legacy default stream cannot be captured into a graph (make a gpu::stream)");
    GPU_EXPECTS(static_cast<bool>(work_), std::invalid_argument, function, ": the work is empty");
    GPU_EXPECTS(options.warmup_steps >= 0, std::invalid_argument, function, ": warmup_steps ",
                options.warmup_steps, " is negative");
}

void captured_step::run()
{
    if (!ready_ && warmups_left_ > 0) {
        work_(stream_);
        --warmups_left_;
        ++eager_runs_;
        return;
    }
    if (!ready_) {
        capture();
    }
    const nvtx::range range("captured_step replay", nvtx::colours::graph);
    exec_.launch(stream_);
    ++launches_;
}

// Records the work (nothing runs) and makes the instance run it: a new instance the first time,
// an update of the current one afterwards (cheaper when only addresses and sizes changed).
void captured_step::capture()
{
    const graph recorded = gpu::capture(stream_, work_, options_.mode);
    if (exec_) {
        last_update_ = exec_.update(recorded);
    } else {
        exec_ = graph_exec(recorded);
    }
    ready_ = true;
    ++captures_;
}

void captured_step::invalidate() noexcept
{
    ready_ = false;
    warmups_left_ = options_.warmup_steps;
}

} // namespace gpu::nn
