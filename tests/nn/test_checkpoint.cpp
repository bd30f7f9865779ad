// gpu/nn/checkpoint.hpp. On the host: the files of a store's parameters and of a training state,
// written and read back exactly, PyTorch's names, shapes and dtype in the model file, and every
// refusal (another model, a wrong shape or dtype, a corrupt file, files of two saves, bad
// metadata) naming the file and what differs; a save that fails while writing leaves the
// earlier pair whole. On a GPU: save and load of a store, and a model
// trained a few steps, saved, loaded into fresh objects, whose next step is the original's bit
// for bit; a refused load changes nothing; a capturing stream is refused.
#include <gpu/nn/checkpoint.hpp>

#include "catch.hpp"
#include "file_support.hpp"
#include "tiny_model.hpp"

#include <gpu/capture.hpp>
#include <gpu/nn/safetensors.hpp>

#include <cuda_runtime_api.h>

#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

using Catch::Matchers::ContainsSubstring;
namespace nn = gpu::nn;
using gpu::test::format_error_of;
using gpu::test::temporary_folder;

namespace {

// A store like a small MLP's: fc1 [4, 3] + [4], fc2 [2, 4] (no bias), laid out with padding.
void register_mlp(nn::parameters& store)
{
    store.add("fc1.weight", {4, 3}, nn::initialization::uniform(0.5));
    store.add("fc1.bias", {4}, nn::initialization::zeros());
    store.add("fc2.weight", {2, 4}, nn::initialization::uniform(0.5));
}

// Distinct values in the store's layout, padding zero (as a store's buffers hold it).
std::vector<float> flat_values(const nn::parameters& store, float base)
{
    std::vector<float> values(store.total_elements(), 0.0F);
    for (const nn::parameter_info& p : store.infos()) {
        for (std::size_t i = 0; i < p.count; ++i) {
            values[p.offset + i] = base + static_cast<float>(p.offset + i) * 0.25F;
        }
    }
    return values;
}

nn::training_state some_state(const nn::parameters& store)
{
    return {.parameters = flat_values(store, 1.0F),
            .optimizer = {.step = 7,
                          .exp_avg = flat_values(store, -3.0F),
                          .exp_avg_sq = flat_values(store, 0.125F)},
            .scaler = nn::grad_scaler_state{.scale = 8192.0F, .growth_tracker = 11}};
}

std::vector<float> values_of(const nn::safetensors_file& file, const std::string& name,
                             std::vector<std::size_t> shape)
{
    return file.values<float>(name, shape);
}

// The optimizer file of @p state for @p store with metadata @p metadata, written by hand.
void write_optimizer_file(const std::filesystem::path& path, const nn::parameters& store,
                          const nn::training_state& state, const nn::safetensors_metadata& metadata)
{
    std::vector<nn::tensor_view> tensors;
    for (const char* prefix : {"exp_avg.", "exp_avg_sq."}) {
        const std::vector<float>& values = std::string(prefix) == "exp_avg."
                                               ? state.optimizer.exp_avg
                                               : state.optimizer.exp_avg_sq;
        for (const nn::parameter_info& p : store.infos()) {
            tensors.push_back(nn::make_tensor_view(prefix + p.name,
                                                   std::span(values).subspan(p.offset, p.count),
                                                   {p.shape.begin(), p.shape.end()}));
        }
    }
    nn::write_safetensors(nn::optimizer_state_path(path), tensors, metadata);
}

} // namespace

TEST_CASE("the optimizer file sits beside the model file", "[nn][checkpoint]")
{
    CHECK(nn::optimizer_state_path("ckpt.safetensors") == "ckpt.optim.safetensors");
    CHECK(nn::optimizer_state_path("runs/ckpt-000100.safetensors") ==
          "runs/ckpt-000100.optim.safetensors");
    CHECK(nn::optimizer_state_path("model") == "model.optim.safetensors");
    CHECK(nn::optimizer_state_path("x.optim.safetensors") ==
          "x.optim.optim.safetensors"); // never itself
}

