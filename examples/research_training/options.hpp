// cudagap-train's command line: the options (TRAIN_CLI contract: docs/research_training.md),
// parsed with an error naming the bad option or value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace train {

/// The largest --batch-size: conv1's output, B x 32 x 28 x 28, must hold at most 2^31 - 1
/// elements, the most cuDNN's convolution API indexes (85598).
constexpr std::int64_t max_batch_size = 2147483647LL / (32 * 28 * 28);

/// The usage text (--help).
extern const char* const usage;

/// The largest --gpus: more than any host holds; a larger number is refused, not clamped.
constexpr int max_gpus = 1024;

/// Every option of the program, with its default.
struct options {
    std::string data = "/usr/share/datasets/fashion-mnist";
    int epochs = 10;
    std::int64_t batch_size = 64;
    double lr = 1e-3;
    std::string precision = "fp16"; // fp16, bf16 or fp32
    bool graph = false;
    std::uint64_t seed = 42;
    std::uint64_t train_limit = 0; // 0: all
    std::uint64_t test_limit = 0;  // 0: all
    double weight_decay = 0.01;
    double dropout = 0.4;
    std::optional<std::string> json; // a file, or "-" for stdout
    std::optional<std::string> save;
    std::optional<std::string> resume;
    std::optional<std::string> memory_trace; // a Chrome trace of every allocation of the run
    bool quiet = false;
    std::string profile = "production";
    /// --gpus N: one process per GPU, data-parallel (0: not given, this process on one GPU).
    int gpus = 0;
    bool help = false;
    bool version = false;
};

/// Parses argv; throws std::invalid_argument naming the option and its value.
[[nodiscard]] options parse(int argc, char* argv[]);

} // namespace train
