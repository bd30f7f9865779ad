// cudagap-infer's machinery (examples/production_inference: model, server, measure). Without a
// GPU: the model's names and shapes, checkpoints of another model or format, buckets and the
// split of a request, the input check, the server's argument checks (before any CUDA call), the
// activations' size, the statistics and the argmax. On a GPU (outputs poisoned with NaN before
// every request): eager and graph equal bit for bit, padding that changes nothing, a split
// request, predict_batch, the logits against a float64 forward on the CPU, and the device memory
// a server holds.
#include "measure.hpp"
#include "model.hpp"
#include "server.hpp"

#include "catch.hpp"

#include <gpu/nn/checkpoint.hpp>
#include <gpu/nn/format_error.hpp>
#include <gpu/nn/safetensors.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;

namespace {

// A fresh folder under the system's temporary folder, removed at the end of the test.
struct temporary_folder {
    std::filesystem::path path;
    explicit temporary_folder(const std::string& name)
        : path(std::filesystem::temp_directory_path() / ("cudagap-infer-test-" + name))
    {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~temporary_folder() { std::filesystem::remove_all(path); }
    temporary_folder(const temporary_folder&) = delete;
    temporary_folder& operator=(const temporary_folder&) = delete;
};

// A server's options: the defaults but @p buckets and @p profile, and the outputs poisoned with
// NaN before every request, so that a path that writes nothing gives NaN, never the previous
// request's logits.
infer::server_options settings(std::vector<std::int64_t> buckets,
                               const gpu::profile& profile = gpu::profile::production())
{
    infer::server_options options;
    options.buckets = std::move(buckets);
    options.profile = profile;
    options.poison_outputs = true;
    return options;
}

} // namespace

TEST_CASE("cudagap-infer's model has cudagap-train's parameters under PyTorch's names", "[infer]")
{
    const infer::network net(nn::mixed_precision::fp16());
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> found;
    for (const nn::parameter_info& p : net.store.infos()) {
        found.emplace_back(p.name, p.shape);
    }
    const std::vector<std::pair<std::string, std::vector<std::int64_t>>> expected{
        {"conv1.weight", {32, 1, 5, 5}},  {"conv1.bias", {32}},
        {"conv2.weight", {64, 32, 5, 5}}, {"conv2.bias", {64}},
        {"fc1.weight", {1024, 3136}},     {"fc1.bias", {1024}},
        {"fc2.weight", {10, 1024}},       {"fc2.bias", {10}}};
    CHECK(found == expected);
    CHECK(net.fc1.options().relu);
    CHECK_FALSE(net.fc2.options().relu);
    CHECK(infer::precision_of("bf16") == nn::mixed_precision::bf16());
    CHECK_THROWS_WITH(infer::precision_of("fp8"),
                      ContainsSubstring("unknown precision 'fp8' (fp16, bf16, fp32)"));
}

TEST_CASE("weights come from a seed or a checkpoint checked against the model", "[infer]")
{
    const infer::network net(nn::mixed_precision::fp32());
    const std::vector<float> seeded = infer::load_weights(net, std::nullopt, 7);
    CHECK(seeded == net.store.initial_values(7));
    temporary_folder dir("weights");
    nn::write_parameters(dir.path / "good.safetensors", net.store, seeded);
    CHECK(infer::load_weights(net, dir.path / "good.safetensors", 0) == seeded);

    // The same model with fc1 of 512 outputs: the first misshaped tensor is named, both shapes given.
    nn::parameters other;
    const nn::conv2d conv1(other, "conv1", 1, 32, 5, {.padding = {2, 2}});
    const nn::conv2d conv2(other, "conv2", 32, 64, 5, {.padding = {2, 2}});
    const nn::linear fc1(other, "fc1", 3136, 512, {.relu = true});
    const nn::linear fc2(other, "fc2", 512, 10);
    nn::write_parameters(dir.path / "other.safetensors", other,
                         std::vector<float>(other.total_elements(), 0.5F));
    CHECK_THROWS_MATCHES(
        infer::load_weights(net, dir.path / "other.safetensors", 0), nn::format_error,
        Catch::Matchers::Predicate<nn::format_error>([](const nn::format_error& e) {
            const std::string what = e.what();
            return e.field() == "tensor 'fc1.weight'" &&
                   what.find("[1024, 3136]") != std::string::npos &&
                   what.find("[512, 3136]") != std::string::npos;
        }));
    // A file that is not safetensors.
    std::ofstream(dir.path / "text.safetensors") << "not a checkpoint at all";
    CHECK_THROWS_WITH(infer::load_weights(net, dir.path / "text.safetensors", 0),
                      ContainsSubstring("text.safetensors"));
    CHECK_THROWS_AS(infer::load_weights(net, dir.path / "text.safetensors", 0), nn::format_error);
}

TEST_CASE("a request goes to the smallest bucket that holds it, and past the largest it is split",
          "[infer]")
{
    const std::vector<std::int64_t> buckets{1, 8, 32, 128, 256};
    CHECK(infer::bucket_for(1, buckets) == 1);
    CHECK(infer::bucket_for(2, buckets) == 8);
    CHECK(infer::bucket_for(8, buckets) == 8);
    CHECK(infer::bucket_for(33, buckets) == 128);
    CHECK(infer::bucket_for(256, buckets) == 256);
    CHECK(infer::bucket_for(1000, buckets) == 256);
    CHECK(infer::split_request(5, buckets) == std::vector<infer::chunk>{{0, 5, 8}});
    CHECK(infer::split_request(256, buckets) == std::vector<infer::chunk>{{0, 256, 256}});
    CHECK(infer::split_request(600, buckets) ==
          std::vector<infer::chunk>{{0, 256, 256}, {256, 256, 256}, {512, 88, 128}});
    const std::vector<std::int64_t> small{1, 8};
    CHECK(infer::split_request(17, small) ==
          std::vector<infer::chunk>{{0, 8, 8}, {8, 8, 8}, {16, 1, 1}});
    CHECK_THROWS_WITH(infer::bucket_for(0, buckets), ContainsSubstring("0 rows"));
    CHECK_THROWS_WITH(infer::check_buckets(std::vector<std::int64_t>{8, 1}),
                      ContainsSubstring("strictly ascending: 1 follows 8"));
    CHECK_THROWS_WITH(infer::check_buckets(std::vector<std::int64_t>{1, 1}),
                      ContainsSubstring("1 follows 1"));
    CHECK_THROWS_WITH(infer::check_buckets(std::vector<std::int64_t>{0}),
                      ContainsSubstring("bucket 0 is outside [1, 16384]"));
    CHECK_THROWS_WITH(infer::check_buckets(std::vector<std::int64_t>{}),
                      ContainsSubstring("empty"));
}

TEST_CASE("an input that is not whole images is refused with its size", "[infer]")
{
    CHECK(infer::images_in(std::vector<float>(3 * 784), "predict") == 3);
    CHECK_THROWS_WITH(
        infer::images_in(std::vector<float>(1000), "predict"),
        ContainsSubstring(
            "predict: the input holds 1000 floats, not a whole number (at least 1) of "
            "[1, 28, 28] images (784 floats each)"));
    CHECK_THROWS_AS(infer::images_in({}, "predict"), std::invalid_argument);
}

TEST_CASE("a server refuses bad arguments before any CUDA call, also without a GPU", "[infer]")
{
    // std::invalid_argument here, on a machine where every CUDA call fails: the checks come first.
    const std::vector<float> weights =
        infer::network(nn::mixed_precision::fp16()).store.initial_values(1);
    CHECK_THROWS_MATCHES(infer::server(nn::mixed_precision::fp16(), std::vector<float>(10), {}),
                         std::invalid_argument,
                         Catch::Matchers::Message("infer::server: 10 weights for a store of " +
                                                  std::to_string(weights.size())));
    CHECK_THROWS_AS(
        infer::server(nn::mixed_precision::fp32(), std::vector<float>(weights.size() + 1), {}),
        std::invalid_argument);
    CHECK_THROWS_MATCHES(
        infer::server(nn::mixed_precision::fp16(), weights, settings({8, 1})),
        std::invalid_argument,
        Catch::Matchers::Message("buckets must be strictly ascending: 1 follows 8"));
    CHECK_THROWS_AS(infer::server(nn::mixed_precision::fp16(), weights, settings({})),
                    std::invalid_argument);
    CHECK_THROWS_WITH(infer::server(nn::mixed_precision::fp16(), weights,
                                    settings({1, 8}, gpu::profile::development())),
                      ContainsSubstring("the development profile synchronises after each call"));
}

TEST_CASE(
    "a bucket's activations are the model's tensors, and the largest bucket's take 5.3 GiB in FP32",
    "[infer]")
{
    // Per image: the input (784), conv1 and its ReLU (2 x 32 x 28 x 28), the pool (32 x 14 x 14),
    // conv2 and its ReLU (2 x 64 x 14 x 14), the pool (64 x 7 x 7), fc1 (1024), fc2 (10).
    const std::size_t fp32_floats = 784 + 2 * 25088 + 6272 + 2 * 12544 + 3136 + 1024 + 10;
    CHECK(fp32_floats == 86490);
    CHECK(infer::activation_bytes(1, gpu::element_type::fp32) == fp32_floats * 4);
    CHECK(infer::activation_bytes(infer::max_bucket, gpu::element_type::fp32) ==
          16384 * fp32_floats * 4);
    const double gib =
        static_cast<double>(infer::activation_bytes(infer::max_bucket, gpu::element_type::fp32)) /
        static_cast<double>(std::size_t{1} << 30);
    CHECK(gib == Approx(5.28).margin(0.01)); // server.hpp's max_bucket says "about 5.3 GiB"
    // FP16 and BF16: the FP32 input and logits, and the same 86490 elements (the input's copy in
    // the compute type among them) in 2 bytes.
    const std::size_t half_bytes = 784 * 4 + fp32_floats * 2 + 10 * 4;
    CHECK(infer::activation_bytes(3, gpu::element_type::fp16) == 3 * half_bytes);
    CHECK(infer::activation_bytes(3, gpu::element_type::bf16) == 3 * half_bytes);
}

TEST_CASE("latency percentiles interpolate as NumPy's, and images/s counts every image", "[infer]")
{
    std::vector<double> samples(100);
    for (std::size_t i = 0; i < samples.size(); ++i) {
        samples[i] = static_cast<double>(100 - i); // 100 down to 1, unsorted on purpose
    }
    const infer::latency l = infer::summarize_latency(samples);
    CHECK(l.p50 == Approx(50.5));
    CHECK(l.p90 == Approx(90.1));
    CHECK(l.p99 == Approx(99.01));
    CHECK(l.mean == Approx(50.5));
    CHECK(infer::percentile({3.0}, 99) == 3.0);
    CHECK_THROWS_AS(infer::percentile({}, 50), std::invalid_argument);
    CHECK_THROWS_AS(infer::percentile({1.0}, 101), std::invalid_argument);
}

TEST_CASE("the predicted class is the first largest logit, as count_correct decides", "[infer]")
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> logits(3 * 10, 0.0F);
    logits[4] = 2.0F;      // row 0: class 4
    logits[10 + 2] = 1.0F; // row 1: a tie between 2 and 7: the first
    logits[10 + 7] = 1.0F;
    logits[20 + 0] = nan; // row 2: NaN never wins
    logits[20 + 5] = -1.0F;
    const std::vector<int> classes = infer::predicted_classes(logits);
    CHECK(classes == std::vector<int>{4, 2, 1});
    CHECK(infer::accuracy(classes, std::vector<std::uint8_t>{4, 7, 1}) == Approx(2.0 / 3.0));
    CHECK(infer::predicted_classes(std::vector<float>(10, nan)) == std::vector<int>{-1});
    CHECK_THROWS_AS(infer::accuracy(classes, std::vector<std::uint8_t>{1}), std::invalid_argument);
}