TEST_CASE("a store's parameters are written under PyTorch's names and read back exactly",
          "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store; // never allocated: the host functions need names and shapes only
    register_mlp(store);
    const std::vector<float> values = flat_values(store, 0.5F);
    nn::write_parameters(folder / "model.safetensors", store, values);
    CHECK(folder.names() == std::vector<std::string>{"model.safetensors"}); // no temporary left

    // The file holds what load_state_dict(strict=True) wants: the names, F32, the shapes, no more.
    const nn::safetensors_file file = nn::read_safetensors(folder / "model.safetensors");
    REQUIRE(file.tensors().size() == 3);
    CHECK(file.metadata() == nn::safetensors_metadata{{"format", "pt"}});
    const nn::parameter_info& fc2 = store.info("fc2.weight");
    CHECK(values_of(file, "fc2.weight", {2, 4}) ==
          std::vector<float>(values.begin() + static_cast<std::ptrdiff_t>(fc2.offset),
                             values.begin() + static_cast<std::ptrdiff_t>(fc2.offset + fc2.count)));
    CHECK(file.at("fc1.bias").type == nn::dtype::f32);

    // Read back in the flat layout, padding zero.
    CHECK(nn::read_parameters(folder / "model.safetensors", store) == values);

    CHECK_THROWS_WITH(
        nn::write_parameters(folder / "short.safetensors", store, std::vector<float>(5)),
        ContainsSubstring("gpu::nn::write_parameters: the buffer holds 5 values, but the store's "
                          "flat buffers hold " +
                          std::to_string(store.total_elements())));
    CHECK_FALSE(std::filesystem::exists(folder / "short.safetensors"));
}

TEST_CASE("a file of another model is refused, naming every missing and unexpected tensor",
          "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store;
    register_mlp(store);
    std::vector<float> weight(12, 1.0F), bias(4, 2.0F), conv(8, 3.0F);
    const std::vector<nn::tensor_view> other{
        nn::make_tensor_view("fc1.weight", weight, {4, 3}),
        nn::make_tensor_view("fc1.bias", bias, {4}),
        nn::make_tensor_view("conv1.weight", conv, {2, 1, 2, 2}),
    };
    nn::write_safetensors(folder / "other.safetensors", other);
    const auto e = format_error_of(
        [&] { static_cast<void>(nn::read_parameters(folder / "other.safetensors", store)); });
    REQUIRE(e);
    CHECK(e->file() == (folder / "other.safetensors").string());
    CHECK(e->field() == "tensors");
    CHECK_THAT(e->what(), ContainsSubstring(
                              "1 missing ('fc2.weight'), 1 unexpected ('conv1.weight') for a model "
                              "of 3 parameters: a checkpoint of another model?"));
}

TEST_CASE("a tensor of another shape or dtype is refused with what was expected and found",
          "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store;
    register_mlp(store);
    std::vector<float> w1(12), b1(4), w2(8), wide(6);
    std::vector<double> w2_double(8);
    std::vector<std::uint16_t> w2_half(8);

    nn::write_safetensors(
        folder / "shape.safetensors",
        std::vector<nn::tensor_view>{nn::make_tensor_view("fc1.weight", wide, {2, 3}),
                                     nn::make_tensor_view("fc1.bias", b1, {4}),
                                     nn::make_tensor_view("fc2.weight", w2, {2, 4})});
    auto e = format_error_of(
        [&] { static_cast<void>(nn::read_parameters(folder / "shape.safetensors", store)); });
    REQUIRE(e);
    CHECK(e->field() == "tensor 'fc1.weight'");
    CHECK_THAT(e->what(), ContainsSubstring("expected F32 [4, 3], found F32 [2, 3]"));

    nn::write_safetensors(
        folder / "f64.safetensors",
        std::vector<nn::tensor_view>{nn::make_tensor_view("fc1.weight", w1, {4, 3}),
                                     nn::make_tensor_view("fc1.bias", b1, {4}),
                                     nn::make_tensor_view("fc2.weight", w2_double, {2, 4})});
    e = format_error_of(
        [&] { static_cast<void>(nn::read_parameters(folder / "f64.safetensors", store)); });
    REQUIRE(e);
    CHECK(e->field() == "tensor 'fc2.weight'");
    CHECK_THAT(e->what(), ContainsSubstring("expected F32 [2, 4], found F64 [2, 4]"));

    // A half-precision model (model.half().state_dict()) is not silently widened.
    nn::write_safetensors(
        folder / "f16.safetensors",
        std::vector<nn::tensor_view>{nn::make_tensor_view("fc1.weight", w1, {4, 3}),
                                     nn::make_tensor_view("fc1.bias", b1, {4}),
                                     {.name = "fc2.weight",
                                      .type = nn::dtype::f16,
                                      .shape = {2, 4},
                                      .data = std::as_bytes(std::span(w2_half))}});
    e = format_error_of(
        [&] { static_cast<void>(nn::read_parameters(folder / "f16.safetensors", store)); });
    REQUIRE(e);
    CHECK_THAT(e->what(),
               ContainsSubstring("tensor 'fc2.weight': expected F32 [2, 4], found F16 [2, 4]"));
}

