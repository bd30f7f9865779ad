// gpu::nn::shuffled_index, shuffle_order and gather_batch: argument checks before any launch,
// and the launches (data.cu). The host reference shares the shuffle with the kernel
// (data_kernels.hpp), so the tests compare the device's order with the same formula.
#include <gpu/detail/expects.hpp>
#include <gpu/error.hpp>
#include <gpu/nn/data.hpp>

#include "data_kernels.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace gpu::nn {

namespace {

constexpr std::uint64_t max_count = std::numeric_limits<std::uint32_t>::max();

void check_count(const char* function, std::uint64_t count)
{
    GPU_EXPECTS(count >= 1 && count <= max_count, std::invalid_argument, function, ": count ",
                count, " is not in [1, ", max_count, "]");
}

} // namespace

std::uint32_t shuffled_index(std::uint64_t i, std::uint64_t count, std::uint64_t seed,
                             std::uint64_t epoch)
{
    check_count("gpu::nn::shuffled_index", count);
    GPU_EXPECTS(i < count, std::invalid_argument, "gpu::nn::shuffled_index: position ", i,
                " is not below the count ", count);
    return detail::shuffle_at(i, count, seed, epoch);
}

void shuffle_order(std::uint32_t* order, std::uint64_t count, std::uint64_t seed,
                   std::uint64_t epoch, stream_ref stream)
{
    constexpr const char* function = "gpu::nn::shuffle_order";
    check_count(function, count);
    GPU_EXPECTS(order != nullptr, std::invalid_argument, function, ": order is null");
    GPU_CUDA_CHECK(detail::kernels::shuffle_order(order, count, seed, epoch, stream.get()));
}

void gather_batch(const batch_source& source, std::int64_t batch, const normalization& norm,
                  element_type type, void* output, std::int32_t* labels,
                  std::uint32_t* batch_number, stream_ref stream)
{
    constexpr const char* function = "gpu::nn::gather_batch";
    check_count(function, source.count);
    constexpr std::int64_t max_batch = std::numeric_limits<std::int32_t>::max();
    GPU_EXPECTS(batch >= 1 && batch <= max_batch, std::invalid_argument, function, ": batch ",
                batch, " is not in [1, ", max_batch, "]");
    GPU_EXPECTS(source.item_elements >= 1 &&
                    source.item_elements <=
                        (std::uint64_t{1} << 40) / static_cast<std::uint64_t>(batch),
                std::invalid_argument, function, ": item_elements ", source.item_elements,
                " is 0 or makes a batch of ", batch, " above 2^40 elements");
    GPU_EXPECTS(type == element_type::fp32 || type == element_type::fp16 ||
                    type == element_type::bf16,
                std::invalid_argument, function, ": a batch of ", std::string(to_string(type)),
                "; FP32, FP16 or BF16 are taken");
    GPU_EXPECTS(std::isfinite(norm.std) && norm.std > 0.0F && std::isfinite(norm.mean),
                std::invalid_argument, function, ": normalization mean ", norm.mean, " std ",
                norm.std, " (the std must be positive and finite, the mean finite)");
    std::string nulls;
    for (const auto& [name, pointer] :
         {std::pair<const char*, const void*>{"pixels", source.pixels},
          {"labels", source.labels},
          {"output", output},
          {"out labels", labels},
          {"batch_number", batch_number}}) {
        nulls += pointer == nullptr ? std::string(nulls.empty() ? "" : ", ") + name : "";
    }
    GPU_EXPECTS(nulls.empty(), std::invalid_argument, function, ": null pointers: ", nulls);
    const int format = type == element_type::fp16 ? 2 : (type == element_type::bf16 ? 3 : 0);
    GPU_CUDA_CHECK(detail::kernels::gather_batch(
        source.pixels, source.labels, source.order, source.count, source.item_elements, batch,
        norm.mean, 1.0F / norm.std, format, output, labels, batch_number, stream.get()));
}

} // namespace gpu::nn
