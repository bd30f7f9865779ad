// cudagap-train's GPU part. One object holds the handles, the layers (PyTorch's names, which the
// checkpoint uses), the loss, AdamW, the grad scaler and every activation buffer of one batch
// size; a step reads its batch on the device (gpu::nn::gather_batch advances a device counter),
// so the same step runs eagerly or as the replay of one captured graph. The loss of the applied
// steps and the skipped steps are summed on the device and read once per epoch; under the
// testing and development profiles each layer's output is checked on the device too
// (gpu::flag_non_finite), and the flag is read with the sums.
#include "trainer.hpp"

#include "data_parallel.hpp"

#include <gpu/blas/handle.hpp>
#include <gpu/blas/lt.hpp>
#include <gpu/device.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/error.hpp>
#include <gpu/memory.hpp>
#include <gpu/nn.hpp>
#include <gpu/numerics.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>

namespace train {

std::atomic<int> stop_requested{0};

namespace {

namespace nn = gpu::nn;
constexpr nn::normalization fashion_mnist_norm{0.2860F, 0.3530F};
constexpr std::int64_t classes = 10;

// What the layer checks call each checked output, by its code (0: none held NaN or Inf). Flatten
// is left out: its output is the second pool's, the same memory.
constexpr std::array<const char*, 11> checked_outputs{"",
                                                      "conv1 (Conv2d 1 -> 32, 5x5)",
                                                      "the ReLU after conv1",
                                                      "the MaxPool2d after conv1",
                                                      "conv2 (Conv2d 32 -> 64, 5x5)",
                                                      "the ReLU after conv2",
                                                      "the MaxPool2d after conv2",
                                                      "fc1 (Linear 3136 -> 1024, with its ReLU)",
                                                      "the Dropout after fc1",
                                                      "fc2 (Linear 1024 -> 10)",
                                                      "the loss (cross-entropy of fc2's output)"};
constexpr std::uint32_t loss_code = 10;

// The profiles that check every layer's output: testing (on the device, read once per epoch)
// and development (whose library checks already stop at a cuBLAS or cuDNN call).
bool checks_layers(const gpu::profile& profile)
{
    return profile.name == "testing" || profile.check_numerics;
}

// The model's parameters and layers (PyTorch's names, which the checkpoint uses). Made on the
// host only (nothing here touches the GPU until the store is allocated), so the program checks
// a --resume file against it before it needs a GPU. Each rank of --gpus N draws its dropout
// masks from seed + rank, as one GPU would draw different masks for each part of its batch.
struct network {
    nn::parameters store;
    nn::conv2d conv1;
    nn::relu relu1;
    nn::max_pool2d pool1{2};
    nn::conv2d conv2;
    nn::relu relu2;
    nn::max_pool2d pool2{2};
    nn::flatten flat;
    nn::linear fc1;
    nn::dropout drop;
    nn::linear fc2;

    network(const options& opts, int rank)
        : store(nn::mixed_precision::from_name(opts.precision)),
          conv1(store, "conv1", 1, 32, 5, {.padding = {2, 2}}),
          conv2(store, "conv2", 32, 64, 5, {.padding = {2, 2}}),
          fc1(store, "fc1", 64 * 7 * 7, 1024, {.relu = true}),
          drop(static_cast<float>(opts.dropout), opts.seed + static_cast<std::uint64_t>(rank)),
          fc2(store, "fc2", 1024, classes)
    {}
};

// A data set on the device: its pixels and labels as u8, copied once.
struct device_set {
    gpu::device_buffer<std::uint8_t> pixels;
    gpu::device_buffer<std::uint8_t> labels;
    std::uint64_t count = 0;

