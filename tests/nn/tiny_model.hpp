// A small model of the merged layers for the [gpu] tests of whole training steps (checkpoints,
// the captured step): [batch, 1, 8, 8] -> flatten -> linear 64->32 with ReLU -> linear 32->10 ->
// cross-entropy, with AdamW and the grad scaler of its precision. Needs a GPU.
#pragma once

#include <gpu/blas/handle.hpp>
#include <gpu/blas/lt.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/memory.hpp>
#include <gpu/nn/adamw.hpp>
#include <gpu/nn/context.hpp>
#include <gpu/nn/cross_entropy.hpp>
#include <gpu/nn/flatten.hpp>
#include <gpu/nn/grad_scaler.hpp>
#include <gpu/nn/linear.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/nn/tensor.hpp>
#include <gpu/stream.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

namespace gpu::test {

/// The library handles of a model, on one stream (shared by models that must choose the same
/// cuBLASLt algorithms, for results equal bit for bit).
struct model_handles {
    gpu::blas::handle blas;
    gpu::blas::lt_handle lt;
    gpu::dnn::handle dnn;

    explicit model_handles(gpu::stream_ref stream) : blas(stream), lt(stream), dnn(stream) {}
};

/// One batch on the host: the input in the compute type's bytes, and the labels.
struct host_batch {
    std::vector<std::byte> pixels;
    std::vector<std::int32_t> labels;
};

/// A batch of @p rows random images in @p type (uniform in [-1, 1]) and labels in [0, 10) from
/// @p seed; with @p poisoned, the first pixel is +Inf (a step the grad scaler must skip).
inline host_batch make_batch(std::int64_t rows, gpu::element_type type, std::uint32_t seed,
                             bool poisoned = false)
{
    std::mt19937 engine(seed);
    std::uniform_real_distribution<float> pixel(-1.0F, 1.0F);
    std::uniform_int_distribution<std::int32_t> label(0, 9);
    const auto count = static_cast<std::size_t>(rows * 64);
    host_batch batch;
    batch.pixels.resize(count * gpu::element_size(type));
    for (std::size_t i = 0; i < count; ++i) {
        const float value =
            (poisoned && i == 0) ? std::numeric_limits<float>::infinity() : pixel(engine);
        if (type == gpu::element_type::fp16) {
            const __half h = __float2half(value);
            std::memcpy(batch.pixels.data() + 2 * i, &h, 2);
        } else if (type == gpu::element_type::bf16) {
            const __nv_bfloat16 b = __float2bfloat16(value);
            std::memcpy(batch.pixels.data() + 2 * i, &b, 2);
        } else {
            std::memcpy(batch.pixels.data() + 4 * i, &value, 4);
        }
    }
    for (std::int64_t i = 0; i < rows; ++i) {
        batch.labels.push_back(label(engine));
    }
    return batch;
}

/// The model, its loss, optimizer and scaler, and its activation buffers for one batch size.
struct tiny_model {
    gpu::stream_ref stream;
    gpu::nn::parameters store;
    gpu::nn::flatten flat;
    gpu::nn::linear fc1;
    gpu::nn::linear fc2;
    gpu::nn::context ctx;
    gpu::nn::cross_entropy loss;
    gpu::nn::adamw optimizer;
    gpu::nn::grad_scaler scaler;
    std::int64_t batch = 0;
    gpu::nn::tensor x, h, y, dh, dy;
    gpu::device_buffer<std::int32_t> labels;
    gpu::device_buffer<float> loss_value;

    tiny_model(model_handles& handles, gpu::stream_ref s, gpu::nn::mixed_precision precision,
               std::int64_t rows, std::uint64_t seed,
               const gpu::nn::grad_scaler_options& scaling = {})
        : stream(s), store(precision), fc1(store, "fc1", 64, 32, {.relu = true}),
          fc2(store, "fc2", 32, 10), ctx(s, handles.blas, handles.lt, handles.dnn, store),
          loss(10, precision.compute, s), optimizer(store.total_elements(), s, {.lr = 1e-2}),
          scaler(gpu::nn::grad_scaler::for_precision(precision.compute, s, scaling)),
          loss_value(1, s)
    {
        store.allocate(s);
        store.initialize(seed, s);
        plan(rows);
    }

    /// Plans the layers for @p rows and makes the buffers of that batch size (new addresses).
    void plan(std::int64_t rows)
    {
        batch = rows;
        const gpu::nn::tensor_spec input{.shape = {rows, 1, 8, 8},
                                         .type = store.precision().compute};
        const gpu::nn::tensor_spec flat_spec = flat.plan(ctx, input);
        const gpu::nn::tensor_spec hidden = fc1.plan(ctx, flat_spec);
        const gpu::nn::tensor_spec logits = fc2.plan(ctx, hidden);
        x = gpu::nn::tensor(input, stream);
        h = gpu::nn::tensor(hidden, stream);
        dh = gpu::nn::tensor(hidden, stream);
        y = gpu::nn::tensor(logits, stream);
        dy = gpu::nn::tensor(logits, stream);
        labels = gpu::device_buffer<std::int32_t>(static_cast<std::size_t>(rows), stream);
    }

    /// Copies @p b into the fixed input buffers, ordered before the next step on the stream.
    void load(const host_batch& b)
    {
        x.buffer().copy_from_host_async(b.pixels, stream);
        labels.copy_from_host_async(b.labels, stream);
    }

    /// One whole training step, nothing synchronising: what a graph captures.
    void step(gpu::stream_ref s)
    {
        store.zero_grad(s);
        const gpu::nn::tensor_ref x_flat{x.data(), *flat.planned_output()};
        flat.forward(ctx, x.ref(), x_flat);
        fc1.forward(ctx, x_flat, h.ref());
        fc2.forward(ctx, h.ref(), y.ref());
        loss.forward(y.data(), labels.data(), batch, loss_value.data(), s);
        loss.backward(y.data(), labels.data(), batch, dy.data(), scaler.scale(), s);
        fc2.backward(ctx, dy.ref(), dh.ref());
        fc1.backward(ctx, dh.ref(), {});
        optimizer.step(store.master(), store.gradient(), scaler, s);
        scaler.update(s);
        store.refresh_working_copy(s);
    }

    /// The master parameters, read after the work queued so far.
    std::vector<float> master() const
    {
        std::vector<float> values(store.total_elements());
        store.master().copy_to_host_async(values, stream);
        stream.synchronize();
        return values;
    }
};

} // namespace gpu::test
