// The C++ half of the safetensors interoperability test (safetensors_interop.py runs it):
//
//   cudagap_nn_safetensors_interop write <folder>   writes all.safetensors (a tensor of every
//       dtype) and numpy.safetensors (the dtypes NumPy has), for Python to read
//   cudagap_nn_safetensors_interop check <file>     reads a file Python's safetensors wrote
//       and checks every tensor and the metadata against the same recipe
//   cudagap_nn_safetensors_interop check-model <file>   reads a state dict Python wrote for the
//       checkpoint's model (gpu::nn::read_parameters) and checks it against the model's recipe
//
// `write` also writes a training checkpoint (gpu::nn::write_training_state): checkpoint.safetensors
// and checkpoint.optim.safetensors, for a model of nn.Linear(6, 4) "fc1" and nn.Linear(4, 3)
// "fc2"; element i of its p-th parameter (fc1.weight, fc1.bias, fc2.weight, fc2.bias) is
// p / 2 + i / 64, exp_avg that plus 1, exp_avg_sq that plus 2; step 42, scale 1024, tracker 5.
//
// The recipe, shared with the script: tensor "t.<DTYPE>" (j its index in the list below) of
// shape [2, 3] whose byte k is (29k + 7j + 3) mod 256, or (k + j) mod 2 for BOOL; "empty",
// F32 [0, 3]; "scalar", F64 [] holding 2.5.
#include <gpu/nn/checkpoint.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/nn/safetensors.hpp>

#include <array>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