    device_set(const gpu::nn::idx_dataset& set, gpu::stream_ref s)
        : pixels(gpu::device_buffer<std::uint8_t>::from_host(
              std::span<const std::uint8_t>(set.images.pixels), s)),
          labels(gpu::device_buffer<std::uint8_t>::from_host(
              std::span<const std::uint8_t>(set.labels), s)),
          count(set.images.count)
    {}
};

// The activations and their gradients for one batch size. `x` and `labels` hold the whole step
// of every rank (ranks x batch images, as one GPU would gather them); this rank computes on its
// part.
struct buffers {
    nn::tensor x, c1, r1, p1, c2, r2, p2, h, d, y;
    nn::tensor dy, dd, dh, dp2, dr2, dc2, dp1, dr1, dc1;
    gpu::device_buffer<std::int32_t> labels;
};

struct model {
    gpu::stream_ref s;
    replica_group* group; // the other ranks of --gpus N; null on one GPU in this process
    int rank = group != nullptr ? group->rank() : 0;
    std::int64_t ranks = group != nullptr ? group->size() : 1;
    gpu::blas::handle blas;
    gpu::blas::lt_handle lt;
    gpu::dnn::handle dnn;
    network net;
    nn::parameters& store = net.store;
    nn::context ctx;
    nn::cross_entropy loss;
    nn::adamw optimizer;
    nn::grad_scaler scaler;
    std::int64_t batch = 0;
    buffers b;
    gpu::device_buffer<float> loss_value;
    gpu::device_buffer<float>
        sums; // [0] the epoch's summed loss of the applied steps, [1] its skipped steps
    bool layer_checks = false; // flag each layer's output in the training steps
    gpu::device_buffer<std::uint32_t>
        first_bad; // the code of the first output that held NaN or Inf; 0: none

    model(const options& opts, const gpu::profile& profile, gpu::stream_ref stream,
          replica_group* replicas)
        : s(stream), group(replicas), blas(profile, stream),
          lt(stream, gpu::blas::lt_handle_options::from_profile(profile)), dnn(stream),
          net(opts, rank), ctx(stream, blas, lt, dnn, net.store),
          loss(classes, store.precision().compute, stream),
          optimizer(store.total_elements(), stream,
                    {.lr = opts.lr, .weight_decay = opts.weight_decay}),
          scaler(nn::grad_scaler::for_precision(store.precision().compute, stream)),
          loss_value(1, stream), sums(2, stream), layer_checks(checks_layers(profile)),
          first_bad(1, stream)
    {
        ctx.set_convolution_options(gpu::dnn::convolution_options::from_profile(profile));
        store.allocate(stream);
        store.initialize(opts.seed, stream);
        first_bad.fill_zero_async(stream);
    }

    nn::tensor make(const nn::tensor_spec& spec) { return nn::tensor(spec, s); }

    // Plans every layer for `rows` and makes the buffers (a new size: new addresses).
    void plan(std::int64_t rows)
    {
        batch = rows;
        const nn::tensor_spec in{.shape = {rows, 1, 28, 28}, .type = store.precision().compute};
        const nn::tensor_spec step_in{.shape = {rows * ranks, 1, 28, 28}, .type = in.type};
        const nn::tensor_spec c1 = net.conv1.plan(ctx, in), r1 = net.relu1.plan(ctx, c1),
                              p1 = net.pool1.plan(ctx, r1);
        const nn::tensor_spec c2 = net.conv2.plan(ctx, p1), r2 = net.relu2.plan(ctx, c2),
                              p2 = net.pool2.plan(ctx, r2);
        const nn::tensor_spec f = net.flat.plan(ctx, p2), h = net.fc1.plan(ctx, f),
                              d = net.drop.plan(ctx, h);
        const nn::tensor_spec y = net.fc2.plan(ctx, d);
        b = buffers{make(step_in),
                    make(c1),
                    make(r1),
                    make(p1),
                    make(c2),
                    make(r2),
                    make(p2),
                    make(h),
                    make(d),
                    make(y),
                    make(y),
                    make(d),
                    make(h),
                    make(p2),
                    make(r2),
                    make(c2),
                    make(p1),
                    make(r1),
                    make(c1),
                    gpu::device_buffer<std::int32_t>(static_cast<std::size_t>(rows * ranks), s)};
    }

    // Part `part` of the gathered images: `batch` of them, what the layers were planned for.
    nn::tensor_ref input(std::int64_t part)
    {
        nn::tensor_spec spec = b.x.spec();
        spec.shape[0] = batch;
        return {static_cast<std::byte*>(b.x.data()) + static_cast<std::size_t>(part) * spec.bytes(),
                spec};
    }