TEST_CASE("pixels are normalised as the device does, and a request repeats a small pool", "[infer]")
{
    CHECK(infer::normalize_pixel(0) == -0.2860F * (1.0F / 0.3530F));
    CHECK(infer::normalize_pixel(255) ==
          std::fma(255.0F, 1.0F / 255.0F, -0.2860F) * (1.0F / 0.3530F));
    CHECK(infer::normalize_pixel(128) == Approx((128.0 / 255.0 - 0.2860) / 0.3530).epsilon(1e-6));
    const infer::image_set pool = infer::synthetic_images(3, 5);
    CHECK(pool.count == 3);
    CHECK(pool.labels.empty());
    CHECK(pool.pixels == infer::synthetic_images(3, 5).pixels);
    const std::vector<float> request = infer::request_of(pool, 7);
    REQUIRE(request.size() == 7 * 784);
    CHECK(std::equal(request.begin() + 6 * 784, request.end(),
                     pool.pixels.begin())); // row 6 is image 0
    CHECK(std::equal(request.begin() + 2 * 784, request.begin() + 3 * 784,
                     pool.pixels.begin() + 2 * 784));
}

// ---- GPU ----------------------------------------------------------------------------------------

namespace {

// Random normalised images: pixels uniform in 0-255 from a seed.
std::vector<float> images(std::size_t count, std::uint64_t seed)
{
    return infer::synthetic_images(count, seed).pixels;
}

std::vector<float> rows_of(const std::vector<float>& all, std::size_t first, std::size_t count,
                           std::size_t width)
{
    return {all.begin() + static_cast<std::ptrdiff_t>(first * width),
            all.begin() + static_cast<std::ptrdiff_t>((first + count) * width)};
}

// The model's forward in float64 on the CPU, from the FP32 weights (the store's layout).
class reference_model {
public:
    reference_model(const infer::network& net, const std::vector<float>& weights)
        : net_(net), w_(weights)
    {}