TEST_CASE("a corrupt or missing model file is the reader's error, naming the file",
          "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store;
    register_mlp(store);
    nn::write_parameters(folder / "model.safetensors", store, flat_values(store, 1.0F));
    std::vector<std::byte> bytes = gpu::test::read_file(folder / "model.safetensors");
    bytes.resize(bytes.size() - 4); // cut short
    gpu::test::write_file(folder / "model.safetensors", bytes);
    const auto e = format_error_of(
        [&] { static_cast<void>(nn::read_parameters(folder / "model.safetensors", store)); });
    REQUIRE(e);
    CHECK(e->file() == (folder / "model.safetensors").string());
    CHECK_THAT(e->what(), ContainsSubstring("truncated"));
    CHECK_THROWS_AS(nn::read_parameters(folder / "absent.safetensors", store),
                    std::filesystem::filesystem_error);
}

TEST_CASE("a training state is written as two files and read back exactly", "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store;
    register_mlp(store);
    const nn::training_state state = some_state(store);
    const auto path = folder / "ckpt.safetensors";
    nn::write_training_state(path, store, state);
    CHECK(folder.names() == std::vector<std::string>{"ckpt.optim.safetensors", "ckpt.safetensors"});

    const nn::training_state back = nn::read_training_state(path, store);
    CHECK(back.parameters == state.parameters);
    CHECK(back.optimizer.step == 7);
    CHECK(back.optimizer.exp_avg == state.optimizer.exp_avg);
    CHECK(back.optimizer.exp_avg_sq == state.optimizer.exp_avg_sq);
    REQUIRE(back.scaler.has_value());
    CHECK(back.scaler->scale == 8192.0F);
    CHECK(back.scaler->growth_tracker == 11);

    // The model file loads with strict=True: the parameters only; the pair shares one id.
    const nn::safetensors_file model = nn::read_safetensors(path);
    const nn::safetensors_file optimizer = nn::read_safetensors(nn::optimizer_state_path(path));
    CHECK(model.tensors().size() == 3);
    CHECK(model.metadata().at("format") == "pt");
    CHECK(model.metadata().at("cudagap.checkpoint").size() == 16);
    CHECK(optimizer.metadata().at("cudagap.checkpoint") ==
          model.metadata().at("cudagap.checkpoint"));
    CHECK(optimizer.tensors().size() == 6);
    CHECK(optimizer.metadata().at("step") == "7");
    CHECK(optimizer.at("exp_avg_sq.fc1.bias").shape == std::vector<std::size_t>{4});
    CHECK(nn::read_parameters(path, store) == state.parameters); // also a plain model file

    // A scale that is not a power of two survives the text of the metadata exactly.
    nn::training_state odd = state;
    odd.scaler = nn::grad_scaler_state{.scale = 1.0F / 3.0F, .growth_tracker = 0};
    nn::write_training_state(path, store, odd);
    CHECK(nn::read_training_state(path, store).scaler->scale == 1.0F / 3.0F);

    // Loss scaling off (BF16, FP32): no scaler state, read back as none.
    nn::training_state off = state;
    off.scaler.reset();
    nn::write_training_state(path, store, off);
    CHECK(
        nn::read_safetensors(nn::optimizer_state_path(path)).metadata().at("grad_scaler.enabled") ==
        "false");
    CHECK_FALSE(nn::read_training_state(path, store).scaler.has_value());
}