    // Runs one layer; with `check`, flags its output with `code` on the device (no wait, so the
    // captured step holds the checks too), and names the layer in a library's numerics_error
    // (the development profile's check, which waits at the call).
    template <class Layer>
    void checked(bool check, std::uint32_t code, const nn::tensor& output, Layer&& run)
    {
        try {
            run();
        } catch (const gpu::numerics_error& e) {
            throw std::runtime_error(
                std::string("the output of ") + checked_outputs.at(code) +
                " holds NaN or Inf (the development profile's check): " + e.what());
        }
        if (check) {
            gpu::flag_non_finite(output.data(), output.spec().elements(), output.spec().type,
                                 first_bad.data(), code, s);
        }
    }

    void forward(bool check, const nn::tensor_ref& x)
    {
        const nn::tensor_ref flat_p2{b.p2.data(), *net.flat.planned_output()};
        checked(check, 1, b.c1, [&] { net.conv1.forward(ctx, x, b.c1.ref()); });
        checked(check, 2, b.r1, [&] { net.relu1.forward(ctx, b.c1.ref(), b.r1.ref()); });
        checked(check, 3, b.p1, [&] { net.pool1.forward(ctx, b.r1.ref(), b.p1.ref()); });
        checked(check, 4, b.c2, [&] { net.conv2.forward(ctx, b.p1.ref(), b.c2.ref()); });
        checked(check, 5, b.r2, [&] { net.relu2.forward(ctx, b.c2.ref(), b.r2.ref()); });
        checked(check, 6, b.p2, [&] { net.pool2.forward(ctx, b.r2.ref(), b.p2.ref()); });
        net.flat.forward(ctx, b.p2.ref(), flat_p2);
        checked(check, 7, b.h, [&] { net.fc1.forward(ctx, flat_p2, b.h.ref()); });
        checked(check, 8, b.d, [&] { net.drop.forward(ctx, b.h.ref(), b.d.ref()); });
        checked(check, 9, b.y, [&] { net.fc2.forward(ctx, b.d.ref(), b.y.ref()); });
    }

    void backward()
    {
        const nn::tensor_ref flat_dp2{b.dp2.data(), *net.flat.planned_output()};
        net.fc2.backward(ctx, b.dy.ref(), b.dd.ref());
        net.drop.backward(ctx, b.dd.ref(), b.dh.ref());
        net.fc1.backward(ctx, b.dh.ref(), flat_dp2);
        net.flat.backward(ctx, flat_dp2, b.dp2.ref());
        net.pool2.backward(ctx, b.dp2.ref(), b.dr2.ref());
        net.relu2.backward(ctx, b.dr2.ref(), b.dc2.ref());
        net.conv2.backward(ctx, b.dc2.ref(), b.dp1.ref());
        net.pool1.backward(ctx, b.dp1.ref(), b.dr1.ref());
        net.relu1.backward(ctx, b.dr1.ref(), b.dc1.ref());
        net.conv1.backward(ctx, b.dc1.ref(), {});
    }

