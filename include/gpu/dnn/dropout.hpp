/// @file dropout.hpp
/// @brief `gpu::dnn::dropout`: inverted dropout on cuDNN's dropout descriptor, with its random
/// number generator states seeded once and kept in device memory (`torch.nn.Dropout` in
/// training mode).
///
/// @code
/// gpu::dnn::dropout drop(h, 0.5F, 42);       // seeds the states on h's stream
/// gpu::device_buffer<std::byte> mask(
///     gpu::dnn::dropout::reserve_bytes(x.size(), gpu::dnn::data_type::fp32), stream);
/// drop.forward(h, x, y, mask);               // a new mask each call; y = x * mask / (1 - p)
/// drop.backward(h, dy, dx, mask);            // dx = dy * mask / (1 - p), the same mask
/// @endcode
///
/// See docs/dnn_ops.md for the PyTorch counterpart and what a CUDA graph replay draws.
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/dnn/element.hpp>
#include <gpu/dnn/error.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>

#include <cudnn_ops.h>

#include <cstddef>
#include <cstdint>

namespace gpu::dnn {

namespace detail {
/// @brief Destroys a dropout descriptor; failures are reported, never thrown.
struct dropout_descriptor_deleter {
    void operator()(cudnnDropoutDescriptor_t raw) const noexcept
    {
        gpu::detail::report_destroy_failure("cudnnDestroyDropoutDescriptor",
                                            cudnnDestroyDropoutDescriptor(raw));
    }
};
} // namespace detail

/// @brief Inverted dropout: each element is zeroed with probability p and the others are
/// scaled by 1 / (1 - p), as PyTorch's `nn.Dropout` does in training mode. Move-only.
///
/// The object owns cuDNN's dropout descriptor and the generator states it draws from (device
/// memory, allocated on the handle's stream). **Every forward advances those states on the
/// device**: cuDNN takes them as writable device memory in each forward (and forbids two
/// forwards on the same states at once), so successive forwards draw different masks, and so
/// does each replay of a CUDA graph that captured a forward, with no host involvement (the
/// `[gpu]` tests check both). The mask of a forward is kept in the caller's
/// reserve buffer (`reserve_bytes`), which the backward reads; keep it unchanged in between.
///
/// `forward` and `backward` are one cuDNN call each on the handle's stream: no allocation, no
/// host synchronisation, so both may be captured in a CUDA graph. Construction is not: it seeds
/// the states with a kernel and may synchronise; construct before capturing. Forwards of one
/// object must not run concurrently (cuDNN's rule: they share the states); on one stream they
/// never do. The states are freed on the stream of the last forward; when forwards move to
/// another stream, order it after the previous one (an event), as for any buffer.
class dropout {
public:
    /// @brief Creates the descriptor, allocates the generator states on @p h's stream and seeds
    /// them there (`cudnnSetDropoutDescriptor`): the same seed on the same kind of GPU gives the
    /// same sequence of masks.
    /// @param h the cuDNN handle whose stream seeds the states
    /// @param probability the probability p of zeroing an element, in [0, 1)
    /// @param seed the generators' seed
    /// @throws std::invalid_argument for a probability outside [0, 1) (or NaN), with its value
    /// @throws std::logic_error for an empty (moved-from) handle
    /// @throws gpu::dnn::dnn_error, gpu::cuda_error, gpu::out_of_memory from cuDNN and CUDA
    dropout(handle& h, float probability, std::uint64_t seed);

    /// @brief A dropout that continues from generator states saved from another one (a copy of
    /// its `states()`, say from a checkpoint), without seeding them again
    /// (`cudnnRestoreDropoutDescriptor`). The states are device-specific: restore them on the
    /// same kind of GPU they were saved on.
    /// @param h the cuDNN handle
    /// @param probability the probability p, in [0, 1)
    /// @param seed the seed the states were made with (cuDNN records it; it draws nothing)
    /// @param states the saved states, taken over; at least as large as this GPU's states
    /// @throws std::invalid_argument for a bad probability, or @p states smaller than cuDNN's
    /// states on this GPU (sizes named)
    /// @throws std::logic_error for an empty handle
    [[nodiscard]] static dropout restore(handle& h, float probability, std::uint64_t seed,
                                         device_buffer<std::byte> states);

    /// @brief The bytes of the reserve buffer (the mask) that a forward over @p elements of
    /// @p type needs (`cudnnDropoutGetReserveSpaceSize`). Needs no GPU.
    /// @throws std::invalid_argument when @p elements is 0 or more than INT_MAX, or @p type is
    /// not a named enumerator
    [[nodiscard]] static std::size_t reserve_bytes(std::size_t elements, data_type type);

