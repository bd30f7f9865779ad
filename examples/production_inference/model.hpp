// cudagap-infer's host side: the model cudagap-train trains (registered on the host, no GPU),
// its weights (a checkpoint checked against it, or a seed), and the Fashion-MNIST test set
// normalised as the model takes it.
#pragma once

#include <gpu/nn/conv2d.hpp>
#include <gpu/nn/data.hpp>
#include <gpu/nn/linear.hpp>
#include <gpu/nn/mixed_precision.hpp>
#include <gpu/nn/parameters.hpp>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

namespace infer {

/// One image: [1, 28, 28].
inline constexpr std::int64_t image_side = 28;
/// Floats per image.
inline constexpr std::size_t image_elements = 28 * 28;
/// Logits per image.
inline constexpr std::int64_t classes = 10;
/// Fashion-MNIST's mean and std, as cudagap-train normalises.
inline constexpr gpu::nn::normalization fashion_mnist_norm{0.2860F, 0.3530F};

/// The parameters of cudagap-train's convnet under PyTorch's names (conv1, conv2, fc1 with its
/// ReLU fused, fc2), registered on the host only: checkpoints are checked against it and the
/// ONNX file is written from it without a GPU. Dropout is not here: it is the identity at
/// inference. The parameterless layers (ReLU, pooling, flatten) are made per batch bucket.
struct network {
    gpu::nn::parameters store;
    gpu::nn::conv2d conv1;
    gpu::nn::conv2d conv2;
    gpu::nn::linear fc1;
    gpu::nn::linear fc2;

    explicit network(gpu::nn::mixed_precision precision);
};

/// fp16, bf16 or fp32 as a policy; std::invalid_argument naming anything else.
[[nodiscard]] gpu::nn::mixed_precision precision_of(const std::string& name);

/// The FP32 weights in the store's layout: read from @p checkpoint (a cudagap-train --save file)
/// and checked against the model, or, without one, the initial values of @p seed. Host only.
/// Throws gpu::nn::format_error naming the file and the tensor (expected vs found) for a
/// checkpoint of another model or a file that is not safetensors, std::filesystem's error for
/// one that cannot be read.
[[nodiscard]] std::vector<float>
load_weights(const network& net, const std::optional<std::filesystem::path>& checkpoint,
             std::uint64_t seed);

/// The data are missing or unusable; the message says what to do.
class data_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// Images to run the model on: normalised floats [count, 1, 28, 28], and their labels when they
/// are Fashion-MNIST's test set.
struct image_set {
    std::vector<float> pixels;
    std::vector<std::uint8_t> labels; // empty for synthetic images
    std::size_t count = 0;
    std::string source; // where they came from, for the report
};

/// The first @p limit (0: all) test images of Fashion-MNIST in @p dir (t10k-images-idx3-ubyte and
/// t10k-labels-idx1-ubyte, raw or .gz), normalised. Throws data_error for missing files (named,
/// with how to get them), images other than 28x28, labels outside 0-9 or a limit above the count;
/// gpu::nn::format_error for a corrupt file.
[[nodiscard]] image_set load_test_set(const std::filesystem::path& dir, std::uint64_t limit);

/// Whether @p dir holds both test files (raw or .gz).
[[nodiscard]] bool has_test_set(const std::filesystem::path& dir);

/// @p count images of uniformly random pixels from @p seed, normalised as the test set is: inputs
/// to time the model on when there is no data set.
[[nodiscard]] image_set synthetic_images(std::size_t count, std::uint64_t seed);

/// pixel / 255, then (x - mean) / std, in FP32 as gpu::nn::gather_batch computes it on the device
/// (a fused multiply-add, then a product), so that the model sees the values it saw in
/// cudagap-train's evaluation.
[[nodiscard]] float normalize_pixel(std::uint8_t pixel) noexcept;

/// The class of each row of @p logits ([rows, 10]): the first largest value (NaN never wins),
/// as gpu::nn::count_correct decides.
[[nodiscard]] std::vector<int> predicted_classes(std::span<const float> logits);

/// The fraction of @p predicted equal to @p labels (the same length, not empty).
[[nodiscard]] double accuracy(std::span<const int> predicted, std::span<const std::uint8_t> labels);

} // namespace infer
