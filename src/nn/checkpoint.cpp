// Training checkpoints on the host: a parameter store's flat buffers to and from safetensors
// files, checked name by name against the store (docs/checkpoints.md, "Training state").
#include <gpu/detail/expects.hpp>
#include <gpu/nn/checkpoint.hpp>
#include <gpu/nn/format_error.hpp>
#include <gpu/nn/safetensors.hpp>

#include "safetensors_write.hpp"
#include "text.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <initializer_list>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>

namespace gpu::nn {

namespace {

constexpr std::string_view id_key = "cudagap.checkpoint";
constexpr std::string_view step_key = "step";
constexpr std::string_view scaler_enabled_key = "grad_scaler.enabled";
constexpr std::string_view scale_key = "grad_scaler.scale";
constexpr std::string_view tracker_key = "grad_scaler.growth_tracker";
constexpr std::string_view exp_avg_prefix = "exp_avg.";
constexpr std::string_view exp_avg_sq_prefix = "exp_avg_sq.";

std::vector<std::size_t> shape_of(const parameter_info& p)
{
    return {p.shape.begin(), p.shape.end()};
}

// One tensor per parameter of `store`, named `<prefix><name>`, viewing `values` (the flat layout).
std::vector<tensor_view> tensors_of(const parameters& store, std::span<const float> values,
                                    std::string_view prefix)
{
    std::vector<tensor_view> tensors;
    tensors.reserve(store.size());
    for (const parameter_info& p : store.infos()) {
        tensors.push_back(make_tensor_view(std::string(prefix) + p.name,
                                           values.subspan(p.offset, p.count), shape_of(p)));
    }
    return tensors;
}

void check_length(const char* function, const char* what, std::size_t length,
                  const parameters& store)
{
    GPU_EXPECTS(length == store.total_elements(), std::invalid_argument, function, ": ", what,
                " holds ", length, " values, but the store's flat buffers hold ",
                store.total_elements());
}

// `'a', 'b', ... and 3 more` for an error message (names from a file are made printable).
std::string name_list(const std::vector<std::string>& names)
{
    constexpr std::size_t shown = 8;
    std::string text;
    for (std::size_t i = 0; i < names.size() && i < shown; ++i) {
        text += (i == 0 ? "'" : ", '") + detail::printable(names[i]) + "'";
    }
    if (names.size() > shown) {
        text += " and " + std::to_string(names.size() - shown) + " more";
    }
    return text;
}

// Refuses a file whose tensor names are not exactly `<prefix><name>` for each prefix and each of
// the store's parameters, listing every missing and unexpected one (as PyTorch's
// load_state_dict(strict=True) does).
void check_names(const safetensors_file& file, const parameters& store,
                 std::initializer_list<std::string_view> prefixes)
{
    std::set<std::string, std::less<>> expected;
    for (const std::string_view prefix : prefixes) {
        for (const parameter_info& p : store.infos()) {
            expected.insert(std::string(prefix) + p.name);
        }
    }
    std::vector<std::string> missing;
    std::vector<std::string> unexpected;
    for (const tensor_view& t : file.tensors()) {
        if (!expected.contains(t.name)) {
            unexpected.push_back(t.name);
        }
    }
    for (const std::string& name : expected) {
        if (file.find(name) == nullptr) {
            missing.push_back(name);
        }
    }
    if (missing.empty() && unexpected.empty()) {
        return;
    }
    std::string problem;
    if (!missing.empty()) {
        problem += std::to_string(missing.size()) + " missing (" + name_list(missing) + ")";
    }
    if (!unexpected.empty()) {
        problem += (problem.empty() ? "" : ", ") + std::to_string(unexpected.size()) +
                   " unexpected (" + name_list(unexpected) + ")";
    }
    throw format_error(file.source(), "tensors",
                       problem + " for a model of " + std::to_string(store.size()) +
                           " parameters: a checkpoint of another model?");
}

// The tensors `<prefix><name>` of `file`, each checked to be F32 of the parameter's shape,
// gathered into the store's flat layout (padding zero).
std::vector<float> gather(const safetensors_file& file, const parameters& store,
                          std::string_view prefix)
{
    std::vector<float> flat(store.total_elements(), 0.0F);
    for (const parameter_info& p : store.infos()) {
        const std::vector<float> values =
            file.values<float>(std::string(prefix) + p.name, shape_of(p));
        std::copy(values.begin(), values.end(),
                  flat.begin() + static_cast<std::ptrdiff_t>(p.offset));
    }
    return flat;
}

const std::string& metadata_value(const safetensors_file& file, std::string_view key)
{
    const auto it = file.metadata().find(key);
    if (it == file.metadata().end()) {
        throw format_error(file.source(), "__metadata__ '" + std::string(key) + "'",
                           "missing (not a cudagap training checkpoint?)");
    }
    return it->second;
}

template <class Number>
Number parse_number(const safetensors_file& file, std::string_view key, const char* expected)
{
    const std::string& text = metadata_value(file, key);
    Number value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc{} || end != text.data() + text.size() || text.empty()) {
        throw format_error(file.source(), "__metadata__ '" + std::string(key) + "'",
                           "'" + detail::printable(text) + "' is not " + expected);
    }
    return value;
}

std::int64_t parse_step(const safetensors_file& file)
{
    const auto step = parse_number<std::int64_t>(file, step_key, "an integer");
    if (step < 0) {
        throw format_error(file.source(), "__metadata__ 'step'",
                           std::to_string(step) + " is negative");
    }
    return step;
}

std::optional<grad_scaler_state> parse_scaler(const safetensors_file& file)
{
    const std::string& enabled = metadata_value(file, scaler_enabled_key);
    if (enabled == "false") {
        return std::nullopt;
    }
    if (enabled != "true") {
        throw format_error(file.source(), "__metadata__ 'grad_scaler.enabled'",
                           "'" + detail::printable(enabled) + "' is neither 'true' nor 'false'");
    }
    const auto scale = parse_number<float>(file, scale_key, "a number");
    if (!std::isfinite(scale) || scale <= 0.0F) {
        throw format_error(file.source(), "__metadata__ 'grad_scaler.scale'",
                           metadata_value(file, scale_key) + " is not a finite scale > 0");
    }
    const auto tracker = parse_number<std::int32_t>(file, tracker_key, "an integer");
    if (tracker < 0) {
        throw format_error(file.source(), "__metadata__ 'grad_scaler.growth_tracker'",
                           std::to_string(tracker) + " is negative");
    }
    return grad_scaler_state{.scale = scale, .growth_tracker = tracker};
}

// A new id for the two files of one save: 64 random bits in hexadecimal.
std::string new_checkpoint_id()
{
    std::random_device device;
    const std::uint64_t bits = (std::uint64_t{device()} << 32) ^ std::uint64_t{device()};
    char text[20];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(bits));
    return text;
}