    /// @brief y = x * mask / (1 - p) with a new mask, written to @p reserve, on @p h's stream.
    /// cuDNN does not document dropout in place: give y a buffer of its own.
    /// @tparam T `float`, `__half` or `__nv_bfloat16`
    /// @throws std::invalid_argument when x and y differ in size, x is empty or has more than
    /// INT_MAX elements, or @p reserve is smaller than `reserve_bytes` (sizes named)
    /// @throws std::logic_error when this object or the handle is empty (moved from)
    /// @throws gpu::dnn::dnn_error when cuDNN fails, with its own message
    template <dnn_element T>
    void forward(handle& h, const device_buffer<T>& x, device_buffer<T>& y,
                 device_buffer<std::byte>& reserve)
    {
        check_sizes("gpu::dnn::dropout::forward", "x", x.size(), "y", y.size());
        forward_raw(h, data_type_of<T>, x.size(), x.data(), y.data(), reserve.data(),
                    reserve.size());
    }

    /// @brief dx = dy * mask / (1 - p) with the mask a forward wrote to @p reserve, on @p h's
    /// stream; dx a buffer of its own (cuDNN does not document the backward in place).
    /// @throws as `forward`
    template <dnn_element T>
    void backward(handle& h, const device_buffer<T>& dy, device_buffer<T>& dx,
                  const device_buffer<std::byte>& reserve)
    {
        check_sizes("gpu::dnn::dropout::backward", "dy", dy.size(), "dx", dx.size());
        backward_raw(h, data_type_of<T>, dy.size(), dy.data(), dx.data(), reserve.data(),
                     reserve.size());
    }

    /// @brief The forward on raw device pointers: @p elements of @p type at @p x and @p y,
    /// the mask to @p reserve of @p reserve_size bytes.
    /// @throws std::logic_error for an empty object or handle
    /// @throws std::invalid_argument for a null pointer, a count of 0 or above INT_MAX, a
    /// @p type that is not a named enumerator, or a reserve smaller than `reserve_bytes`
    void forward_raw(handle& h, data_type type, std::size_t elements, const void* x, void* y,
                     void* reserve, std::size_t reserve_size);

    /// @brief The backward on raw device pointers; as `forward_raw`.
    void backward_raw(handle& h, data_type type, std::size_t elements, const void* dy, void* dx,
                      const void* reserve, std::size_t reserve_size);

    /// @brief The probability of zeroing an element.
    [[nodiscard]] float probability() const noexcept { return probability_; }
    /// @brief The seed the states were made with.
    [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }
    /// @brief The generator states (device memory; copy them to save the sequence's position).
    [[nodiscard]] const device_buffer<std::byte>& states() const noexcept { return states_; }
    /// @brief The raw descriptor, still owned (null after a move).
    [[nodiscard]] cudnnDropoutDescriptor_t get() const noexcept { return descriptor_.get(); }
    /// @brief Whether a descriptor is held (false after a move).
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(descriptor_); }

    /// @brief Moving leaves the source without a descriptor or states; it may only be destroyed
    /// or assigned.
    /// @post `!other`
    dropout(dropout&& other) noexcept = default;
    /// @brief Releases this object's descriptor and states and takes @p other's.
    /// @post `!other`
    dropout& operator=(dropout&& other) noexcept = default;
    dropout(const dropout&) = delete;
    dropout& operator=(const dropout&) = delete;
    /// @brief Destroys the descriptor and frees the states on their stream.
    ~dropout() = default;

private:
    dropout(float probability, std::uint64_t seed) noexcept : probability_(probability), seed_(seed)
    {}
    static void check_sizes(const char* operation, const char* input_name, std::size_t input,
                            const char* output_name, std::size_t output);
    // The checks every call shares, then the descriptor of `elements` of `type`, rebuilt only
    // when they change (host-only work, no synchronisation).
    const tensor_descriptor& prepare(const char* operation, handle& h, data_type type,
                                     std::size_t elements, std::size_t reserve_size);

    gpu::detail::unique_handle<cudnnDropoutDescriptor_t, detail::dropout_descriptor_deleter>
        descriptor_;
    device_buffer<std::byte> states_;
    float probability_ = 0.0F;
    std::uint64_t seed_ = 0;
    tensor_descriptor data_ = tensor_descriptor::from_native_handle(nullptr);
    std::size_t described_elements_ = 0;
    data_type described_type_ = data_type::fp32;
    std::size_t described_reserve_bytes_ = 0;
};

} // namespace gpu::dnn
