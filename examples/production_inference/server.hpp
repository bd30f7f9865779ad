// cudagap-infer's GPU part: the Python InferenceWrapper (predict, predict_batch) over batch
// buckets. Each bucket is planned once (forward only, the profile's algorithm search), run once
// eagerly and captured once as a CUDA graph; a request is padded up to the smallest bucket that
// holds it and run eagerly or by one graph launch. See docs/production_inference.md.
#pragma once

#include "model.hpp"

#include <gpu/blas/handle.hpp>
#include <gpu/blas/lt.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/element_type.hpp>
#include <gpu/nn/context.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace infer {

/// How a request runs: the layers called one by one (what PyTorch's eager mode does), or one
/// launch of the bucket's captured graph (what torch.compile(mode="reduce-overhead") replays).
enum class run_mode { eager, graph };

/// "eager" or "graph".
[[nodiscard]] std::string_view to_string(run_mode mode) noexcept;

/// The buckets when none are given.
inline const std::vector<std::int64_t> default_buckets{1, 8, 32, 128, 256};
/// The largest bucket accepted: its activations alone take about 5.3 GiB in FP32
/// (activation_bytes(max_bucket, fp32)), before the convolution workspaces.
inline constexpr std::int64_t max_bucket = 16384;

/// The cuDNN workspace budget of each convolution plan in a server unless told otherwise:
/// 256 MiB. Every bucket keeps two plans (conv1, conv2) resident with a workspace each, and only
/// one runs at a time on the server's stream, so the library's default of 4 GiB a plan could hold
/// 2 x 5 x 4 GiB for the default buckets; 256 MiB caps them at 2.5 GiB (device_memory() says
/// what they take). It still admits the explicit im2col GEMM up to a bucket of 256 in FP32
/// (conv2's unfolded input there: 153 MiB); an algorithm that needs more (an FFT on a large
/// bucket, say) is skipped, and the plan's explain() says so.
inline constexpr std::size_t default_workspace_budget = std::size_t{256} << 20;

/// The device bytes of one bucket's activations for @p rows images computed in @p compute: the
/// FP32 input, its compute-type copy (not under FP32), every layer's output and the FP32 logits
/// (not under FP32, where the model writes them directly). Host only; what a server allocates.
[[nodiscard]] std::size_t activation_bytes(std::int64_t rows, gpu::element_type compute);

/// Checks @p buckets: not empty, strictly ascending, each in [1, max_bucket]; std::invalid_argument
/// naming the bad value otherwise.
void check_buckets(std::span<const std::int64_t> buckets);

/// The smallest of @p buckets (checked, ascending) that holds @p rows (>= 1); the largest when
/// none does (the request is then split).
[[nodiscard]] std::int64_t bucket_for(std::int64_t rows, std::span<const std::int64_t> buckets);

/// One launch of a request: rows [first, first + rows) padded up to bucket.
struct chunk {
    std::int64_t first = 0;
    std::int64_t rows = 0;
    std::int64_t bucket = 0;
    friend bool operator==(const chunk&, const chunk&) = default;
};

/// How a request of @p rows (>= 1) runs: full chunks of the largest bucket while more rows remain
/// than it holds, then the rest in the smallest bucket that holds it.
[[nodiscard]] std::vector<chunk> split_request(std::int64_t rows,
                                               std::span<const std::int64_t> buckets);

/// The number of images in @p images (floats [N, 1, 28, 28]); std::invalid_argument naming
/// @p function and the float count when it is empty or not a whole number of images.
[[nodiscard]] std::int64_t images_in(std::span<const float> images, std::string_view function);

/// What a server is made with.
struct server_options {
    std::vector<std::int64_t> buckets = default_buckets;
    /// The algorithm search (production: exhaustive, timed; cudnn.benchmark), TF32, determinism.
    gpu::profile profile = gpu::profile::production();
    /// Capture each bucket as a CUDA graph (a profile that synchronises after each call, such as
    /// development, cannot be captured: the constructor refuses it with capture on).
    bool capture = true;
    /// Called before each bucket is planned: (index, count, bucket).
    std::function<void(std::size_t, std::size_t, std::int64_t)> progress;
    /// The cuDNN workspace budget of each convolution plan (gpu::dnn::convolution_options):
    /// algorithms that need more are skipped. 0 allows only algorithms without workspace.
    std::size_t workspace_budget_bytes = default_workspace_budget;
    /// Fill the pinned output and the device logits with NaN before every request, so that a
    /// path that writes nothing shows as NaN instead of the last request's logits (for tests;
    /// one small extra copy a request).
    bool poison_outputs = false;
};