    [[nodiscard]] std::vector<double> logits(const std::vector<float>& input,
                                             std::size_t count) const
    {
        std::vector<double> out;
        for (std::size_t n = 0; n < count; ++n) {
            std::vector<double> x(input.begin() + static_cast<std::ptrdiff_t>(n * 784),
                                  input.begin() + static_cast<std::ptrdiff_t>((n + 1) * 784));
            x = pool(relu(conv(x, 1, 32, 28, "conv1")), 32, 28);
            x = pool(relu(conv(x, 32, 64, 14, "conv2")), 64, 14);
            x = relu(dense(x, 3136, 1024, "fc1"));
            x = dense(x, 1024, 10, "fc2");
            out.insert(out.end(), x.begin(), x.end());
        }
        return out;
    }

private:
    // The first value of parameter `name` (found once per layer, not per product).
    [[nodiscard]] const float* param(const std::string& name) const
    {
        return w_.data() + net_.store.info(name).offset;
    }
    // 5x5, padding 2, stride 1, on a side x side image of `in` channels.
    [[nodiscard]] std::vector<double> conv(const std::vector<double>& x, int in, int out, int side,
                                           const std::string& name) const
    {
        const float* weight = param(name + ".weight");
        const float* bias = param(name + ".bias");
        std::vector<double> y(static_cast<std::size_t>(out * side * side));
        for (int k = 0; k < out; ++k) {
            for (int i = 0; i < side * side; ++i) {
                double sum = bias[k];
                for (int c = 0; c < in; ++c) {
                    for (int t = 0; t < 25; ++t) {
                        const int r = i / side + t / 5 - 2, q = i % side + t % 5 - 2;
                        if (r >= 0 && r < side && q >= 0 && q < side) {
                            sum += static_cast<double>(weight[(k * in + c) * 25 + t]) *
                                   x[static_cast<std::size_t>((c * side + r) * side + q)];
                        }
                    }
                }
                y[static_cast<std::size_t>(k * side * side + i)] = sum;
            }
        }
        return y;
    }
    static std::vector<double> relu(std::vector<double> x)
    {
        for (double& v : x) {
            v = std::max(v, 0.0);
        }
        return x;
    }
    static std::vector<double> pool(const std::vector<double>& x, int channels, int side)
    {
        const int half = side / 2;
        std::vector<double> y(static_cast<std::size_t>(channels * half * half));
        for (std::size_t o = 0; o < y.size(); ++o) {
            const int c = static_cast<int>(o) / (half * half),
                      r = static_cast<int>(o) / half % half, q = static_cast<int>(o) % half;
            const auto at = [&](int dr, int dq) {
                return x[static_cast<std::size_t>((c * side + 2 * r + dr) * side + 2 * q + dq)];
            };
            y[o] = std::max({at(0, 0), at(0, 1), at(1, 0), at(1, 1)});
        }
        return y;
    }
    [[nodiscard]] std::vector<double> dense(const std::vector<double>& x, int in, int out,
                                            const std::string& name) const
    {
        const float* weight = param(name + ".weight");
        const float* bias = param(name + ".bias");
        std::vector<double> y(static_cast<std::size_t>(out));
        for (int o = 0; o < out; ++o) {
            double sum = bias[o];
            for (int i = 0; i < in; ++i) {
                sum += static_cast<double>(weight[o * in + i]) * x[static_cast<std::size_t>(i)];
            }
            y[static_cast<std::size_t>(o)] = sum;
        }
        return y;
    }

