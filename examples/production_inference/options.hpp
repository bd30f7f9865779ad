// cudagap-infer's command line (the INFER_CLI contract: docs/production_inference.md), parsed
// with an error naming the bad option and value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace infer {

/// The usage text (--help).
extern const char* const usage;

/// Every option, with its default.
struct options {
    std::optional<std::string> checkpoint;
    std::uint64_t seed = 42;
    std::optional<std::string> data; // given: it must hold the test set
    std::string precision = "fp16";
    std::vector<std::int64_t> buckets{1, 8, 32, 128, 256};
    std::vector<std::int64_t> batch_sizes{1, 32, 256};
    std::int64_t requests = 1000;
    std::int64_t warmup = 20;
    std::string mode = "both"; // eager, graph or both
    std::uint64_t test_limit = 0;
    std::optional<std::string> export_onnx;
    std::optional<std::string> outputs;
    std::optional<std::string> json; // a file, or "-" for stdout
    bool quiet = false;
    std::string profile = "production";
    bool help = false;
    bool version = false;
};

/// The data folder when --data is not given.
inline constexpr const char* default_data = "/usr/share/datasets/fashion-mnist";

/// Parses argv; throws std::invalid_argument naming the option and its value (and for --mode graph
/// with --profile development, whose synchronisation after every call a graph cannot capture).
[[nodiscard]] options parse(int argc, char* argv[]);

} // namespace infer