/// The device memory a server holds, in bytes.
struct memory_use {
    /// The parameter store: the FP32 master, the compute-type copy (none under FP32) and the
    /// FP32 gradient buffer, which the store allocates also for inference, unused there.
    std::size_t parameters = 0;
    /// Every bucket's activations (activation_bytes of each bucket).
    std::size_t activations = 0;
    /// Every bucket's cuDNN convolution workspaces (conv1 and conv2, resident side by side).
    std::size_t convolution_workspaces = 0;
    /// The cuBLAS and cuBLASLt workspaces (one each, shared by every bucket).
    std::size_t library_workspaces = 0;
    /// The sum.
    [[nodiscard]] std::size_t total() const noexcept
    {
        return parameters + activations + convolution_workspaces + library_workspaces;
    }
};

/// The model on a GPU, planned and captured per bucket, answering requests. One per thread (its
/// handles and stream are); not copyable or movable (the graphs hold its buffers' addresses).
class server {
public:
    /// Allocates the model in @p precision with @p weights (the store's FP32 layout: load_weights)
    /// converted once to the compute precision, then plans, warms up and captures every bucket.
    /// Throws std::invalid_argument for weights of another size, bad buckets, or capture asked
    /// under a profile that synchronises, before any CUDA call (so also without a GPU);
    /// gpu::error (out_of_memory, ...) from the GPU.
    server(gpu::nn::mixed_precision precision, std::span<const float> weights,
           const server_options& options);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;
    server(server&&) = delete;
    server& operator=(server&&) = delete;

    /// The logits [N, 10] of @p images (normalised floats [N, 1, 28, 28]): Python's
    /// predict(inputs). Padded to a bucket; more rows than the largest bucket are split. Graph
    /// mode needs capture on (std::logic_error otherwise).
    [[nodiscard]] std::vector<float> predict(std::span<const float> images,
                                             run_mode mode = run_mode::graph);

    /// The logits of @p images predicted @p batch_size at a time (the last batch may be smaller),
    /// concatenated: the Python wrapper's predict_batch(inputs, batch_size).
    [[nodiscard]] std::vector<float> predict_batch(std::span<const float> images,
                                                   std::int64_t batch_size,
                                                   run_mode mode = run_mode::graph);

    /// The buckets, ascending.
    [[nodiscard]] const std::vector<std::int64_t>& buckets() const noexcept { return buckets_; }
    /// Whether graph mode is available.
    [[nodiscard]] bool captured() const noexcept { return capture_; }
    /// Forward passes run so far (eager runs and graph launches), warm-ups included.
    [[nodiscard]] std::uint64_t forward_passes() const noexcept { return passes_; }
    /// Seconds the constructor took to plan, warm up and capture every bucket.
    [[nodiscard]] double setup_seconds() const noexcept { return setup_seconds_; }
    /// The device memory held: the parameters, every bucket's activations and convolution
    /// workspaces, the library workspaces.
    [[nodiscard]] memory_use device_memory() const;
    /// One line per bucket: the convolution algorithms chosen and why, the device memory the
    /// bucket holds (workspaces, activations), the graph's node count; then one line with the
    /// device memory the whole server holds (device_memory()).
    [[nodiscard]] std::vector<std::string> describe() const;

private:
    struct bucket;
    // The argument checks, made before any CUDA call (called from the first member initialiser);
    // returns the flags of the server's stream.
    static gpu::stream_flags checked(gpu::nn::mixed_precision precision,
                                     std::span<const float> weights, const server_options& options);
    void run_chunk(std::span<const float> images, const chunk& part, run_mode mode,
                   std::span<float> logits);

    gpu::stream stream_;
    gpu::blas::handle blas_;
    gpu::blas::lt_handle lt_;
    gpu::dnn::handle dnn_;
    network net_;
    gpu::nn::context ctx_;
    std::vector<std::int64_t> buckets_;
    bool capture_ = true;
    bool poison_ = false;
    std::vector<std::unique_ptr<bucket>> plans_;
    std::uint64_t passes_ = 0;
    double setup_seconds_ = 0.0;
};

} // namespace infer