// The shortest text that reads back as the same float (std::to_chars' guarantee).
std::string exact_text(float value)
{
    char text[32];
    const auto result = std::to_chars(text, text + sizeof text, value);
    return {text, result.ptr};
}

void check_state(const parameters& store, const training_state& state)
{
    constexpr const char* function = "gpu::nn::write_training_state";
    check_length(function, "the parameters", state.parameters.size(), store);
    check_length(function, "exp_avg", state.optimizer.exp_avg.size(), store);
    check_length(function, "exp_avg_sq", state.optimizer.exp_avg_sq.size(), store);
    GPU_EXPECTS(state.optimizer.step >= 0, std::invalid_argument, function, ": step ",
                state.optimizer.step, " is negative");
    if (state.scaler) {
        GPU_EXPECTS(std::isfinite(state.scaler->scale) && state.scaler->scale > 0.0F,
                    std::invalid_argument, function, ": the scaler's scale ", state.scaler->scale,
                    " is not finite and > 0");
        GPU_EXPECTS(state.scaler->growth_tracker >= 0, std::invalid_argument, function,
                    ": the scaler's growth_tracker ", state.scaler->growth_tracker, " is negative");
    }
}

} // namespace

std::filesystem::path optimizer_state_path(const std::filesystem::path& model_path)
{
    std::filesystem::path path = model_path;
    path.replace_extension(".optim.safetensors");
    return path;
}