    const infer::network& net_;
    const std::vector<float>& w_;
};

double relative_error(const std::vector<float>& got, const std::vector<double>& want)
{
    double diff = 0.0, norm = 0.0;
    for (std::size_t i = 0; i < want.size(); ++i) {
        diff += (got[i] - want[i]) * (got[i] - want[i]);
        norm += want[i] * want[i];
    }
    return std::sqrt(diff / norm);
}

// A server whose outputs are poisoned (settings).
infer::server make_server(nn::mixed_precision precision, std::vector<std::int64_t> buckets,
                          const gpu::profile& profile = gpu::profile::production())
{
    const infer::network net(precision);
    return infer::server(precision, net.store.initial_values(42),
                         settings(std::move(buckets), profile));
}

bool any_nan(const std::vector<float>& values)
{
    return std::any_of(values.begin(), values.end(), [](float v) { return std::isnan(v); });
}

} // namespace

TEST_CASE("eager and graph give the same logits bit for bit, in every bucket and precision",
          "[infer][gpu]")
{
    for (const auto precision :
         {nn::mixed_precision::fp16(), nn::mixed_precision::bf16(), nn::mixed_precision::fp32()}) {
        INFO("precision " << gpu::to_string(precision.compute));
        infer::server model = make_server(precision, {1, 8, 32});
        CHECK(model.captured());
        for (const std::size_t n : {1U, 5U, 8U, 32U, 40U}) {
            INFO(n << " images");
            const std::vector<float> x = images(n, 100 + n);
            const std::vector<float> eager = model.predict(x, infer::run_mode::eager);
            const std::vector<float> graph = model.predict(x, infer::run_mode::graph);
            REQUIRE(eager.size() == n * 10);
            CHECK_FALSE(any_nan(eager));
            CHECK_FALSE(any_nan(graph));
            CHECK(eager == graph);
        }
    }
}

