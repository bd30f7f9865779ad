// cudagap-infer's host side: the model's registration, its weights and the test images.
#include "model.hpp"

#include <gpu/nn/checkpoint.hpp>
#include <gpu/nn/idx.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <system_error>

namespace infer {

namespace nn = gpu::nn;

network::network(nn::mixed_precision precision)
    : store(precision), conv1(store, "conv1", 1, 32, 5, {.padding = {2, 2}}),
      conv2(store, "conv2", 32, 64, 5, {.padding = {2, 2}}),
      fc1(store, "fc1", 64 * 7 * 7, 1024, {.relu = true}), fc2(store, "fc2", 1024, classes)
{}

nn::mixed_precision precision_of(const std::string& name)
{
    return nn::mixed_precision::from_name(name);
}

std::vector<float> load_weights(const network& net,
                                const std::optional<std::filesystem::path>& checkpoint,
                                std::uint64_t seed)
{
    return checkpoint ? nn::read_parameters(*checkpoint, net.store)
                      : net.store.initial_values(seed);
}

namespace {

constexpr const char* images_name = "t10k-images-idx3-ubyte";
constexpr const char* labels_name = "t10k-labels-idx1-ubyte";

// DIR/name, else DIR/name.gz; empty when neither is a file.
std::filesystem::path find(const std::filesystem::path& dir, const std::string& name)
{
    std::error_code ignored;
    for (const std::string& candidate : {name, name + ".gz"}) {
        if (std::filesystem::is_regular_file(dir / candidate, ignored)) {
            return dir / candidate;
        }
    }
    return {};
}

void check(const nn::idx_dataset& set, std::uint64_t limit, const std::filesystem::path& images,
           const std::filesystem::path& labels)
{
    if (set.images.rows != image_side || set.images.cols != image_side) {
        throw data_error(images.string() + " holds images of " + std::to_string(set.images.rows) +
                         "x" + std::to_string(set.images.cols) +
                         "; the model takes Fashion-MNIST's 28x28");
    }
    const auto bad = std::find_if(set.labels.begin(), set.labels.end(),
                                  [](std::uint8_t l) { return l >= classes; });
    if (bad != set.labels.end()) {
        throw data_error(labels.string() + " holds label " + std::to_string(*bad) + " at item " +
                         std::to_string(bad - set.labels.begin()) + "; Fashion-MNIST's are 0 to 9");
    }
    if (set.images.count == 0 || limit > set.images.count) {
        throw data_error("--test-limit " + std::to_string(limit) + " is more than the " +
                         std::to_string(set.images.count) + " test images in " + images.string());
    }
}

} // namespace

bool has_test_set(const std::filesystem::path& dir)
{
    return !find(dir, images_name).empty() && !find(dir, labels_name).empty();
}

image_set load_test_set(const std::filesystem::path& dir, std::uint64_t limit)
{
    const std::filesystem::path images = find(dir, images_name);
    const std::filesystem::path labels = find(dir, labels_name);
    if (images.empty() || labels.empty()) {
        throw data_error(
            "Fashion-MNIST's test set is missing from " + dir.string() + " (" +
            (images.empty() ? std::string(images_name) + "[.gz]" : std::string()) +
            (images.empty() && labels.empty() ? ", " : "") +
            (labels.empty() ? std::string(labels_name) + "[.gz]" : std::string()) +
            "): install it with 'apt-get install dataset-fashion-mnist' (it goes to "
            "/usr/share/datasets/fashion-mnist), or give --data DIR holding those files "
            "(raw or .gz, from https://github.com/zalandoresearch/fashion-mnist)");
    }
    const nn::idx_dataset set = nn::read_idx_dataset(images, labels);
    check(set, limit, images, labels);
    const std::size_t count = limit == 0 ? set.images.count : static_cast<std::size_t>(limit);
    image_set out{{},
                  {set.labels.begin(), set.labels.begin() + static_cast<std::ptrdiff_t>(count)},
                  count,
                  "Fashion-MNIST test set in " + dir.string()};
    out.pixels.resize(count * image_elements);
    std::transform(set.images.pixels.begin(),
                   set.images.pixels.begin() + static_cast<std::ptrdiff_t>(out.pixels.size()),
                   out.pixels.begin(), normalize_pixel);
    return out;
}

image_set synthetic_images(std::size_t count, std::uint64_t seed)
{
    std::mt19937_64 random(seed);
    image_set out{std::vector<float>(count * image_elements),
                  {},
                  count,
                  "synthetic images (seed " + std::to_string(seed) + ")"};
    for (float& value : out.pixels) {
        value = normalize_pixel(static_cast<std::uint8_t>(random() >> 56U));
    }
    return out;
}

float normalize_pixel(std::uint8_t pixel) noexcept
{
    // gather_batch's kernel computes (p * (1/255) - mean) * (1/std); the GPU compiler fuses the
    // product and the subtraction into one FMA (one rounding), which std::fma does here too.
    return std::fma(static_cast<float>(pixel), 1.0F / 255.0F, -fashion_mnist_norm.mean) *
           (1.0F / fashion_mnist_norm.std);
}

std::vector<int> predicted_classes(std::span<const float> logits)
{
    std::vector<int> out(logits.size() / classes);
    for (std::size_t row = 0; row < out.size(); ++row) {
        // count_correct's rule: a larger value wins, an equal one only over no winner yet; NaN
        // compares false, so it never wins (a row of NaN predicts -1, which is no class).
        float best = -std::numeric_limits<float>::infinity();
        int best_index = -1;
        for (int j = 0; j < static_cast<int>(classes); ++j) {
            const float value = logits[row * classes + static_cast<std::size_t>(j)];
            if (value > best || (value == best && best_index < 0)) {
                best = value;
                best_index = j;
            }
        }
        out[row] = best_index;
    }
    return out;
}

double accuracy(std::span<const int> predicted, std::span<const std::uint8_t> labels)
{
    if (predicted.size() != labels.size() || labels.empty()) {
        throw std::invalid_argument("accuracy: " + std::to_string(predicted.size()) +
                                    " predictions for " + std::to_string(labels.size()) +
                                    " labels");
    }
    std::size_t right = 0;
    for (std::size_t i = 0; i < labels.size(); ++i) {
        right += predicted[i] == labels[i] ? 1U : 0U;
    }
    return static_cast<double>(right) / static_cast<double>(labels.size());
}

} // namespace infer
