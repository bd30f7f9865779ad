/// @file checkpoint.hpp
/// @brief Checkpoints of a model (`save_parameters`, `load_parameters`) and of its whole
/// training state (`save_training_state`, `load_training_state`: the parameters, AdamW's moments
/// and step, the grad scaler), in safetensors files that PyTorch reads.
///
/// @code
/// gpu::nn::save_training_state("ckpt.safetensors", store, optimizer, scaler, stream);
/// // writes ckpt.optim.safetensors (optimizer, scaler), then ckpt.safetensors (the model)
/// gpu::nn::load_training_state("ckpt.safetensors", store, optimizer, scaler, stream);
/// @endcode
///
/// **Two files.** The model file holds each parameter as its own `F32` tensor under its
/// PyTorch name and shape (`fc1.weight` `[128, 784]`, ...) and nothing else, so that
/// `model.load_state_dict(safetensors.torch.load_file(path))` takes it with `strict=True`. The
/// optimizer file beside it (`optimizer_state_path`: the extension replaced by
/// `.optim.safetensors`) holds `exp_avg.<name>` and `exp_avg_sq.<name>` for every parameter, and
/// in its metadata the step and the grad scaler's state. Both carry the same random checkpoint id
/// in their metadata (`cudagap.checkpoint`), so that files of two different saves are never
/// loaded together.
///
/// **The pair is replaced whole.** Both files are written to temporary files beside their
/// targets and flushed to the disk before either is renamed; then the optimizer file is renamed
/// over its target, and the model file last. A failure while writing (a full disk, a file that
/// cannot be made) throws with the earlier pair left exactly as it was and no temporary file
/// behind. Only a crash in the moment between the two renames can leave the old model file with
/// the new optimizer file: their ids differ and `load_training_state` refuses the pair, naming
/// both ids. Save to a new path per checkpoint (`ckpt-000100.safetensors`) to always keep a
/// complete earlier one even then.
///
/// **Loading checks everything first.** Both files are read and checked against the store
/// (every name, dtype and shape; the ids; the metadata) before anything on the device changes:
/// a file of another model, a wrong dtype or a corrupt file is a `gpu::nn::format_error` naming
/// the file and the tensor or field, with what was expected and what was found, and the store,
/// the optimizer and the scaler are left as they were.
///
/// **Not capturable.** The device functions copy between the device and the host on the stream
/// they are given and synchronise it: call them between steps, never inside a CUDA graph capture
/// (they refuse a capturing stream with `std::logic_error`).
#pragma once

#include <gpu/nn/adamw.hpp>
#include <gpu/nn/grad_scaler.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/stream.hpp>

#include <filesystem>
#include <optional>
#include <span>
#include <vector>