TEST_CASE("a training state of the wrong sizes or values is refused before any file is written",
          "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store;
    register_mlp(store);
    const auto path = folder / "ckpt.safetensors";
    const auto refused = [&](const nn::training_state& state, const std::string& words) {
        CHECK_THROWS_WITH(nn::write_training_state(path, store, state), ContainsSubstring(words));
        CHECK(folder.names().empty());
    };
    nn::training_state state = some_state(store);
    state.parameters.pop_back();
    refused(state, "gpu::nn::write_training_state: the parameters holds");
    state = some_state(store);
    state.optimizer.exp_avg_sq.clear();
    refused(state, "exp_avg_sq holds 0 values");
    state = some_state(store);
    state.optimizer.step = -1;
    refused(state, "step -1 is negative");
    state = some_state(store);
    state.scaler->scale = 0.0F;
    refused(state, "the scaler's scale 0.0");
    state = some_state(store);
    state.scaler->growth_tracker = -2;
    refused(state, "growth_tracker -2 is negative");
}

TEST_CASE("a save that fails while writing leaves the earlier pair whole and no temporary file",
          "[nn][checkpoint]")
{
    // A model file whose name is as long as the folder allows, with a long extension: its
    // temporary file's name (the name + ".tmp<pid>.<n>") is too long to be made, while the
    // optimizer file's ("c.optim.safetensors") is not. A save that renamed the optimizer file
    // before it had written the model file would leave a pair of two saves here.
    temporary_folder folder;
    const long name_max = ::pathconf(folder.path().c_str(), _PC_NAME_MAX);
    REQUIRE(name_max > 32);
    const auto model = folder / ("c." + std::string(static_cast<std::size_t>(name_max) - 2, 'x'));
    REQUIRE(nn::optimizer_state_path(model) == folder / "c.optim.safetensors");
    nn::parameters store;
    register_mlp(store);
    const nn::training_state earlier = some_state(store);
    nn::write_training_state(folder / "ckpt.safetensors", store, earlier);
    std::filesystem::rename(folder / "ckpt.safetensors", model);
    std::filesystem::rename(folder / "ckpt.optim.safetensors", nn::optimizer_state_path(model));
    const std::vector<std::string> before = folder.names();

    nn::training_state later = earlier;
    later.optimizer.step = 8;
    later.parameters[0] = -1.0F;
    CHECK_THROWS_AS(nn::write_training_state(model, store, later),
                    std::filesystem::filesystem_error);
    CHECK(folder.names() == before); // nothing renamed, no temporary file left
    const nn::training_state back = nn::read_training_state(model, store);
    CHECK(back.optimizer.step == 7);
    CHECK(back.parameters == earlier.parameters);
    CHECK(back.optimizer.exp_avg == earlier.optimizer.exp_avg);
}

TEST_CASE("files of two saves, or a model file without training state, are refused",
          "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store;
    register_mlp(store);
    const auto first = folder / "first.safetensors";
    const auto second = folder / "second.safetensors";
    nn::write_training_state(first, store, some_state(store));
    nn::write_training_state(second, store, some_state(store)); // the same state, another save
    // As a crash between the two renames leaves it: the new optimizer file beside the old model.
    std::filesystem::copy_file(nn::optimizer_state_path(second), nn::optimizer_state_path(first),
                               std::filesystem::copy_options::overwrite_existing);
    auto e = format_error_of([&] { static_cast<void>(nn::read_training_state(first, store)); });
    REQUIRE(e);
    CHECK(e->file() == nn::optimizer_state_path(first).string());
    CHECK(e->field() == "__metadata__ 'cudagap.checkpoint'");
    CHECK_THAT(e->what(), ContainsSubstring("the two files come from different saves"));
    CHECK_THAT(e->what(), ContainsSubstring(first.string() + " has id '"));

    const auto plain = folder / "plain.safetensors";
    nn::write_parameters(plain, store, flat_values(store, 1.0F));
    e = format_error_of([&] { static_cast<void>(nn::read_training_state(plain, store)); });
    REQUIRE(e);
    CHECK(e->file() == plain.string());
    CHECK_THAT(e->what(), ContainsSubstring("a model file without training state"));

    std::filesystem::remove(nn::optimizer_state_path(second));
    CHECK_THROWS_AS(nn::read_training_state(second, store), std::filesystem::filesystem_error);
}

