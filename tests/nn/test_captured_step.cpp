// gpu/nn/captured_step.hpp. On the host: the argument checks, and warm-up runs that call the work
// eagerly (no CUDA call), restarted by invalidate. On a GPU: the requirement, a whole
// forward + backward + AdamW step with FP16 loss scaling captured in a CUDA graph and replayed,
// equal bit for bit to eager execution from the same seed, an injected Inf skipped both ways;
// warm-up, capture and re-capture after a new batch size; a capture that throws.
#include <gpu/nn/captured_step.hpp>

#include "catch.hpp"
#include "tiny_model.hpp"

#include <gpu/error.hpp>

#include <cuda_runtime_api.h>

#include <cstdint>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;

TEST_CASE("a captured step checks its arguments", "[nn][captured_step]")
{
    const gpu::stream_ref fake(
        reinterpret_cast<cudaStream_t>(std::uintptr_t{0x1000})); // never used
    const auto nothing = [](gpu::stream_ref) {};
    CHECK_THROWS_WITH(nn::captured_step(gpu::legacy_default_stream, nothing),
                      ContainsSubstring("the legacy default stream cannot be captured"));
    CHECK_THROWS_WITH(nn::captured_step(fake, nn::captured_step::work_type{}),
                      ContainsSubstring("the work is empty"));
    CHECK_THROWS_WITH(nn::captured_step(fake, nothing, {.warmup_steps = -1}),
                      ContainsSubstring("warmup_steps -1 is negative"));
}

TEST_CASE("warm-up runs call the work eagerly on the step's stream, and invalidate restarts them",
          "[nn][captured_step]")
{
    // No GPU is needed while the step only warms up: the work is called, nothing is captured.
    const gpu::stream_ref fake(reinterpret_cast<cudaStream_t>(std::uintptr_t{0x1000}));
    std::vector<cudaStream_t> calls;
    nn::captured_step step(fake, [&](gpu::stream_ref s) { calls.push_back(s.get()); },
                           {.warmup_steps = 2});
    CHECK(step.stream().get() == fake.get());
    CHECK_FALSE(step.captured());
    step.run();
    step.invalidate(); // before the warm-up ended: it starts again from 2
    step.run();
    step.run();
    CHECK(calls == std::vector<cudaStream_t>(3, fake.get()));
    CHECK(step.eager_runs() == 3);
    CHECK(step.captures() == 0);
    CHECK(step.launches() == 0);
    CHECK_FALSE(step.captured());
    CHECK(step.last_update().in_place());
}

// ---- [gpu] ------------------------------------------------------------------------------------

namespace {

// What one step left: whether it was skipped, the scale after it, the step count.
struct step_record {
    bool found_inf = false;
    float scale = 0.0F;
    std::int64_t count = 0;
    friend bool operator==(const step_record&, const step_record&) = default;
};

step_record record(gpu::test::tiny_model& model)
{
    return {model.scaler.found_inf(), model.scaler.current_scale(),
            model.optimizer.step_count(model.stream)};
}

// PyTorch's update rule on the host: the scales after each step, given which steps found Inf.
std::vector<float> expected_scales(const std::vector<bool>& found_inf, float scale,
                                   int growth_interval)
{
    std::vector<float> scales;
    int tracker = 0;
    for (const bool inf : found_inf) {
        if (inf) {
            scale *= 0.5F;
            tracker = 0;
        } else if (++tracker == growth_interval) {
            scale *= 2.0F;
            tracker = 0;
        }
        scales.push_back(scale);
    }
    return scales;
}

// Runs a step of @p model eagerly on each batch; checks that the step on batch @p skipped left
// the parameters as they were.
std::vector<step_record> run_eagerly(gpu::test::tiny_model& model,
                                     const std::vector<gpu::test::host_batch>& batches,
                                     std::size_t skipped)
{
    std::vector<step_record> records;
    for (std::size_t i = 0; i < batches.size(); ++i) {
        model.load(batches[i]);
        const std::vector<float> before = i == skipped ? model.master() : std::vector<float>{};
        model.step(model.stream);
        records.push_back(record(model));
        if (i == skipped) {
            CHECK(model.master() == before);
        }
    }
    return records;
}

} // namespace