TEST_CASE("padding a request up to its bucket changes no logit of its rows", "[infer][gpu]")
{
    infer::server model = make_server(nn::mixed_precision::fp16(), infer::default_buckets);
    const std::vector<float> x = images(256, 7);
    for (const std::size_t n : {1U, 3U, 8U, 20U, 100U, 200U}) {
        INFO(n << " images, bucket "
               << infer::bucket_for(static_cast<std::int64_t>(n), model.buckets()));
        const auto bucket = static_cast<std::size_t>(
            infer::bucket_for(static_cast<std::int64_t>(n), model.buckets()));
        // The same rows in a full bucket (real images where the padding was zeros): the same plan,
        // and rows are independent, so the first n rows agree bit for bit.
        const std::vector<float> full = model.predict(rows_of(x, 0, bucket, 784));
        REQUIRE_FALSE(any_nan(full));
        for (const infer::run_mode mode : {infer::run_mode::eager, infer::run_mode::graph}) {
            CHECK(model.predict(rows_of(x, 0, n, 784), mode) == rows_of(full, 0, n, 10));
        }
        // Against the largest bucket (another plan, maybe other algorithms): within FP16's tolerance.
        const std::vector<float> big = model.predict(x);
        const std::vector<float> part = model.predict(rows_of(x, 0, n, 784));
        std::vector<double> want(big.begin(), big.begin() + static_cast<std::ptrdiff_t>(n * 10));
        CHECK(relative_error(part, want) < 1e-2);
    }
}

TEST_CASE("a request larger than the largest bucket is split, and predict_batch batches as asked",
          "[infer][gpu]")
{
    infer::server model = make_server(nn::mixed_precision::fp16(), {1, 8});
    const std::vector<float> x = images(20, 3);
    const std::uint64_t before = model.forward_passes();
    const std::vector<float> all = model.predict(x);
    CHECK_FALSE(any_nan(all));
    CHECK(model.forward_passes() - before == 3); // 8 + 8 + 4 (padded to 8)
    std::vector<float> pieces = model.predict(rows_of(x, 0, 8, 784));
    for (const auto& [first, count] : {std::pair<std::size_t, std::size_t>{8, 8}, {16, 4}}) {
        const std::vector<float> part = model.predict(rows_of(x, first, count, 784));
        pieces.insert(pieces.end(), part.begin(), part.end());
    }
    CHECK(all == pieces);
    // predict_batch(x, 5): four requests of 5, each padded to 8.
    const std::uint64_t batched_before = model.forward_passes();
    CHECK(model.predict_batch(x, 5, infer::run_mode::eager) == all);
    CHECK(model.forward_passes() - batched_before == 4);
    CHECK_THROWS_WITH(model.predict(std::vector<float>(783)),
                      ContainsSubstring("the input holds 783 floats"));
    CHECK_THROWS_WITH(model.predict_batch(x, 0),
                      ContainsSubstring("batch_size 0 must be at least 1"));
}

