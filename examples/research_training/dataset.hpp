// Fashion-MNIST for cudagap-train: the four IDX files found (raw or .gz) and checked, with the
// way to get them when they are missing.
#pragma once

#include <gpu/nn/idx.hpp>

#include <cstdint>
#include <filesystem>
#include <stdexcept>

namespace train {

/// The data are missing or unusable for this model; the message says what to do.
class data_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

/// The training and test sets.
struct fashion_mnist {
    gpu::nn::idx_dataset train;
    gpu::nn::idx_dataset test;
};

/// Reads the four files from @p dir, keeps the first @p train_limit and @p test_limit images
/// (0: all). Throws data_error for missing files (naming them and how to get them), images
/// other than 28x28, labels outside 0-9 or a limit above the count; gpu::nn::format_error for a
/// corrupt file (the reader's message).
[[nodiscard]] fashion_mnist load_fashion_mnist(const std::filesystem::path& dir,
                                               std::uint64_t train_limit, std::uint64_t test_limit);

} // namespace train
