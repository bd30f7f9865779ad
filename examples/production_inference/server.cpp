// cudagap-infer's GPU part: one set of layers per bucket over one parameter store (conv2d and
// linear share their parameters), planned forward only, each with its own buffers and graph.
#include "server.hpp"

#include <gpu/blas/convert.hpp>
#include <gpu/capture.hpp>
#include <gpu/graph.hpp>
#include <gpu/memory.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/nn/flatten.hpp>
#include <gpu/nn/max_pool2d.hpp>
#include <gpu/nn/relu.hpp>
#include <gpu/nn/tensor.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstdio>
#include <stdexcept>

namespace infer {

namespace nn = gpu::nn;

std::string_view to_string(run_mode mode) noexcept
{
    return mode == run_mode::eager ? "eager" : "graph";
}

void check_buckets(std::span<const std::int64_t> buckets)
{
    if (buckets.empty()) {
        throw std::invalid_argument("the list of buckets is empty");
    }
    for (std::size_t i = 0; i < buckets.size(); ++i) {
        if (buckets[i] < 1 || buckets[i] > max_bucket) {
            throw std::invalid_argument("bucket " + std::to_string(buckets[i]) +
                                        " is outside [1, " + std::to_string(max_bucket) + "]");
        }
        if (i > 0 && buckets[i] <= buckets[i - 1]) {
            throw std::invalid_argument(
                "buckets must be strictly ascending: " + std::to_string(buckets[i]) + " follows " +
                std::to_string(buckets[i - 1]));
        }
    }
}

std::int64_t bucket_for(std::int64_t rows, std::span<const std::int64_t> buckets)
{
    check_buckets(buckets);
    if (rows < 1) {
        throw std::invalid_argument("bucket_for: " + std::to_string(rows) +
                                    " rows; a request has at least one");
    }
    const auto it = std::lower_bound(buckets.begin(), buckets.end(), rows);
    return it == buckets.end() ? buckets.back() : *it;
}

std::vector<chunk> split_request(std::int64_t rows, std::span<const std::int64_t> buckets)
{
    check_buckets(buckets);
    if (rows < 1) {
        throw std::invalid_argument("split_request: " + std::to_string(rows) +
                                    " rows; a request has at least one");
    }
    const std::int64_t largest = buckets.back();
    std::vector<chunk> parts;
    std::int64_t first = 0;
    for (; rows - first > largest; first += largest) {
        parts.push_back({first, largest, largest});
    }
    parts.push_back({first, rows - first, bucket_for(rows - first, buckets)});
    return parts;
}

std::size_t activation_bytes(std::int64_t rows, gpu::element_type compute)
{
    // Per image, in elements: conv1's output and its ReLU (32 x 28 x 28 each), the pool (32 x 14
    // x 14), conv2's output and its ReLU (64 x 14 x 14 each), the pool (64 x 7 x 7; flatten is a
    // view of it), fc1 (1024) and fc2 (10), all in the compute type.
    constexpr std::size_t side = image_side, half = side / 2, quarter = half / 2;
    constexpr std::size_t layers = 2 * 32 * side * side + 32 * half * half + 2 * 64 * half * half +
                                   64 * quarter * quarter + 1024 + classes;
    const bool fp32 = compute == gpu::element_type::fp32;
    // The FP32 input always; the compute-type input and the FP32 logits only when converted.
    const std::size_t per_image =
        image_elements * sizeof(float) + layers * gpu::element_size(compute) +
        (fp32 ? 0 : image_elements * gpu::element_size(compute) + classes * sizeof(float));
    return static_cast<std::size_t>(rows) * per_image;
}

std::int64_t images_in(std::span<const float> images, std::string_view function)
{
    if (images.empty() || images.size() % image_elements != 0) {
        throw std::invalid_argument(
            std::string(function) + ": the input holds " + std::to_string(images.size()) +
            " floats, not a whole number (at least 1) of [1, 28, 28] images (" +
            std::to_string(image_elements) + " floats each)");
    }
    return static_cast<std::int64_t>(images.size() / image_elements);
}

namespace {

// The ledger's tag of one bucket's own memory: "bucket 64 activations".
gpu::memory_tag bucket_tag(std::int64_t rows)
{
    return gpu::memory_tag::define("bucket " + std::to_string(rows) + " activations",
                                   gpu::memory_category::activations);
}

// What @p tag holds now on @p device, by the process's ledger.
std::size_t ledger_bytes(gpu::memory_tag tag, int device)
{
    for (const gpu::memory_ledger_row& row : gpu::memory_ledger::global().rows(device)) {
        if (row.tag == tag) {
            return row.current_bytes;
        }
    }
    return 0;
}

// FP32 -> the compute type and back, on the stream (capturable); nothing for FP32.
void convert(const void* from, gpu::element_type from_type, void* to, gpu::element_type to_type,
             std::size_t count, gpu::stream_ref s)
{
    using gpu::element_type;
    if (from_type == element_type::fp32 && to_type == element_type::fp16) {
        gpu::blas::convert(static_cast<const float*>(from), static_cast<__half*>(to), count, s);
    } else if (from_type == element_type::fp32 && to_type == element_type::bf16) {
        gpu::blas::convert(static_cast<const float*>(from), static_cast<__nv_bfloat16*>(to), count,
                           s);
    } else if (from_type == element_type::fp16 && to_type == element_type::fp32) {
        gpu::blas::convert(static_cast<const __half*>(from), static_cast<float*>(to), count, s);
    } else if (from_type == element_type::bf16 && to_type == element_type::fp32) {
        gpu::blas::convert(static_cast<const __nv_bfloat16*>(from), static_cast<float*>(to), count,
                           s);
    }
}

} // namespace

// One bucket: its own layers (parameters shared with the store), buffers, pinned staging and
// graph. The FP32 input and logits are converted to and from the compute type inside the
// forward (and so inside the graph); under FP32 the model reads and writes them directly.
struct server::bucket {
    std::int64_t rows;
    nn::conv2d conv1;
    nn::relu relu1;
    nn::max_pool2d pool1{2};
    nn::conv2d conv2;
    nn::relu relu2;
    nn::max_pool2d pool2{2};
    nn::flatten flat;
    nn::linear fc1;
    nn::linear fc2;
    nn::tensor input, x, c1, r1, p1, c2, r2, p2, h, y, logits;
    gpu::pinned_buffer<float> host_in;
    gpu::pinned_buffer<float> host_out;
    gpu::graph_exec graph;
    std::size_t graph_nodes = 0;