TEST_CASE("an optimizer file of another model, shape, dtype or a corrupt one is refused, naming it",
          "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store;
    register_mlp(store);
    const auto path = folder / "ckpt.safetensors";
    const nn::training_state state = some_state(store);
    nn::write_training_state(path, store, state);
    const std::string id = nn::read_safetensors(path).metadata().at("cudagap.checkpoint");
    const std::string optimizer_file = nn::optimizer_state_path(path).string();

    // Another model's optimizer state (one parameter fewer), under the right id.
    nn::parameters smaller;
    smaller.add("fc1.weight", {4, 3}, nn::initialization::zeros());
    smaller.add("fc1.bias", {4}, nn::initialization::zeros());
    nn::training_state small_state{.parameters = flat_values(smaller, 0.0F),
                                   .optimizer = {.exp_avg = flat_values(smaller, 0.0F),
                                                 .exp_avg_sq = flat_values(smaller, 0.0F)}};
    write_optimizer_file(
        path, smaller, small_state,
        {{"cudagap.checkpoint", id}, {"step", "1"}, {"grad_scaler.enabled", "false"}});
    auto e = format_error_of([&] { static_cast<void>(nn::read_training_state(path, store)); });
    REQUIRE(e);
    CHECK(e->file() == optimizer_file);
    CHECK_THAT(e->what(),
               ContainsSubstring("2 missing ('exp_avg.fc2.weight', 'exp_avg_sq.fc2.weight')"));

    // A moment of another shape: the store's fc1.bias is [4], the file's [2, 2].
    nn::parameters reshaped;
    reshaped.add("fc1.weight", {4, 3}, nn::initialization::zeros());
    reshaped.add("fc1.bias", {2, 2}, nn::initialization::zeros());
    reshaped.add("fc2.weight", {2, 4}, nn::initialization::zeros());
    const nn::training_state reshaped_state{
        .optimizer = {.exp_avg = flat_values(reshaped, 0.0F),
                      .exp_avg_sq = flat_values(reshaped, 0.0F)}};
    write_optimizer_file(
        path, reshaped, reshaped_state,
        {{"cudagap.checkpoint", id}, {"step", "1"}, {"grad_scaler.enabled", "false"}});
    e = format_error_of([&] { static_cast<void>(nn::read_training_state(path, store)); });
    REQUIRE(e);
    CHECK(e->field() == "tensor 'exp_avg.fc1.bias'");
    CHECK_THAT(e->what(), ContainsSubstring("expected F32 [4], found F32 [2, 2]"));

    // Cut short.
    nn::write_training_state(path, store, state);
    std::vector<std::byte> bytes = gpu::test::read_file(optimizer_file);
    bytes.resize(bytes.size() / 2);
    gpu::test::write_file(optimizer_file, bytes);
    e = format_error_of([&] { static_cast<void>(nn::read_training_state(path, store)); });
    REQUIRE(e);
    CHECK(e->file() == optimizer_file);
}