namespace gpu::nn {

/// @brief A model's training state on the host, in the store's flat layout: what the training
/// checkpoint files hold. Plain data.
struct training_state {
    /// The master values, `total_elements()` of the store, in its layout (padding zero).
    std::vector<float> parameters{};
    /// AdamW's step count and moments, in the same flat layout as `parameters`.
    adamw_state optimizer{};
    /// The grad scaler's scale and growth tracker; empty when loss scaling was off (a disabled
    /// scaler, as under BF16 or FP32), which PyTorch's `GradScaler.state_dict()` gives as `{}`.
    std::optional<grad_scaler_state> scaler{};
};

/// @brief The optimizer file that belongs with the model file @p model_path: its extension
/// replaced by `.optim.safetensors` (`ckpt.safetensors` -> `ckpt.optim.safetensors`, `ckpt` ->
/// `ckpt.optim.safetensors`).
[[nodiscard]] std::filesystem::path optimizer_state_path(const std::filesystem::path& model_path);

/// @brief Writes @p values (a master buffer in the layout of @p store) to @p path: each
/// parameter as an `F32` tensor under its name and shape, metadata `{"format": "pt"}`. Host
/// only: no GPU needed; @p store need not be allocated (only its names and shapes are used).
/// Atomic (`write_safetensors`).
/// @throws std::invalid_argument when @p values does not hold `store.total_elements()` values
/// @throws std::filesystem::filesystem_error when the file cannot be written
void write_parameters(const std::filesystem::path& path, const parameters& store,
                      std::span<const float> values);

/// @brief Reads the model file @p path, checked against @p store: exactly its parameters, each
/// `F32` of its shape. Returns a master buffer in the store's layout (padding zero). Host only.
/// A file saved by PyTorch (`save_file(model.state_dict(), path)`) reads when the names, shapes
/// and dtype match.
/// @throws std::filesystem::filesystem_error when the file cannot be opened or read
/// @throws format_error naming @p path: a corrupt file (see `read_safetensors`); field `tensors`
/// when tensors are missing or unexpected (all listed); field of the tensor (`tensor 'fc1.weight'`)
/// with the dtype and shape expected and found
[[nodiscard]] std::vector<float> read_parameters(const std::filesystem::path& path,
                                                 const parameters& store);

/// @brief Writes @p state as a training checkpoint: the optimizer file
/// (`optimizer_state_path(path)`) and the model file @p path, with one new checkpoint id, each
/// to a temporary file; once both are written and flushed, the optimizer file is renamed over its
/// target, then the model file. Host only; @p store need not be allocated.
/// @throws std::invalid_argument when a buffer of @p state does not hold `store.total_elements()`
/// values, the step is negative, or the scaler's scale is not finite and > 0 or its tracker is
/// negative (values named), before any file is written
/// @throws std::filesystem::filesystem_error when a file cannot be written; the files at @p path
/// and beside it are then as they were
void write_training_state(const std::filesystem::path& path, const parameters& store,
                          const training_state& state);

/// @brief Reads a training checkpoint (the model file @p path and its optimizer file) checked
/// against @p store. Host only.
/// @throws std::filesystem::filesystem_error when a file cannot be opened or read (a model file
/// saved by `save_parameters` has no optimizer file)
/// @throws format_error naming the file at fault: as `read_parameters` for either file (the
/// optimizer file's tensors are `exp_avg.<name>` and `exp_avg_sq.<name>`); field of
/// the key (`__metadata__ 'step'`) for a missing or malformed step, scaler value or checkpoint id,
/// and for ids that differ between the two files
[[nodiscard]] training_state read_training_state(const std::filesystem::path& path,
                                                 const parameters& store);

/// @brief Copies the master parameters to the host on @p stream, waits, and writes them as
/// `write_parameters` does: the model file PyTorch loads. Not capturable.
/// @throws std::logic_error when @p store is not allocated, or @p stream is being captured
/// @throws std::filesystem::filesystem_error, gpu::cuda_error as the steps it takes
void save_parameters(const std::filesystem::path& path, const parameters& store, stream_ref stream);

/// @brief Reads @p path as `read_parameters` does, then copies the values into the master buffer
/// on @p stream, refreshes the working copy and waits. The gradients are left as they are.
/// Nothing on the device changes when the file is refused. Not capturable.
/// @throws std::logic_error when @p store is not allocated, or @p stream is being captured
/// @throws std::filesystem::filesystem_error, format_error as `read_parameters`
void load_parameters(const std::filesystem::path& path, parameters& store, stream_ref stream);

/// @brief Copies the parameters, AdamW's state and the scaler's state to the host on @p stream
/// (waiting for the work queued there), and writes them as `write_training_state` does. A
/// disabled scaler is recorded as off. Not capturable.
/// @throws std::invalid_argument when @p optimizer's size differs from `store.total_elements()`
/// @throws std::logic_error when @p store is not allocated, @p optimizer or @p scaler is moved
/// from, or @p stream is being captured
/// @throws std::filesystem::filesystem_error, gpu::cuda_error as the steps it takes
void save_training_state(const std::filesystem::path& path, const parameters& store,
                         const adamw& optimizer, const grad_scaler& scaler, stream_ref stream);

/// @brief Reads the training checkpoint @p path as `read_training_state` does and restores it on
/// @p stream: the master buffer (and the working copy), AdamW's moments and step, the scaler's
/// scale and tracker (a disabled scaler ignores them, as PyTorch's does); then waits. Everything
/// is checked before anything on the device changes. Not capturable.
/// @throws std::invalid_argument when @p optimizer's size differs from `store.total_elements()`
/// @throws std::logic_error when @p store is not allocated, @p optimizer or @p scaler is moved
/// from, or @p stream is being captured
/// @throws format_error as `read_training_state`; also, naming the optimizer file, when @p scaler
/// is enabled but the checkpoint was saved with loss scaling off, or its growth tracker is not
/// below this scaler's `growth_interval`
/// @throws std::filesystem::filesystem_error as `read_training_state`
void load_training_state(const std::filesystem::path& path, parameters& store, adamw& optimizer,
                         grad_scaler& scaler, stream_ref stream);

} // namespace gpu::nn