void write_parameters(const std::filesystem::path& path, const parameters& store,
                      std::span<const float> values)
{
    check_length("gpu::nn::write_parameters", "the buffer", values.size(), store);
    write_safetensors(path, tensors_of(store, values, ""), {{"format", "pt"}});
}

std::vector<float> read_parameters(const std::filesystem::path& path, const parameters& store)
{
    const safetensors_file file = read_safetensors(path);
    check_names(file, store, {""});
    return gather(file, store, "");
}

void write_training_state(const std::filesystem::path& path, const parameters& store,
                          const training_state& state)
{
    check_state(store, state);
    const std::string id = new_checkpoint_id();
    const std::string step = std::to_string(state.optimizer.step);
    std::vector<tensor_view> moments = tensors_of(store, state.optimizer.exp_avg, exp_avg_prefix);
    for (tensor_view& t : tensors_of(store, state.optimizer.exp_avg_sq, exp_avg_sq_prefix)) {
        moments.push_back(std::move(t));
    }
    safetensors_metadata optimizer_metadata{
        {std::string(id_key), id},
        {std::string(step_key), step},
        {std::string(scaler_enabled_key), state.scaler ? "true" : "false"}};
    if (state.scaler) {
        optimizer_metadata.emplace(scale_key, exact_text(state.scaler->scale));
        optimizer_metadata.emplace(tracker_key, std::to_string(state.scaler->growth_tracker));
    }
    // Both files are written and on the disk before either is renamed: a failure on the way (a
    // full disk, a file that cannot be made) leaves the earlier pair as it was. Then the renames,
    // the optimizer file's first: the model file, renamed last, completes the pair.
    const auto optimizer_file =
        detail::stage_safetensors(optimizer_state_path(path), moments, optimizer_metadata);
    const auto model_file = detail::stage_safetensors(
        path, tensors_of(store, state.parameters, ""),
        {{"format", "pt"}, {std::string(id_key), id}, {std::string(step_key), step}});
    optimizer_file->commit();
    model_file->commit();
}

training_state read_training_state(const std::filesystem::path& path, const parameters& store)
{
    const safetensors_file model = read_safetensors(path);
    if (!model.metadata().contains(id_key)) {
        throw format_error(
            model.source(), "__metadata__ 'cudagap.checkpoint'",
            "missing: a model file without training state (written by save_parameters or "
            "by PyTorch); load it with load_parameters");
    }
    const safetensors_file optimizer = read_safetensors(optimizer_state_path(path));
    // The pair first: files of two saves would also differ in ways the checks below report less
    // clearly.
    const std::string& model_id = metadata_value(model, id_key);
    const std::string& optimizer_id = metadata_value(optimizer, id_key);
    if (model_id != optimizer_id) {
        throw format_error(optimizer.source(), "__metadata__ 'cudagap.checkpoint'",
                           "id '" + detail::printable(optimizer_id) + "', but the model file " +
                               model.source() + " has id '" + detail::printable(model_id) +
                               "': the two files come from different saves (one interrupted?)");
    }
    check_names(model, store, {""});
    check_names(optimizer, store, {exp_avg_prefix, exp_avg_sq_prefix});
    training_state state;
    state.parameters = gather(model, store, "");
    state.optimizer.exp_avg = gather(optimizer, store, exp_avg_prefix);
    state.optimizer.exp_avg_sq = gather(optimizer, store, exp_avg_sq_prefix);
    state.optimizer.step = parse_step(optimizer);
    state.scaler = parse_scaler(optimizer);
    return state;
}

} // namespace gpu::nn