    // One whole step on the batch that `source` and `batch_number` say: nothing synchronises.
    // Under --gpus N every rank gathers the same N x batch images and computes on its part;
    // one all-reduce then averages the gradients, before the grad scaler checks them for Inf
    // and NaN, so that every rank takes the same decision and applies the same update.
    void step(const nn::batch_source& source, std::uint32_t* batch_number, gpu::stream_ref st)
    {
        nn::gather_batch(source, batch * ranks, fashion_mnist_norm, store.precision().compute,
                         b.x.data(), b.labels.data(), batch_number, st);
        const std::int32_t* labels = b.labels.data() + static_cast<std::ptrdiff_t>(rank * batch);
        store.zero_grad(st);
        forward(layer_checks, input(rank));
        loss.forward(b.y.data(), labels, batch, loss_value.data(), st);
        if (layer_checks) {
            gpu::flag_non_finite(loss_value.data(), 1, gpu::element_type::fp32, first_bad.data(),
                                 loss_code, st);
        }
        loss.backward(b.y.data(), labels, batch, b.dy.data(), scaler.scale(), st);
        backward();
        if (group != nullptr) {
            group->average({store.gradient().data(), store.gradient().size()}, st);
        }
        optimizer.step(store.master(), store.gradient(), scaler, st);
        // The epoch's mean loss is over the applied steps: a step the scaler skipped (its
        // gradients held Inf or NaN) changed nothing, and its loss is left out of the sum.
        if (scaler.enabled()) {
            nn::accumulate_unless(scaler.found_inf_flag(), loss_value.data(),
                                  gpu::element_type::fp32, sums.data(), 1, st);
            nn::accumulate(scaler.found_inf_flag(), gpu::element_type::fp32, sums.data() + 1, 1,
                           st);
        } else {
            nn::accumulate(loss_value.data(), gpu::element_type::fp32, sums.data(), 1, st);
        }
        scaler.update(st);
        store.refresh_working_copy(st);
    }
};

// The fraction of `set` the model classifies right, in batches of the planned size (the last
// one wraps to the start of the set; only its first rows are counted).
double evaluate(model& m, const device_set& set, gpu::device_buffer<std::uint32_t>& batch_number,
                gpu::device_buffer<int>& correct)
{
    m.ctx.set_training(false);
    batch_number.fill_zero_async(m.s);
    correct.fill_zero_async(m.s);
    const nn::batch_source source{set.pixels.data(), set.labels.data(), nullptr, set.count,
                                  28 * 28};
    const auto count = static_cast<std::int64_t>(set.count);
    for (std::int64_t first = 0; first < count; first += m.batch) {
        nn::gather_batch(source, m.batch, fashion_mnist_norm, m.store.precision().compute,
                         m.b.x.data(), m.b.labels.data(), batch_number.data(), m.s);
        m.forward(false, m.input(0));
        nn::count_correct(m.b.y.data(), m.store.precision().compute, m.b.labels.data(),
                          std::min(m.batch, count - first), classes, correct.data(), m.s);
    }
    m.ctx.set_training(true);
    return static_cast<double>(correct.to_host().at(0)) / static_cast<double>(count);
}

// Saves to `path` atomically: the library writes a sibling file and renames it (checkpoint.hpp).
void save(model& m, const std::string& path)
{
    nn::save_training_state(path, m.store, m.optimizer, m.scaler, m.s);
}

// Under the layer checks: the code of the first output that held NaN or Inf in the epoch's
// steps, 0 for none. Under --gpus N the ranks agree on it (the earliest layer any rank flagged),
// so that all throw alike: a rank that threw alone would leave the others, rank 0 and its
// report included, waiting in the next collective until the launcher stops them.
std::uint32_t flagged_output(model& m)
{
    if (!m.layer_checks) {
        return 0;
    }
    const std::uint32_t code = m.first_bad.to_host().at(0);
    if (m.group == nullptr) {
        return code;
    }
    // The maximum of the reversed codes is the smallest code flagged (0 still means none).
    const auto reversed = [](std::uint32_t c) {
        return c == 0 ? 0 : static_cast<std::uint32_t>(checked_outputs.size()) - c;
    };
    return reversed(m.group->maximum(reversed(code), m.s));
}

// Names the first output that held NaN or Inf (`code`, flagged_output's), if any.
void throw_if_flagged(std::uint32_t code, const options& opts, int epoch)
{
    if (code == 0) {
        return;
    }
    const std::string output =
        code < checked_outputs.size() ? checked_outputs[code] : "an unknown output";
    throw std::runtime_error("epoch " + std::to_string(epoch) + ": the output of " + output +
                             " was the first to hold NaN or Inf (the " + opts.profile +
                             " profile checks every layer's output in every training step). The "
                             "outputs before it in that step were "
                             "finite, so the fault is in it: its weights or bias hold NaN or Inf "
                             "(from a --resume checkpoint, or "
                             "updates that diverged: lower --lr) or its values overflowed (" +
                             (opts.precision == "fp16"
                                  ? "FP16 holds magnitudes up to 65504: try --precision bf16"
                                  : "lower --lr") +
                             ")");
}

// The mean loss over the applied steps: NaN when the grad scaler skipped every one. A NaN or
// Inf among applied steps (BF16 and FP32 apply every step) stops the run.
double mean_loss(const model& m, const options& opts, int epoch, std::int64_t steps,
                 const std::vector<float>& sums)
{
    const std::int64_t applied = steps - static_cast<std::int64_t>(sums[1]);
    if (applied <= 0) {
        return std::numeric_limits<double>::quiet_NaN();
    }
    const double mean = sums[0] / static_cast<double>(applied);
    if (!std::isfinite(mean)) {
        throw std::runtime_error(
            "the mean loss of epoch " + std::to_string(epoch) + " is " + std::to_string(mean) +
            " (" + opts.precision +
            (m.scaler.enabled() ? "" : ": no grad scaler skips such steps") + "). " +
            (m.layer_checks
                 ? std::string("Lower --lr, or check the --resume checkpoint")
                 : "Rerun with --profile testing to find the layer: it checks every layer's output "
                   "on the "
                   "device and names the first that held NaN or Inf. Then lower --lr, or check the "
                   "--resume checkpoint"));
    }
    return mean;
}

// The epoch's numbers: waits for its steps, reads the device's sums (and the layer checks' flag),
// then evaluates on the test set. Under --gpus N the summed loss is averaged over the ranks
// first (the skipped steps are the same on every rank), images/s counts every rank's images, and
// only rank 0 evaluates (the others' accuracy is NaN: nobody reports it).
epoch_result finish_epoch(model& m, const options& opts, int epoch, std::int64_t steps,
                          std::chrono::steady_clock::time_point start, const device_set& test_set,
                          gpu::device_buffer<std::uint32_t>& eval_number,
                          gpu::device_buffer<int>& correct)
{
    m.s.synchronize();
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (m.group != nullptr) {
        m.group->average({m.sums.data(), 1}, m.s);
    }
    const std::vector<float> sums = m.sums.to_host();
    throw_if_flagged(flagged_output(m), opts, epoch);
    const double loss = mean_loss(m, opts, epoch, steps, sums);
    const double accuracy = m.rank == 0 ? evaluate(m, test_set, eval_number, correct)
                                        : std::numeric_limits<double>::quiet_NaN();
    return epoch_result{epoch,
                        loss,
                        accuracy,
                        static_cast<double>(steps * opts.batch_size * m.ranks) / seconds,
                        seconds,
                        m.scaler.enabled() ? m.scaler.current_scale() : 1.0,
                        static_cast<std::int64_t>(sums[1])};
}

struct epoch_loop {
    model& m;
    const options& opts;
    const callbacks& on;
    device_set& train_set;
    gpu::device_buffer<std::uint32_t>& order;
    gpu::device_buffer<std::uint32_t>& batch_number;
    std::unique_ptr<nn::captured_step> captured;