TEST_CASE("a whole training step captured in a CUDA graph and replayed equals eager execution bit "
          "for bit",
          "[nn][captured_step][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::test::model_handles handles(s);
    const nn::grad_scaler_options scaling{.init_scale = 1024.0F, .growth_interval = 3};
    gpu::test::tiny_model model(handles, s, nn::mixed_precision::fp16(), 16, 5, scaling);
    const int steps = 8;
    const int poisoned = 4; // its input holds +Inf: the scaler skips the step and backs off
    std::vector<gpu::test::host_batch> batches;
    for (int i = 0; i < steps; ++i) {
        batches.push_back(gpu::test::make_batch(
            16, gpu::element_type::fp16, 300U + static_cast<std::uint32_t>(i), i == poisoned));
    }

    // Eager: every kernel and library call queued one by one.
    const std::vector<step_record> eager =
        run_eagerly(model, batches, static_cast<std::size_t>(poisoned));
    const std::vector<float> eager_master = model.master();
    const std::vector<float> eager_m = model.optimizer.exp_avg().to_host();
    const std::vector<float> eager_v = model.optimizer.exp_avg_sq().to_host();
    const std::int32_t eager_tracker = model.scaler.growth_tracker();

    // The same start again (same seed, fresh optimizer and scaler state), then every step a replay
    // of one capture: no warm-up needed, the eager run above made the same objects' first-use work.
    model.store.initialize(5, s);
    model.optimizer.reset(s);
    model.scaler.load_state({.scale = scaling.init_scale, .growth_tracker = 0}, s);
    nn::captured_step step(s, [&](gpu::stream_ref st) { model.step(st); }, {.warmup_steps = 0});
    std::vector<step_record> replayed;
    for (int i = 0; i < steps; ++i) {
        model.load(batches[i]); // new data into the captured addresses
        step.run();
        replayed.push_back(record(model));
    }
    CHECK(step.captures() == 1);
    CHECK(step.launches() == static_cast<std::size_t>(steps));
    CHECK(step.eager_runs() == 0);

    CHECK(replayed == eager);
    std::vector<bool> flags;
    for (int i = 0; i < steps; ++i) {
        flags.push_back(eager[i].found_inf);
        CHECK(eager[i].found_inf == (i == poisoned));
        CHECK(eager[i].count == (i < poisoned ? i + 1 : i)); // the skipped step is not counted
    }
    const std::vector<float> scales =
        expected_scales(flags, scaling.init_scale, scaling.growth_interval);
    for (int i = 0; i < steps; ++i) {
        CHECK(eager[i].scale == scales[i]);
    }
    CHECK(model.master() == eager_master);
    CHECK(model.optimizer.exp_avg().to_host() == eager_m);
    CHECK(model.optimizer.exp_avg_sq().to_host() == eager_v);
    CHECK(model.scaler.growth_tracker() == eager_tracker);
    CHECK(model.master() != model.store.initial_values(5)); // it did train
}

TEST_CASE("a captured step warms up, captures once, and captures again for a new batch size",
          "[nn][captured_step][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::test::model_handles handles(s); // shared: both models choose the same cuBLASLt algorithms
    gpu::test::tiny_model eager(handles, s, nn::mixed_precision::bf16(), 16,
                                9); // scaler off (BF16)
    gpu::test::tiny_model graphed(handles, s, nn::mixed_precision::bf16(), 16, 9);
    nn::captured_step step(s, [&](gpu::stream_ref st) { graphed.step(st); });

    std::uint32_t seed = 500;
    const auto both = [&](int count) {
        for (int i = 0; i < count; ++i) {
            const gpu::test::host_batch batch =
                gpu::test::make_batch(eager.batch, gpu::element_type::bf16, seed++);
            eager.load(batch);
            eager.step(s);
            graphed.load(batch);
            step.run();
            s.synchronize(); // `batch` goes away
        }
    };
    both(4); // eager warm-up, capture + launch, launch, launch
    CHECK(step.eager_runs() == 1);
    CHECK(step.captures() == 1);
    CHECK(step.launches() == 3);
    CHECK(graphed.master() == eager.master());

    // The last, smaller batch of an epoch: new plans, new buffers, so the graph is out of date.
    eager.plan(8);
    graphed.plan(8);
    step.invalidate();
    CHECK_FALSE(step.captured());
    both(3); // eager warm-up, re-capture (an update of the instance) + launch, launch
    CHECK(step.eager_runs() == 2);
    CHECK(step.captures() == 2);
    CHECK(step.launches() == 5);
    CHECK(graphed.master() == eager.master());
    CHECK(graphed.optimizer.step_count(s) == 7);
    INFO("the re-capture was " << (step.last_update().in_place() ? "applied in place"
                                                                 : "re-instantiated: ")
                               << step.last_update().reason);
    SUCCEED();
}

TEST_CASE("a step that cannot be captured throws, leaves the stream usable, and is captured again "
          "next run",
          "[nn][captured_step][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::device_buffer<int> value(1, s);
    value.fill_zero();
    bool synchronising = true;
    nn::captured_step step(s,
                           [&](gpu::stream_ref st) {
                               GPU_CUDA_CHECK(
                                   cudaMemsetAsync(value.data(), 1, sizeof(int), st.get()));
                               if (synchronising) {
                                   st.synchronize(); // not capturable
                               }
                           },
                           {.warmup_steps = 0});
    CHECK_THROWS_AS(step.run(), gpu::cuda_error);
    CHECK_FALSE(step.captured());
    CHECK(step.captures() == 0);
    CHECK(value.to_host() == std::vector<int>{0}); // nothing of the failed capture ran
    synchronising = false;
    step.run();
    CHECK(step.captures() == 1);
    CHECK(value.to_host() == std::vector<int>{0x01010101});
}