namespace {

using gpu::nn::dtype;

constexpr std::array<dtype, 17> recipe_dtypes{
    dtype::boolean, dtype::u8,  dtype::i8,  dtype::f8_e5m2, dtype::f8_e4m3, dtype::f8_e8m0,
    dtype::i16,     dtype::u16, dtype::f16, dtype::bf16,    dtype::i32,     dtype::u32,
    dtype::f32,     dtype::f64, dtype::i64, dtype::u64,     dtype::c64};

// What NumPy cannot hold (safetensors.numpy refuses them).
bool numpy_has(dtype type)
{
    return type != dtype::bf16 && type != dtype::f8_e5m2 && type != dtype::f8_e4m3 &&
           type != dtype::f8_e8m0;
}

std::vector<std::byte> recipe_bytes(std::size_t j)
{
    const dtype type = recipe_dtypes[j];
    std::vector<std::byte> bytes(6 * gpu::nn::element_size(type));
    for (std::size_t k = 0; k < bytes.size(); ++k) {
        bytes[k] = static_cast<std::byte>(type == dtype::boolean ? (k + j) % 2
                                                                 : (29 * k + 7 * j + 3) % 256);
    }
    return bytes;
}

std::string recipe_name(std::size_t j)
{
    return "t." + std::string(gpu::nn::to_string(recipe_dtypes[j]));
}

void write(const std::string& folder)
{
    std::vector<std::vector<std::byte>> storage;
    for (std::size_t j = 0; j < recipe_dtypes.size(); ++j) {
        storage.push_back(recipe_bytes(j));
    }
    const std::vector<float> none;
    const std::vector<double> scalar{2.5};
    for (const bool numpy_only : {false, true}) {
        std::vector<gpu::nn::tensor_view> tensors{gpu::nn::make_tensor_view("empty", none, {0, 3}),
                                                  gpu::nn::make_tensor_view("scalar", scalar, {})};
        for (std::size_t j = 0; j < recipe_dtypes.size(); ++j) {
            if (!numpy_only || numpy_has(recipe_dtypes[j])) {
                tensors.push_back({.name = recipe_name(j),
                                   .type = recipe_dtypes[j],
                                   .shape = {2, 3},
                                   .data = storage[j]});
            }
        }
        gpu::nn::write_safetensors(
            folder + (numpy_only ? "/numpy.safetensors" : "/all.safetensors"), tensors,
            {{"format", "pt"}, {"producer", "cudagap"}, {"note", "日本語 \"quoted\"\n"}});
    }
}

// The checkpoint's model, registered as nn.Linear(6, 4) "fc1" and nn.Linear(4, 3) "fc2" are.
void register_model(gpu::nn::parameters& store)
{
    const auto zeros = gpu::nn::initialization::zeros();
    store.add("fc1.weight", {4, 6}, zeros);
    store.add("fc1.bias", {4}, zeros);
    store.add("fc2.weight", {3, 4}, zeros);
    store.add("fc2.bias", {3}, zeros);
}

// The recipe's values in the store's flat layout, each plus @p shift (exact in FP32).
std::vector<float> model_values(const gpu::nn::parameters& store, float shift)
{
    std::vector<float> values(store.total_elements(), 0.0F);
    for (std::size_t p = 0; p < store.size(); ++p) {
        const gpu::nn::parameter_info& info = store.info(p);
        for (std::size_t i = 0; i < info.count; ++i) {
            values[info.offset + i] =
                static_cast<float>(p) / 2.0F + static_cast<float>(i) / 64.0F + shift;
        }
    }
    return values;
}

void write_checkpoint(const std::string& folder)
{
    gpu::nn::parameters store;
    register_model(store);
    const gpu::nn::training_state state{
        .parameters = model_values(store, 0.0F),
        .optimizer = {.step = 42,
                      .exp_avg = model_values(store, 1.0F),
                      .exp_avg_sq = model_values(store, 2.0F)},
        .scaler = gpu::nn::grad_scaler_state{.scale = 1024.0F, .growth_tracker = 5}};
    gpu::nn::write_training_state(folder + "/checkpoint.safetensors", store, state);
}

// A state dict Python wrote for the checkpoint's model, read as load_parameters reads it.
int check_model(const std::string& path)
{
    gpu::nn::parameters store;
    register_model(store);
    if (gpu::nn::read_parameters(path, store) != model_values(store, 0.0F)) {
        std::fprintf(stderr, "%s: the parameters differ from the recipe\n", path.c_str());
        return 1;
    }
    return 0;
}

// Every tensor of the recipe that NumPy has, and the metadata Python wrote: 0 when all match.
int check(const std::string& path)
{
    const gpu::nn::safetensors_file file = gpu::nn::read_safetensors(path);
    int failures = 0;
    const auto expect = [&](bool ok, const std::string& what) {
        if (!ok) {
            std::fprintf(stderr, "%s: %s\n", path.c_str(), what.c_str());
            ++failures;
        }
    };
    for (std::size_t j = 0; j < recipe_dtypes.size(); ++j) {
        if (numpy_has(recipe_dtypes[j])) {
            const std::vector<std::byte> expected = recipe_bytes(j);
            const std::span<const std::byte> data =
                file.expect(recipe_name(j), recipe_dtypes[j], {2, 3}).data;
            expect(data.size() == expected.size() &&
                       std::memcmp(data.data(), expected.data(), data.size()) == 0,
                   recipe_name(j) + ": the bytes differ from the recipe");
        }
    }
    expect(file.values<float>("empty", {0, 3}).empty(), "empty: not empty");
    expect(file.values<double>("scalar", {}) == std::vector<double>{2.5}, "scalar: not 2.5");
    expect(file.metadata() ==
               gpu::nn::safetensors_metadata{{"format", "np"}, {"producer", "python"}},
           "the metadata differs");
    expect(file.tensors().size() == 2 + 13, "not 15 tensors");
    return failures == 0 ? 0 : 1;
}

} // namespace

int main(int argc, char** argv)
{
    const std::string_view mode = argc == 3 ? argv[1] : "";
    try {
        if (mode == "write") {
            write(argv[2]);
            write_checkpoint(argv[2]);
            return 0;
        }
        if (mode == "check") {
            return check(argv[2]);
        }
        if (mode == "check-model") {
            return check_model(argv[2]);
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 1;
    }
    std::fprintf(stderr, "usage: %s write <folder> | check <file> | check-model <file>\n", argv[0]);
    return 2;
}