TEST_CASE("the server's logits match a float64 forward of the same weights on the CPU",
          "[infer][gpu]")
{
    const std::vector<float> x = images(4, 11);
    // DESIGN's tolerances: FP32 under the testing profile (no TF32) < 1e-5, FP16 and BF16 < 1e-2.
    // A NumPy model of this forward (the same initialisation, uniform random pixels, FP32
    // accumulation, every stored tensor rounded to the type) gives about 1e-6 for FP32 with
    // sequential sums (3e-7 blocked), 4-6e-4 for FP16 and 3-5e-3 for BF16 (8 significant bits:
    // 2^-9 relative per rounding, the input, the weights and four layers' outputs each rounded).
    const std::vector<std::pair<nn::mixed_precision, double>> cases{
        {nn::mixed_precision::fp32(), 1e-5},
        {nn::mixed_precision::fp16(), 1e-2},
        {nn::mixed_precision::bf16(), 1e-2}};
    for (const auto& [precision, tolerance] : cases) {
        INFO("precision " << gpu::to_string(precision.compute));
        const infer::network net(precision);
        const std::vector<float> weights = net.store.initial_values(42);
        infer::server model(precision, weights, settings({1, 8}, gpu::profile::testing()));
        const std::vector<double> want = reference_model(net, weights).logits(x, 4);
        CHECK(relative_error(model.predict(x, infer::run_mode::graph), want) < tolerance);
        CHECK(relative_error(model.predict(x, infer::run_mode::eager), want) < tolerance);
    }
}

TEST_CASE(
    "a server without capture runs eagerly, refuses graph mode, and takes the development profile",
    "[infer][gpu]")
{
    const infer::network net(nn::mixed_precision::fp16());
    const std::vector<float> weights = net.store.initial_values(1);
    CHECK_THROWS_WITH(infer::server(nn::mixed_precision::fp16(), weights,
                                    {{1, 8}, gpu::profile::development(), true, {}}),
                      ContainsSubstring("the development profile synchronises after each call"));
    infer::server model(nn::mixed_precision::fp16(), weights,
                        {{1, 8}, gpu::profile::development(), false, {}});
    CHECK_FALSE(model.captured());
    CHECK(model.predict(images(3, 1), infer::run_mode::eager).size() == 30);
    CHECK_THROWS_AS(model.predict(images(3, 1), infer::run_mode::graph), std::logic_error);
}

TEST_CASE(
    "a server reports the device memory it holds, its convolution workspaces within the budget",
    "[infer][gpu]")
{
    const std::vector<std::int64_t> buckets{1, 8, 256};
    for (const auto precision : {nn::mixed_precision::fp16(), nn::mixed_precision::fp32()}) {
        INFO("precision " << gpu::to_string(precision.compute));
        const std::vector<float> weights = infer::network(precision).store.initial_values(3);
        for (const std::size_t budget : {infer::default_workspace_budget, std::size_t{0}}) {
            INFO("workspace budget " << budget);
            infer::server_options options = settings(buckets);
            options.workspace_budget_bytes = budget;
            infer::server model(precision, weights, options);
            const infer::memory_use use = model.device_memory();
            std::size_t activations = 0;
            for (const std::int64_t b : buckets) {
                activations += infer::activation_bytes(b, precision.compute);
            }
            CHECK(use.activations == activations);
            CHECK(use.convolution_workspaces <=
                  2 * buckets.size() * budget); // 0: no workspace at all
            const std::size_t elements = infer::network(precision).store.total_elements();
            CHECK(use.parameters ==
                  elements * (precision.compute == gpu::element_type::fp32 ? 8 : 10));
            CHECK(use.library_workspaces > 0);
            CHECK(use.total() == use.parameters + use.activations + use.convolution_workspaces +
                                     use.library_workspaces);
            const std::vector<std::string> lines = model.describe();
            REQUIRE(lines.size() == buckets.size() + 1);
            CHECK_THAT(lines[2], ContainsSubstring("bucket 256: conv1 ") &&
                                     ContainsSubstring(", activations ") &&
                                     ContainsSubstring(" MiB, graph of "));
            CHECK_THAT(lines[3], ContainsSubstring("device memory held: "));
            CHECK(model.predict(images(2, 5)).size() == 20); // it still serves
        }
    }
}