TEST_CASE("the optimizer file's metadata is checked: step, scaler, id", "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store;
    register_mlp(store);
    const auto path = folder / "ckpt.safetensors";
    const nn::training_state state = some_state(store);
    nn::write_training_state(path, store, state);
    const std::string id = nn::read_safetensors(path).metadata().at("cudagap.checkpoint");
    const auto refused = [&](nn::safetensors_metadata metadata, const std::string& field,
                             const std::string& words) {
        write_optimizer_file(path, store, state, metadata);
        const auto e =
            format_error_of([&] { static_cast<void>(nn::read_training_state(path, store)); });
        REQUIRE(e);
        CHECK(e->file() == nn::optimizer_state_path(path).string());
        CHECK(e->field() == field);
        CHECK_THAT(e->what(), ContainsSubstring(words));
    };
    const nn::safetensors_metadata good{{"cudagap.checkpoint", id},
                                        {"step", "7"},
                                        {"grad_scaler.enabled", "true"},
                                        {"grad_scaler.scale", "1024"},
                                        {"grad_scaler.growth_tracker", "3"}};
    const auto with = [&](const std::string& key, const std::string& value) {
        nn::safetensors_metadata m = good;
        m[key] = value;
        return m;
    };
    const auto without = [&](const std::string& key) {
        nn::safetensors_metadata m = good;
        m.erase(key);
        return m;
    };
    write_optimizer_file(path, store, state, good);
    CHECK(nn::read_training_state(path, store).scaler->scale == 1024.0F); // the baseline reads

    refused(without("cudagap.checkpoint"), "__metadata__ 'cudagap.checkpoint'", "missing");
    refused(without("step"), "__metadata__ 'step'", "missing");
    refused(with("step", "seven"), "__metadata__ 'step'", "'seven' is not an integer");
    refused(with("step", "7 "), "__metadata__ 'step'", "'7 ' is not an integer");
    refused(with("step", "-3"), "__metadata__ 'step'", "-3 is negative");
    refused(with("step", "99999999999999999999"), "__metadata__ 'step'", "is not an integer");
    refused(with("grad_scaler.enabled", "yes"), "__metadata__ 'grad_scaler.enabled'",
            "neither 'true' nor 'false'");
    refused(without("grad_scaler.scale"), "__metadata__ 'grad_scaler.scale'", "missing");
    refused(with("grad_scaler.scale", "inf"), "__metadata__ 'grad_scaler.scale'",
            "inf is not a finite scale > 0");
    refused(with("grad_scaler.scale", "0"), "__metadata__ 'grad_scaler.scale'",
            "0 is not a finite scale > 0");
    refused(with("grad_scaler.scale", "1e"), "__metadata__ 'grad_scaler.scale'",
            "'1e' is not a number");
    refused(with("grad_scaler.growth_tracker", "-1"), "__metadata__ 'grad_scaler.growth_tracker'",
            "-1 is negative");
    refused(with("grad_scaler.growth_tracker", "1.5"), "__metadata__ 'grad_scaler.growth_tracker'",
            "not an integer");
}

TEST_CASE("the device functions refuse a store that is not allocated, before any CUDA call",
          "[nn][checkpoint]")
{
    temporary_folder folder;
    nn::parameters store;
    register_mlp(store);
    CHECK_THROWS_WITH(
        nn::save_parameters(folder / "m.safetensors", store, gpu::legacy_default_stream),
        ContainsSubstring("gpu::nn::save_parameters: the parameter store is not allocated"));
    CHECK_THROWS_WITH(
        nn::load_parameters(folder / "m.safetensors", store, gpu::legacy_default_stream),
        ContainsSubstring("gpu::nn::load_parameters: the parameter store is not allocated"));
    CHECK(folder.names().empty());
}

// ---- [gpu] ------------------------------------------------------------------------------------

TEST_CASE("a store saved and loaded into another holds the same master and working copy",
          "[nn][checkpoint][gpu]")
{
    temporary_folder folder;
    gpu::stream s(gpu::stream_flags::non_blocking);
    const auto path = folder / "model.safetensors";
    nn::parameters source(nn::mixed_precision::fp16());
    register_mlp(source);
    source.allocate(s);
    source.initialize(42, s);
    nn::save_parameters(path, source, s);

    nn::parameters target(nn::mixed_precision::fp16());
    register_mlp(target);
    target.allocate(s);
    target.initialize(7, s);
    nn::load_parameters(path, target, s);
    CHECK(target.master().to_host() == source.master().to_host());
    CHECK(target.master().to_host() == source.initial_values(42));
    const std::size_t bytes = source.total_elements() * 2;
    std::vector<std::byte> a(bytes), b(bytes);
    REQUIRE(cudaMemcpy(a.data(), source.working_data(), bytes, cudaMemcpyDeviceToHost) ==
            cudaSuccess);
    REQUIRE(cudaMemcpy(b.data(), target.working_data(), bytes, cudaMemcpyDeviceToHost) ==
            cudaSuccess);
    CHECK(a == b); // the FP16 copy was refreshed
}

namespace {

// Trains @p model @p steps steps on batches made from seeds first_seed, first_seed + 1, ...
void train(gpu::test::tiny_model& model, int steps, std::uint32_t first_seed)
{
    for (int i = 0; i < steps; ++i) {
        const gpu::test::host_batch batch =
            gpu::test::make_batch(model.batch, model.store.precision().compute,
                                  first_seed + static_cast<std::uint32_t>(i));
        model.load(batch);
        model.step(model.stream);
        model.stream.synchronize(); // `batch` must outlive its copy
    }
}

} // namespace

