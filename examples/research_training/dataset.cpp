// Finds, reads and checks the Fashion-MNIST IDX files for cudagap-train.
#include "dataset.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <system_error>

namespace train {

namespace {

constexpr std::array<const char*, 4> file_names{"train-images-idx3-ubyte",
                                                "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                                                "t10k-labels-idx1-ubyte"};

// DIR/name, else DIR/name.gz; empty when neither is a file.
std::filesystem::path find_file(const std::filesystem::path& dir, const std::string& name)
{
    std::error_code ignored;
    for (const std::string& candidate : {name, name + ".gz"}) {
        if (std::filesystem::is_regular_file(dir / candidate, ignored)) {
            return dir / candidate;
        }
    }
    return {};
}

// The four files, or a data_error naming the missing ones and how to get them.
std::array<std::filesystem::path, 4> find_files(const std::filesystem::path& dir)
{
    std::array<std::filesystem::path, 4> paths;
    std::string missing;
    for (std::size_t i = 0; i < file_names.size(); ++i) {
        paths[i] = find_file(dir, file_names[i]);
        if (paths[i].empty()) {
            missing += std::string(missing.empty() ? "" : ", ") + file_names[i] + "[.gz]";
        }
    }
    if (!missing.empty()) {
        throw data_error(
            "Fashion-MNIST is missing from " + dir.string() + " (" + missing +
            "): install it with 'apt-get install dataset-fashion-mnist' (it goes to "
            "/usr/share/datasets/fashion-mnist), or give --data DIR with the four IDX files "
            "train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-images-idx3-ubyte and "
            "t10k-labels-idx1-ubyte (raw or .gz, from "
            "https://github.com/zalandoresearch/fashion-mnist)");
    }
    return paths;
}

// Keeps the first `limit` items (0: all); checks the shape and the labels the model needs.
void check_and_limit(gpu::nn::idx_dataset& set, std::uint64_t limit, const char* which,
                     const char* option, const std::filesystem::path& images,
                     const std::filesystem::path& labels)
{
    if (set.images.rows != 28 || set.images.cols != 28) {
        throw data_error(images.string() + " holds images of " + std::to_string(set.images.rows) +
                         "x" + std::to_string(set.images.cols) +
                         "; the model takes Fashion-MNIST's 28x28");
    }
    const auto bad =
        std::find_if(set.labels.begin(), set.labels.end(), [](std::uint8_t l) { return l > 9; });
    if (bad != set.labels.end()) {
        throw data_error(labels.string() + " holds label " + std::to_string(*bad) + " at item " +
                         std::to_string(bad - set.labels.begin()) + "; Fashion-MNIST's are 0 to 9");
    }
    if (set.images.count == 0) {
        throw data_error(images.string() + " holds no images");
    }
    if (limit > set.images.count) {
        throw data_error(std::string(option) + " " + std::to_string(limit) + " is more than the " +
                         std::to_string(set.images.count) + " " + which + " images in " +
                         images.string());
    }
    if (limit != 0) {
        set.images.count = limit;
        set.images.pixels.resize(limit * 28 * 28);
        set.labels.resize(limit);
    }
}

} // namespace

fashion_mnist load_fashion_mnist(const std::filesystem::path& dir, std::uint64_t train_limit,
                                 std::uint64_t test_limit)
{
    const std::array<std::filesystem::path, 4> paths = find_files(dir);
    fashion_mnist data{gpu::nn::read_idx_dataset(paths[0], paths[1]),
                       gpu::nn::read_idx_dataset(paths[2], paths[3])};
    check_and_limit(data.train, train_limit, "training", "--train-limit", paths[0], paths[1]);
    check_and_limit(data.test, test_limit, "test", "--test-limit", paths[2], paths[3]);
    return data;
}

} // namespace train