    bucket(const network& net, std::int64_t n)
        : rows(n), conv1(net.conv1.share()), conv2(net.conv2.share()), fc1(net.fc1.share()),
          fc2(net.fc2.share()), host_in(static_cast<std::size_t>(n) * image_elements),
          host_out(static_cast<std::size_t>(n * classes))
    {}

    // Plans every layer for `rows` (forward only: the context is in inference mode) and makes
    // the buffers.
    void plan(nn::context& ctx)
    {
        const gpu::stream_ref s = ctx.stream();
        const gpu::element_type compute = ctx.precision().compute;
        const nn::tensor_spec in{.shape = {rows, 1, image_side, image_side},
                                 .type = gpu::element_type::fp32};
        nn::tensor_spec xs = in;
        xs.type = compute;
        const nn::tensor_spec c1s = conv1.plan(ctx, xs), r1s = relu1.plan(ctx, c1s),
                              p1s = pool1.plan(ctx, r1s);
        const nn::tensor_spec c2s = conv2.plan(ctx, p1s), r2s = relu2.plan(ctx, c2s),
                              p2s = pool2.plan(ctx, r2s);
        const nn::tensor_spec fs = flat.plan(ctx, p2s), hs = fc1.plan(ctx, fs),
                              ys = fc2.plan(ctx, hs);
        input = nn::tensor(in, s);
        x = compute == gpu::element_type::fp32 ? nn::tensor() : nn::tensor(xs, s);
        c1 = nn::tensor(c1s, s);
        r1 = nn::tensor(r1s, s);
        p1 = nn::tensor(p1s, s);
        c2 = nn::tensor(c2s, s);
        r2 = nn::tensor(r2s, s);
        p2 = nn::tensor(p2s, s);
        h = nn::tensor(hs, s);
        y = nn::tensor(ys, s);
        nn::tensor_spec ls = ys;
        ls.type = gpu::element_type::fp32;
        logits = compute == gpu::element_type::fp32 ? nn::tensor() : nn::tensor(ls, s);
    }