TEST_CASE("a model trained, saved and loaded into fresh objects takes the same next step",
          "[nn][checkpoint][gpu]")
{
    temporary_folder folder;
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::test::model_handles handles(s); // shared: the same cuBLASLt algorithms for both models
    const nn::grad_scaler_options scaling{.init_scale = 4096.0F, .growth_interval = 2};
    const auto path = folder / "ckpt.safetensors";

    gpu::test::tiny_model original(handles, s, nn::mixed_precision::fp16(), 16, 1, scaling);
    train(original, 3, 100);
    nn::save_training_state(path, original.store, original.optimizer, original.scaler, s);

    gpu::test::tiny_model restored(handles, s, nn::mixed_precision::fp16(), 16, 2,
                                   scaling); // other init
    nn::load_training_state(path, restored.store, restored.optimizer, restored.scaler, s);
    CHECK(restored.master() == original.master());
    CHECK(restored.optimizer.step_count(s) == 3);
    CHECK(restored.scaler.current_scale() == original.scaler.current_scale());
    CHECK(restored.scaler.growth_tracker() == original.scaler.growth_tracker());

    train(original, 2, 200);
    train(restored, 2, 200);
    CHECK(restored.master() == original.master()); // bit for bit
    CHECK(restored.optimizer.exp_avg().to_host() == original.optimizer.exp_avg().to_host());
    CHECK(restored.optimizer.exp_avg_sq().to_host() == original.optimizer.exp_avg_sq().to_host());
    CHECK(restored.optimizer.step_count(s) == 5);
    CHECK(restored.scaler.current_scale() == original.scaler.current_scale());
}

TEST_CASE("a refused training checkpoint changes nothing on the device", "[nn][checkpoint][gpu]")
{
    temporary_folder folder;
    gpu::stream s(gpu::stream_flags::non_blocking);
    gpu::test::model_handles handles(s);
    const auto path = folder / "bf16.safetensors";

    // Saved with loss scaling off (BF16), loaded by an FP16 run whose scaler is on.
    gpu::test::tiny_model bf16(handles, s, nn::mixed_precision::bf16(), 8, 1);
    train(bf16, 1, 10);
    nn::save_training_state(path, bf16.store, bf16.optimizer, bf16.scaler, s);
    gpu::test::tiny_model fp16(handles, s, nn::mixed_precision::fp16(), 8, 2);
    const std::vector<float> before = fp16.master();
    const auto e = format_error_of(
        [&] { nn::load_training_state(path, fp16.store, fp16.optimizer, fp16.scaler, s); });
    REQUIRE(e);
    CHECK(e->file() == nn::optimizer_state_path(path).string());
    CHECK_THAT(e->what(), ContainsSubstring("saved with loss scaling off"));
    CHECK(fp16.master() == before);
    CHECK(fp16.optimizer.step_count(s) == 0);

    // A disabled scaler ignores the scaler's part, as PyTorch's does: BF16 loads an FP16 checkpoint.
    nn::save_training_state(path, fp16.store, fp16.optimizer, fp16.scaler, s);
    nn::load_training_state(path, bf16.store, bf16.optimizer, bf16.scaler, s);
    CHECK(bf16.master() == before);
    CHECK(bf16.optimizer.step_count(s) == 0);

    gpu::nn::adamw wrong_size(10, s);
    CHECK_THROWS_WITH(nn::load_training_state(path, fp16.store, wrong_size, fp16.scaler, s),
                      ContainsSubstring("the optimizer holds 10 values"));
}

TEST_CASE("checkpoints refuse a stream being captured, and the capture goes on",
          "[nn][checkpoint][gpu]")
{
    temporary_folder folder;
    gpu::stream s(gpu::stream_flags::non_blocking);
    nn::parameters store;
    register_mlp(store);
    store.allocate(s);
    s.synchronize();
    gpu::capture_scope scope(s);
    CHECK_THROWS_WITH(nn::save_parameters(folder / "m.safetensors", store, s),
                      ContainsSubstring("the stream is being captured into a CUDA graph"));
    store.zero_grad(s);
    const gpu::graph g = scope.end(); // not invalidated
    CHECK(g.node_count() == 1);
    CHECK(folder.names().empty());
}
