/// @file onnx_export.hpp
/// @brief cudagap-infer's ONNX exporter: the Fashion-MNIST convnet that cudagap-train trains,
/// written as an ONNX model (opset 17, dynamic batch axis) with the official ONNX C++ library,
/// for ONNX Runtime, TensorRT (`trtexec --onnx=...`) and Triton. docs/onnx_export.md describes the
/// graph and how to build with or without the library.
///
/// @code
/// const std::vector<float> values = gpu::nn::read_parameters("model.safetensors", store);
/// if (infer::onnx_export_available()) {
///     infer::export_onnx(store, values, "model.onnx");
/// } else {
///     std::cerr << infer::onnx_export_unavailable_reason() << '\n';
/// }
/// @endcode
///
/// Everything here runs on the host: no GPU is needed, and @p store need not be allocated.
#pragma once

#include <gpu/nn/parameters.hpp>

#include <filesystem>
#include <span>
#include <string>

namespace infer {

/// @brief The ONNX opset the exporter writes (ONNX 1.12 and later know it; IR version 8).
inline constexpr int onnx_opset = 17;

/// @brief Whether this build has the ONNX library (Debian's libonnx-dev, found by
/// `find_package(ONNX)` in onnx.cmake); when not, `export_onnx` throws the reason.
[[nodiscard]] bool onnx_export_available() noexcept;

/// @brief What `--export-onnx` prints when the library is absent: how to get libonnx-dev (and the
/// protobuf headers it needs) and rebuild. Says so, too, in a build that has it.
[[nodiscard]] std::string onnx_export_unavailable_reason();

/// @brief Writes the model as ONNX to @p path.
///
/// The graph: Conv (5x5, pads 2) -> Relu -> MaxPool (2x2, stride 2), twice, -> Flatten ->
/// Gemm (transB) -> Relu -> Gemm (transB); input `input` float `[batch, 1, 28, 28]` (already
/// normalised: pixels/255, then (x - 0.2860) / 0.3530), output `output` float `[batch, 10]`
/// (logits), `batch` a named dynamic dimension. The weights are initializers named as PyTorch
/// names them (`conv1.weight`, ...), so the file reads like `torch.onnx.export`'s.
///
/// The arguments are checked first (in every build); then the model is built, checked with
/// `onnx::checker::check_model` and ONNX's strict shape inference (which must give `[batch, 10]`),
/// serialised to a new temporary file beside @p path (`<path>.tmp<pid>.<n>`), flushed to the disk
/// and renamed over @p path. On every failure the temporary file is removed and @p path is left as
/// it was.
///
/// @param store the model's parameters: exactly conv1.weight [32,1,5,5], conv1.bias [32],
/// conv2.weight [64,32,5,5], conv2.bias [64], fc1.weight [1024,3136], fc1.bias [1024],
/// fc2.weight [10,1024], fc2.bias [10] (any order; allocation not needed)
/// @param values FP32 values in the store's flat layout (`store.total_elements()` of them: each
/// parameter at its `offset`), from `gpu::nn::read_parameters` or `store.initial_values(seed)`
/// @param path the file to write (its folder must exist)
/// @throws std::invalid_argument naming a missing, unexpected or misshaped tensor (the shape
/// expected and the shape found), or @p values' size against `store.total_elements()`
/// @throws std::runtime_error with the reason when this build has no ONNX library; with the
/// checker's or shape inference's text when ONNX refuses the model
/// @throws std::filesystem::filesystem_error (a std::runtime_error) naming the path and the
/// system's reason when the file cannot be created, written, flushed or renamed
void export_onnx(const gpu::nn::parameters& store, std::span<const float> values,
                 const std::filesystem::path& path);

} // namespace infer