    // The whole forward on the context's stream: no host synchronisation, no allocation.
    void forward(nn::context& ctx)
    {
        const gpu::stream_ref s = ctx.stream();
        nn::tensor_ref in = x.data() != nullptr ? x.ref() : input.ref();
        if (x.data() != nullptr) {
            convert(input.data(), gpu::element_type::fp32, x.data(), x.spec().type,
                    x.spec().elements(), s);
        }
        const nn::tensor_ref flat_p2{p2.data(), *flat.planned_output()};
        conv1.forward(ctx, in, c1.ref());
        relu1.forward(ctx, c1.ref(), r1.ref());
        pool1.forward(ctx, r1.ref(), p1.ref());
        conv2.forward(ctx, p1.ref(), c2.ref());
        relu2.forward(ctx, c2.ref(), r2.ref());
        pool2.forward(ctx, r2.ref(), p2.ref());
        flat.forward(ctx, p2.ref(), flat_p2);
        fc1.forward(ctx, flat_p2, h.ref());
        fc2.forward(ctx, h.ref(), y.ref());
        if (logits.data() != nullptr) {
            convert(y.data(), y.spec().type, logits.data(), gpu::element_type::fp32,
                    logits.spec().elements(), s);
        }
    }

    nn::tensor& output() { return logits.data() != nullptr ? logits : y; }

    // The device bytes of the activations: every tensor above (empty ones hold none).
    [[nodiscard]] std::size_t activations() const
    {
        std::size_t bytes = 0;
        for (const nn::tensor* t : {&input, &x, &c1, &r1, &p1, &c2, &r2, &p2, &h, &y, &logits}) {
            bytes += t->buffer().size_bytes();
        }
        return bytes;
    }

    // The device bytes of the two convolution plans' workspaces.
    [[nodiscard]] std::size_t workspaces() const
    {
        return conv1.forward_plan()->workspace().size_bytes() +
               conv2.forward_plan()->workspace().size_bytes();
    }

