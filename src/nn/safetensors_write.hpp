// Private to cudagap_nn: a safetensors file written in full to its temporary file and flushed,
// but not yet renamed over its target, so that a caller can write several files and rename them
// only once all of them were written (a training checkpoint's pair: checkpoint.cpp).
#pragma once

#include "file_io.hpp"

#include <gpu/nn/safetensors.hpp>

#include <filesystem>
#include <memory>
#include <span>

namespace gpu::nn::detail {

/// Writes @p tensors and @p metadata as `write_safetensors` does, up to the rename: the returned
/// writer's commit() renames the file over @p path; destroyed without it, it removes the
/// temporary file and @p path is left as it was.
/// @throws std::invalid_argument as `write_safetensors`, before any file exists
/// @throws std::filesystem::filesystem_error when the temporary file cannot be made, written or
///   flushed
[[nodiscard]] std::unique_ptr<atomic_writer>
stage_safetensors(const std::filesystem::path& path, std::span<const tensor_view> tensors,
                  const safetensors_metadata& metadata);

} // namespace gpu::nn::detail
