/// @file tensor.hpp
/// @brief What layers pass each other: `tensor_spec` (shape, element type, layout),
/// `tensor_ref` (a spec and a device pointer, non-owning) and `tensor` (an owning device tensor).
///
/// @code
/// const gpu::nn::tensor_spec spec{.shape = {64, 1, 28, 28}, .type = gpu::element_type::fp16};
/// gpu::nn::tensor x(spec, stream);          // 64·784 FP16 elements on `stream`
/// layer.forward(ctx, x.ref(), y.ref());
/// @endcode
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/dnn/types.hpp>
#include <gpu/element_type.hpp>
#include <gpu/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpu::nn {

/// @brief A tensor's shape, element type and memory layout, without data. Plain data.
struct tensor_spec {
    /// The dimensions in logical order (N, C, H, W for images, N, features for a matrix),
    /// whatever the layout.
    std::vector<std::int64_t> shape{};
    element_type type = element_type::fp32; ///< the element type
    /// Where the channels of a 4-d (or n-d) tensor lie: `nchw` (row-major in logical order,
    /// PyTorch's contiguous format) or `nhwc` (channels last). Matrices are row-major (`nchw`).
    dnn::tensor_layout layout = dnn::tensor_layout::nchw;

    /// @brief The number of elements (1 for an empty shape).
    /// @throws std::invalid_argument when a dimension is negative or the product overflows
    [[nodiscard]] std::size_t elements() const;
    /// @brief `elements()` times the element size.
    /// @throws std::invalid_argument as `elements`, or when the byte count overflows
    [[nodiscard]] std::size_t bytes() const;
    /// @brief E.g. `FP16 [64, 1, 28, 28] nchw`.
    [[nodiscard]] std::string to_string() const;

    /// @brief Specs compare member by member.
    friend bool operator==(const tensor_spec&, const tensor_spec&) = default;
};

/// @brief A tensor in device memory that someone else owns: its spec and its address. Plain data.
///
/// A null `data` where a gradient is asked for means "not needed" (the first layer's input
/// gradient); everywhere else it is a bad argument.
struct tensor_ref {
    void* data = nullptr; ///< device address of the first element
    tensor_spec spec{};   ///< shape, type and layout
};

/// @brief An owning tensor in device memory, allocated on a stream (stream-ordered, freed there).
/// Move-only; moved from, it holds no memory (and its spec is unspecified, like the contents of
/// a moved-from `std::vector`). The memory is uninitialised.
class tensor {
public:
    /// @brief An empty tensor: no memory, an empty spec.
    tensor() noexcept = default;
    /// @brief Allocates `spec.bytes()` bytes on @p stream, counted in the ledger as
    /// activations, or under the calling thread's `memory_tag_scope` when it names a tag (a
    /// server's "bucket 64 activations").
    /// @throws std::invalid_argument as `tensor_spec::bytes`
    /// @throws gpu::out_of_memory, gpu::cuda_error from the allocation
    tensor(tensor_spec spec, stream_ref stream);

    /// @brief The spec.
    [[nodiscard]] const tensor_spec& spec() const noexcept { return spec_; }
    /// @brief The device address (null when empty).
    [[nodiscard]] void* data() noexcept { return buffer_.data(); }
    /// @brief The device address (null when empty).
    [[nodiscard]] const void* data() const noexcept { return buffer_.data(); }
    /// @brief A reference to pass to layers.
    [[nodiscard]] tensor_ref ref() noexcept { return {buffer_.data(), spec_}; }
    /// @brief The memory, for copies to and from the host.
    [[nodiscard]] device_buffer<std::byte>& buffer() noexcept { return buffer_; }
    /// @brief The memory, for copies to the host.
    [[nodiscard]] const device_buffer<std::byte>& buffer() const noexcept { return buffer_; }

private:
    tensor_spec spec_{};
    device_buffer<std::byte> buffer_;
};

} // namespace gpu::nn