    // Fills the pinned output and the device logits (and fc2's compute-type output when the
    // logits are converted from it) with all-ones bits: NaN as FP32, and each 16-bit half of it
    // NaN as FP16 and BF16. Queued before the request's work, read before the host writes again.
    void poison(gpu::stream_ref s)
    {
        std::fill(host_out.begin(), host_out.end(), std::bit_cast<float>(~std::uint32_t{0}));
        const std::span<const std::byte> nan_bytes = std::as_bytes(host_out.span());
        output().buffer().copy_from_host_async(nan_bytes, s);
        if (logits.data() != nullptr) {
            y.buffer().copy_from_host_async(nan_bytes.first(y.buffer().size_bytes()), s);
        }
    }
};

gpu::stream_flags server::checked(nn::mixed_precision precision, std::span<const float> weights,
                                  const server_options& options)
{
    check_buckets(options.buckets);
    // The store's layout on the host (registration allocates nothing on the device).
    const std::size_t expected = network(precision).store.total_elements();
    if (weights.size() != expected) {
        throw std::invalid_argument("infer::server: " + std::to_string(weights.size()) +
                                    " weights for a store of " + std::to_string(expected));
    }
    if (options.capture && (options.profile.synchronous_checks || options.profile.check_numerics)) {
        throw std::invalid_argument(
            "infer::server: the " + options.profile.name +
            " profile synchronises after each call, which a CUDA graph capture cannot "
            "hold: capture off, or another profile");
    }
    return gpu::stream_flags::non_blocking;
}

server::server(nn::mixed_precision precision, std::span<const float> weights,
               const server_options& options)
    : stream_(checked(precision, weights, options)), blas_(options.profile, stream_),
      lt_(stream_, gpu::blas::lt_handle_options::from_profile(options.profile)), dnn_(stream_),
      net_(precision), ctx_(stream_, blas_, lt_, dnn_, net_.store), buckets_(options.buckets),
      capture_(options.capture), poison_(options.poison_outputs)
{
    const auto start = std::chrono::steady_clock::now();
    ctx_.set_training(false);      // model.eval()
    ctx_.set_inference_mode(true); // torch.inference_mode(): forward-only plans
    gpu::dnn::convolution_options convolutions =
        gpu::dnn::convolution_options::from_profile(options.profile);
    // Two plans a bucket stay resident, each with its workspace: a budget per plan, not 4 GiB.
    convolutions.workspace_budget_bytes = options.workspace_budget_bytes;
    ctx_.set_convolution_options(convolutions);
    // The weights, converted once: FP32 master from the host, then the compute-type copy.
    net_.store.allocate(stream_);
    net_.store.master().copy_from_host(weights);
    net_.store.refresh_working_copy(stream_);
    for (std::size_t i = 0; i < buckets_.size(); ++i) {
        if (options.progress) {
            options.progress(i, buckets_.size(), buckets_[i]);
        }
        // What the bucket allocates for itself (its activations) is its own line in the ledger.
        const gpu::memory_tag_scope tagged(bucket_tag(buckets_[i]));
        auto b = std::make_unique<bucket>(net_, buckets_[i]);
        b->plan(ctx_);
        b->input.buffer().fill_zero_async(stream_);
        b->forward(
            ctx_); // the warm-up: lazy loading and cuBLASLt's choice happen outside the capture
        ++passes_;
        if (capture_) {
            const gpu::graph g = gpu::capture(stream_, [&](gpu::stream_ref) { b->forward(ctx_); });
            b->graph_nodes = g.node_count();
            b->graph = gpu::graph_exec(g);
            b->graph.upload(stream_);
        }
        plans_.push_back(std::move(b));
    }
    stream_.synchronize();
    setup_seconds_ =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

server::~server() = default;

void server::run_chunk(std::span<const float> images, const chunk& part, run_mode mode,
                       std::span<float> logits)
{
    const auto index = static_cast<std::size_t>(
        std::lower_bound(buckets_.begin(), buckets_.end(), part.bucket) - buckets_.begin());
    bucket& b = *plans_[index];
    const std::size_t used = static_cast<std::size_t>(part.rows) * image_elements;
    const auto from = images.begin() + static_cast<std::ptrdiff_t>(
                                           static_cast<std::size_t>(part.first) * image_elements);
    std::copy(from, from + static_cast<std::ptrdiff_t>(used), b.host_in.begin());
    // Padding rows are zeros: rows are independent, so they change nothing but are defined.
    std::fill(b.host_in.begin() + static_cast<std::ptrdiff_t>(used), b.host_in.end(), 0.0F);
    if (poison_) {
        b.poison(stream_);
    }
    b.input.buffer().copy_from_host_async(std::as_bytes(b.host_in.span()), stream_);
    if (mode == run_mode::graph) {
        b.graph.launch(stream_);
    } else {
        b.forward(ctx_);
    }
    ++passes_;
    b.output().buffer().copy_to_host_async(std::as_writable_bytes(b.host_out.span()), stream_);
    stream_.synchronize();
    const std::size_t out = static_cast<std::size_t>(part.rows * classes);
    std::copy(b.host_out.begin(), b.host_out.begin() + static_cast<std::ptrdiff_t>(out),
              logits.begin() +
                  static_cast<std::ptrdiff_t>(static_cast<std::size_t>(part.first * classes)));
}

std::vector<float> server::predict(std::span<const float> images, run_mode mode)
{
    const std::int64_t rows = images_in(images, "infer::server::predict");
    if (mode == run_mode::graph && !capture_) {
        throw std::logic_error(
            "infer::server::predict: graph mode, but this server was made with capture off");
    }
    std::vector<float> logits(static_cast<std::size_t>(rows * classes));
    for (const chunk& part : split_request(rows, buckets_)) {
        run_chunk(images, part, mode, logits);
    }
    return logits;
}

std::vector<float> server::predict_batch(std::span<const float> images, std::int64_t batch_size,
                                         run_mode mode)
{
    const std::int64_t rows = images_in(images, "infer::server::predict_batch");
    if (batch_size < 1) {
        throw std::invalid_argument("infer::server::predict_batch: batch_size " +
                                    std::to_string(batch_size) + " must be at least 1");
    }
    std::vector<float> logits;
    logits.reserve(static_cast<std::size_t>(rows * classes));
    for (std::int64_t first = 0; first < rows; first += batch_size) {
        const std::int64_t n = std::min(batch_size, rows - first);
        const std::vector<float> part =
            predict(images.subspan(static_cast<std::size_t>(first) * image_elements,
                                   static_cast<std::size_t>(n) * image_elements),
                    mode);
        logits.insert(logits.end(), part.begin(), part.end());
    }
    return logits;
}

memory_use server::device_memory() const
{
    memory_use use;
    const nn::parameters& store = net_.store;
    const gpu::element_type compute = store.precision().compute;
    use.parameters =
        store.master().size_bytes() + store.gradient().size_bytes() +
        (compute == gpu::element_type::fp32 ? 0
                                            : store.total_elements() * gpu::element_size(compute));
    for (const auto& b : plans_) {
        use.activations += b->activations();
        use.convolution_workspaces += b->workspaces();
    }
    use.library_workspaces = blas_.workspace_size().value_or(0) + lt_.workspace_size();
    return use;
}

namespace {

std::string mib(std::size_t bytes)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return text;
}

// E.g. "implicit_gemm (0.011 ms, timed)".
std::string algorithm_of(const nn::conv2d& conv)
{
    const gpu::dnn::convolution_explanation e = conv.forward_plan()->explain();
    std::string text(gpu::dnn::to_string(e.algorithm));
    if (e.time_ms) {
        char timed[48];
        std::snprintf(timed, sizeof timed, " (%.3f ms, timed)", *e.time_ms);
        text += timed;
    }
    return text;
}

} // namespace

std::vector<std::string> server::describe() const
{
    std::vector<std::string> lines;
    const int device = stream_.device().id();
    for (const auto& b : plans_) {
        const gpu::memory_tag tag = bucket_tag(b->rows);
        lines.push_back(
            "bucket " + std::to_string(b->rows) + ": conv1 " + algorithm_of(b->conv1) + ", conv2 " +
            algorithm_of(b->conv2) + ", workspaces " + mib(b->workspaces()) + ", activations " +
            mib(b->activations()) + " (the ledger's " + tag.name() + ": " +
            mib(ledger_bytes(tag, device)) + ")" +
            (capture_ ? ", graph of " + std::to_string(b->graph_nodes) + " nodes" : ""));
    }
    const memory_use use = device_memory();
    lines.push_back(
        "device memory held: " + mib(use.total()) + " (parameters " + mib(use.parameters) +
        ", with the FP32 gradient buffer the store keeps; activations " + mib(use.activations) +
        "; convolution workspaces " + mib(use.convolution_workspaces) + ", at most " +
        mib(ctx_.convolution_options().workspace_budget_bytes) + " a plan; cuBLAS and cuBLASLt " +
        mib(use.library_workspaces) + ")");
    return lines;
}

} // namespace infer
