/// @file data.hpp
/// @brief A data set on the device, batched on the device: a shuffle per epoch drawn from a
/// seed (`shuffle_order`), and the gather of a normalised batch in the compute type with its
/// int32 labels (`gather_batch`), which reads the batch number from device memory and advances
/// it, so that a captured training step replays over successive batches with no host work.
///
/// @code
/// // once: the whole set on the device (u8 pixels and labels), an order and a batch counter
/// gpu::nn::shuffle_order(order.data(), count, seed, epoch, stream);   // each epoch
/// batch_number.fill_zero_async(stream);
/// // each step (inside the captured work): batch i of the epoch, then the counter is i + 1
/// gpu::nn::gather_batch({pixels.data(), labels.data(), order.data(), count, 28 * 28}, 64,
///                       {0.2860F, 0.3530F}, gpu::element_type::fp16, x.data(), y.data(),
///                       batch_number.data(), stream);
/// @endcode
///
/// The permutation is a four-round Feistel network on the next power of four at or above the
/// count, walked until it lands inside the range (a bijection of [0, count)), keyed by the seed
/// and the epoch: the same (seed, epoch) gives the same order on every GPU and on the host
/// (`shuffled_index`, which the tests compare with), and it needs no sort and no scratch memory.
#pragma once

#include <gpu/element_type.hpp>
#include <gpu/stream.hpp>

#include <cstdint>

namespace gpu::nn {

/// @brief Where a batch comes from: a data set of u8 items and u8 labels on the device, and the
/// order to read it in. Plain data; pointers to device memory.
struct batch_source {
    const std::uint8_t* pixels = nullptr; ///< `count * item_elements` bytes, item by item
    const std::uint8_t* labels = nullptr; ///< `count` labels
    const std::uint32_t* order = nullptr; ///< `count` item numbers (a shuffle), or null: in order
    std::uint64_t count = 0;              ///< the items, in [1, 2^32 − 1]
    std::uint64_t item_elements = 0;      ///< elements per item (28 · 28 for MNIST), at least 1
};

/// @brief `(pixel / 255 − mean) / std`, PyTorch's `ToTensor()` then `Normalize(mean, std)`.
struct normalization {
    float mean = 0.0F; ///< subtracted after scaling to [0, 1]
    float std = 1.0F;  ///< divided by after subtracting the mean; positive and finite
};

/// @brief Item number @p i of the shuffle of [0, @p count) for (@p seed, @p epoch), computed on
/// the host: what `shuffle_order` writes at position @p i.
/// @throws std::invalid_argument when @p count is 0 or above 2^32 − 1, or @p i is not below it
[[nodiscard]] std::uint32_t shuffled_index(std::uint64_t i, std::uint64_t count, std::uint64_t seed,
                                           std::uint64_t epoch);

/// @brief Writes the shuffle of [0, @p count) for (@p seed, @p epoch) to @p order (device
/// memory, @p count values): a permutation, each item once. Capturable.
/// @throws std::invalid_argument when @p count is 0 or above 2^32 − 1, or @p order is null
/// @throws gpu::cuda_error when the kernel cannot be launched
void shuffle_order(std::uint32_t* order, std::uint64_t count, std::uint64_t seed,
                   std::uint64_t epoch, stream_ref stream);

/// @brief Builds batch `*batch_number` of @p source: row r is item
/// `order[(*batch_number · batch + r) mod count]` (wrapping to the start: the last batch of an
/// epoch is completed from its first items), normalised by @p norm into @p output
/// (`batch · item_elements` values of @p type) with its label into @p labels (int32); then adds
/// 1 to `*batch_number`. Reads and writes only device memory, so a captured step that calls it
/// reads a new batch at every replay. Capturable.
/// @param source the data set and its order
/// @param batch rows, in [1, 2^31 − 1]
/// @param norm the normalisation
/// @param type FP32, FP16 or BF16
/// @param output device memory for the batch
/// @param labels device memory for @p batch labels
/// @param batch_number a device counter, read and advanced
/// @param stream where the kernels run
/// @throws std::invalid_argument for a null pointer, a count or size out of range, a type other
/// than FP32, FP16 and BF16, or a std that is not positive and finite (each named)
/// @throws gpu::cuda_error when a kernel cannot be launched
void gather_batch(const batch_source& source, std::int64_t batch, const normalization& norm,
                  element_type type, void* output, std::int32_t* labels,
                  std::uint32_t* batch_number, stream_ref stream);

} // namespace gpu::nn
