// Writes a tiny Fashion-MNIST-shaped IDX set for cudagap-train's tests: <dir>/good holds the four
// files (64 training and 32 test images of 28x28, raw, labels 0-9 with a pattern per class so a
// model can learn them), <dir>/corrupt the same with a truncated training images file, <dir>/empty
// nothing, <dir>/large 16384 training images (for a batch that does not fit in the GPU memory a
// test leaves free), <dir>/other-model.safetensors the training checkpoint of another model (one
// linear layer "fc1" 4 -> 2), which --resume must refuse naming the tensor, and
// <dir>/nan-weights.safetensors a training checkpoint of cudagap-train's own model whose conv2 and
// fc2 weights each hold one NaN: conv1's output stays finite and conv2's is the first that is not,
// and the loss is NaN whatever the ReLUs make of a NaN.
// Usage: cudagap_make_tiny_idx DIR
#include <gpu/nn/checkpoint.hpp>
#include <gpu/nn/conv2d.hpp>
#include <gpu/nn/linear.hpp>
#include <gpu/nn/parameters.hpp>

#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

void put_u32(std::vector<char>& out, std::uint32_t value)
{
    for (int shift = 24; shift >= 0; shift -= 8) {
        out.push_back(static_cast<char>((value >> shift) & 0xFFU));
    }
}

void write(const std::filesystem::path& path, const std::vector<char>& bytes)
{
    std::ofstream file(path, std::ios::binary);
    file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!file) {
        throw std::runtime_error("cannot write " + path.string());
    }
}

// Images: magic 0x803, [count, 28, 28]; image i of class i % 10 lights row (i % 10) * 2.
std::vector<char> images(std::uint32_t count)
{
    std::vector<char> out;
    put_u32(out, 0x803);
    put_u32(out, count);
    put_u32(out, 28);
    put_u32(out, 28);
    for (std::uint32_t i = 0; i < count; ++i) {
        for (std::uint32_t p = 0; p < 28 * 28; ++p) {
            const bool lit = p / 28 == (i % 10) * 2 + 3;
            out.push_back(static_cast<char>(lit ? 255 : (p * 7 + i) % 32));
        }
    }
    return out;
}

std::vector<char> labels(std::uint32_t count)
{
    std::vector<char> out;
    put_u32(out, 0x801);
    put_u32(out, count);
    for (std::uint32_t i = 0; i < count; ++i) {
        out.push_back(static_cast<char>(i % 10));
    }
    return out;
}

void write_set(const std::filesystem::path& dir, bool truncated, std::uint32_t train_count = 64)
{
    std::filesystem::create_directories(dir);
    std::vector<char> train = images(train_count);
    if (truncated) {
        train.resize(train.size() - 100);
    }
    write(dir / "train-images-idx3-ubyte", train);
    write(dir / "train-labels-idx1-ubyte", labels(train_count));
    write(dir / "t10k-images-idx3-ubyte", images(32));
    write(dir / "t10k-labels-idx1-ubyte", labels(32));
}

// Written on the host: the store is never allocated, the state is zeros of its size.
void write_other_checkpoint(const std::filesystem::path& path)
{
    gpu::nn::parameters store;
    const gpu::nn::linear fc(store, "fc1", 4, 2);
    const std::vector<float> zeros(store.total_elements(), 0.0F);
    gpu::nn::write_training_state(path, store, {zeros, {1, zeros, zeros}, std::nullopt});
}

// cudagap-train's parameters under its names and shapes (examples/research_training/trainer.cpp:
// a change there makes --resume refuse this file, naming the tensor), small finite values, and a
// NaN in conv2.weight and in fc2.weight. Written on the host; FP32 (loss scaling off).
void write_nan_checkpoint(const std::filesystem::path& path)
{
    gpu::nn::parameters store;
    const gpu::nn::conv2d conv1(store, "conv1", 1, 32, 5, {.padding = {2, 2}});
    const gpu::nn::conv2d conv2(store, "conv2", 32, 64, 5, {.padding = {2, 2}});
    const gpu::nn::linear fc1(store, "fc1", 64 * 7 * 7, 1024, {.relu = true});
    const gpu::nn::linear fc2(store, "fc2", 1024, 10);
    std::vector<float> values(store.total_elements(), 0.0F);
    for (std::size_t i = 0; i < values.size(); ++i) {
        values[i] = 0.01F * static_cast<float>(static_cast<int>(i % 7) - 3);
    }
    for (const gpu::nn::parameter_info& p : store.infos()) {
        if (p.name == "conv2.weight" || p.name == "fc2.weight") {
            values[p.offset + 5] = std::numeric_limits<float>::quiet_NaN();
        }
    }
    const std::vector<float> zeros(store.total_elements(), 0.0F);
    gpu::nn::write_training_state(path, store, {values, {0, zeros, zeros}, std::nullopt});
}

} // namespace

int main(int argc, char* argv[])
{
    if (argc != 2) {
        std::fprintf(stderr, "usage: cudagap_make_tiny_idx DIR\n");
        return 2;
    }
    try {
        const std::filesystem::path dir = argv[1];
        write_set(dir / "good", false);
        write_set(dir / "corrupt", true);
        std::filesystem::create_directories(dir / "empty");
        write_set(dir / "large", false, 16384);
        write_other_checkpoint(dir / "other-model.safetensors");
        write_nan_checkpoint(dir / "nan-weights.safetensors");
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap_make_tiny_idx: %s\n", e.what());
        return 1;
    }
}
