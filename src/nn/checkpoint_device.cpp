// Training checkpoints of device state: copies between the store, the optimizer, the scaler and
// the host (on an explicit stream, then waited for), around the host readers and writers of
// checkpoint.cpp. Every check runs before the first copy, so a refused load changes nothing.
#include <gpu/call_checks.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/nn/checkpoint.hpp>
#include <gpu/nn/format_error.hpp>

#include <stdexcept>
#include <string>

namespace gpu::nn {

namespace {

// The checks every device function makes, in this order: the objects (host only), then the
// stream (a CUDA query): copying to the host and waiting would invalidate a capture.
void check_store(const char* function, const parameters& store, stream_ref stream)
{
    GPU_EXPECTS(store.allocated(), std::logic_error, function,
                ": the parameter store is not allocated (call allocate(stream) first)");
    gpu::detail::refuse_while_capturing(stream, function,
                                        "checkpoints copy to the host and wait for the copies",
                                        "save and load between steps, outside the capture");
}

void check_training_objects(const char* function, const parameters& store, const adamw& optimizer,
                            const grad_scaler& scaler, stream_ref stream)
{
    static_cast<void>(optimizer.step_count_data()); // std::logic_error when moved from
    static_cast<void>(scaler.scale());              // likewise
    GPU_EXPECTS(optimizer.size() == store.total_elements(), std::invalid_argument, function,
                ": the optimizer holds ", optimizer.size(),
                " values, but the store's flat buffers hold ", store.total_elements());
    check_store(function, store, stream);
}

// The scaler's part of a checkpoint, checked against the scaler it goes into.
void check_scaler_state(const training_state& state, const grad_scaler& scaler,
                        const std::filesystem::path& path)
{
    if (!scaler.enabled()) {
        return; // ignored, as PyTorch's disabled GradScaler ignores a state dict
    }
    const std::string file = optimizer_state_path(path).string();
    if (!state.scaler) {
        throw format_error(
            file, "__metadata__ 'grad_scaler.enabled'",
            "the checkpoint was saved with loss scaling off (a BF16 or FP32 run?), but this "
            "grad_scaler is on: make it as the checkpoint's run did");
    }
    if (state.scaler->growth_tracker >= scaler.options().growth_interval) {
        throw format_error(file, "__metadata__ 'grad_scaler.growth_tracker'",
                           std::to_string(state.scaler->growth_tracker) +
                               " is not below this scaler's growth_interval " +
                               std::to_string(scaler.options().growth_interval));
    }
}

} // namespace

void save_parameters(const std::filesystem::path& path, const parameters& store, stream_ref stream)
{
    check_store("gpu::nn::save_parameters", store, stream);
    std::vector<float> values(store.total_elements());
    store.master().copy_to_host_async(values, stream);
    stream.synchronize();
    write_parameters(path, store, values);
}

void load_parameters(const std::filesystem::path& path, parameters& store, stream_ref stream)
{
    check_store("gpu::nn::load_parameters", store, stream);
    const std::vector<float> values = read_parameters(path, store);
    store.master().copy_from_host_async(values, stream);
    store.refresh_working_copy(stream);
    stream.synchronize(); // `values` must outlive the copy
}

void save_training_state(const std::filesystem::path& path, const parameters& store,
                         const adamw& optimizer, const grad_scaler& scaler, stream_ref stream)
{
    check_training_objects("gpu::nn::save_training_state", store, optimizer, scaler, stream);
    training_state state;
    state.parameters.resize(store.total_elements());
    store.master().copy_to_host_async(state.parameters, stream);
    state.optimizer = optimizer.state(stream); // synchronises the stream: the copy above is done
    if (scaler.enabled()) {
        state.scaler = scaler.state(stream);
    }
    write_training_state(path, store, state);
}

void load_training_state(const std::filesystem::path& path, parameters& store, adamw& optimizer,
                         grad_scaler& scaler, stream_ref stream)
{
    check_training_objects("gpu::nn::load_training_state", store, optimizer, scaler, stream);
    const training_state state = read_training_state(path, store);
    check_scaler_state(state, scaler, path);
    store.master().copy_from_host_async(state.parameters, stream);
    optimizer.load_state(state.optimizer, stream);
    if (scaler.enabled()) {
        scaler.load_state(*state.scaler, stream);
    }
    store.refresh_working_copy(stream);
    stream.synchronize(); // `state` must outlive the copies
}

} // namespace gpu::nn