    nn::batch_source source() const
    {
        return {train_set.pixels.data(), train_set.labels.data(), order.data(), train_set.count,
                28 * 28};
    }

    // Runs the steps of one epoch; false when Ctrl-C stopped it. The ranks of --gpus N stop only
    // between epochs, all after the same one (run_training): a rank that stopped between steps
    // would leave the others waiting in the next step's all-reduce.
    bool run_steps(int epoch, std::int64_t steps)
    {
        nn::shuffle_order(order.data(), train_set.count, opts.seed,
                          static_cast<std::uint64_t>(epoch), m.s);
        batch_number.fill_zero_async(m.s);
        m.sums.fill_zero_async(m.s);
        for (std::int64_t i = 0; i < steps; ++i) {
            if (stop_requested.load() != 0 && m.group == nullptr) {
                return false;
            }
            if (captured) {
                captured->run();
            } else {
                m.step(source(), batch_number.data(), m.s);
            }
            if (on.progress) {
                on.progress(epoch, i + 1, steps);
            }
        }
        return true;
    }
};

} // namespace

void check_checkpoint(const options& opts)
{
    if (!opts.resume) {
        return;
    }
    const network net(opts, 0);
    try {
        static_cast<void>(nn::read_training_state(*opts.resume, net.store));
    } catch (const std::exception& e) {
        throw std::runtime_error("cannot resume from " + *opts.resume + ": " + e.what());
    }
}

namespace {

// Under --gpus N: whether any rank was asked to stop (Ctrl-C), agreed by all so that all stop
// together; on one GPU this process's flag.
bool stop_agreed(replica_group* group, gpu::stream_ref s)
{
    return group != nullptr ? group->any(stop_requested.load() != 0, s)
                            : stop_requested.load() != 0;
}

// The steps, epochs, checkpoints and the replicas' check, on the model `m` made by run_training.
run_report train_model(model& m, const options& opts, const fashion_mnist& data,
                       const callbacks& on)
{
    run_report report;
    replica_group* const group = m.group;
    device_set train_set(data.train, m.s);
    device_set test_set(data.test, m.s);
    const std::int64_t steps =
        static_cast<std::int64_t>(train_set.count) / (opts.batch_size * m.ranks);
    // steps >= 1: main checked that a full step (every rank's batch) exists before it needed a GPU.
    m.plan(opts.batch_size);
    gpu::device_buffer<std::uint32_t> order(train_set.count, m.s);
    gpu::device_buffer<std::uint32_t> batch_number(1, m.s);
    gpu::device_buffer<std::uint32_t> eval_number(1, m.s);
    gpu::device_buffer<int> correct(1, m.s);
    epoch_loop loop{m, opts, on, train_set, order, batch_number, nullptr};
    if (opts.graph) {
        // One eager warm-up step (it fills the algorithm caches, whose first use runs on the host),
        // then one capture; every later step is one graph launch. Under --gpus N the capture is
        // per_thread (CUDA's ThreadLocal, as nccl-tests captures): the non-blocking
        // communicator's group end may hand the all-reduce to an NCCL thread, which must not
        // find its calls forbidden by a global capture.
        loop.captured = std::make_unique<nn::captured_step>(
            m.s,
            [&m, &loop](gpu::stream_ref st) {
                m.step(loop.source(), loop.batch_number.data(), st);
            },
            nn::captured_step_options{.warmup_steps = 1,
                                      .mode = group != nullptr ? gpu::capture_mode::per_thread
                                                               : gpu::capture_mode::global});
    }
    // A Ctrl-C before the first epoch (while the data loaded or the ranks joined) stops at once.
    report.interrupted = group != nullptr && stop_agreed(group, m.s);
    for (int epoch = 1; epoch <= opts.epochs && !report.interrupted; ++epoch) {
        const auto start = std::chrono::steady_clock::now();
        if (!loop.run_steps(epoch, steps)) {
            report.interrupted = true;
            break;
        }
        epoch_result result =
            finish_epoch(m, opts, epoch, steps, start, test_set, eval_number, correct);
        if (opts.save) {
            save(m, *opts.save);
            report.checkpoint = *opts.save;
        }
        report.epochs.push_back(result);
        if (on.epoch_done) {
            on.epoch_done(result);
        }
        // Under --gpus N the ranks agree after every epoch, the last one included (a Ctrl-C
        // during it, its evaluation or its save): every rank stops, or ends, alike. On one GPU
        // the flag is read between steps, and once more at the end.
        report.interrupted = group != nullptr ? stop_agreed(group, m.s) : report.interrupted;
    }
    if (group != nullptr) {
        group->check_identical(m.store, m.s);
        report.replicas_identical = group->rank() == 0;
    }
    // One GPU: a Ctrl-C during the last epoch's evaluation or save came after the loop's last
    // look at the flag: the epoch is complete and saved, and the run was still interrupted.
    report.interrupted = report.interrupted || (group == nullptr && stop_requested.load() != 0);
    return report;
}

} // namespace

run_report run_training(const options& opts, const fashion_mnist& data, const callbacks& on,
                        replica_group* group)
{
    const gpu::profile profile = gpu::profile_from_name(opts.profile);
    gpu::stream s(gpu::stream_flags::non_blocking);
    model m(opts, profile, s, group);
    try {
        if (opts.resume) {
            nn::load_training_state(*opts.resume, m.store, m.optimizer, m.scaler, s);
        }
        return train_model(m, opts, data, on);
    } catch (...) {
        if (group != nullptr) {
            // Before m's handles are destroyed: cublasDestroy synchronises the device, and a
            // collective that waits for a rank that failed would never end.
            group->abort();
        }
        throw;
    }
}

} // namespace train
