// The shuffle of gpu::nn::shuffle_order, shared by the kernel (data.cu) and the host reference
// (data.cpp, gpu::nn::shuffled_index), and the launchers of data.cu with plain types only (as
// math_kernels.hpp). The callers check every argument first.
#pragma once

#include <cuda_runtime_api.h>

#include <stdint.h>

#if defined(__CUDACC__)
#define CUDAGAP_NN_HOST_DEVICE __host__ __device__
#else
#define CUDAGAP_NN_HOST_DEVICE
#endif

namespace gpu::nn::detail {

// SplitMix64's finaliser: a strong 64-bit mix (every input bit moves every output bit).
CUDAGAP_NN_HOST_DEVICE inline uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

// The shuffle's domain: 2^(2 * half_bits) >= count, so that a Feistel network on two halves
// of half_bits each is a bijection of it, and count fills more than a quarter of it (the walk
// below takes fewer than 4 rounds of the network on average).
CUDAGAP_NN_HOST_DEVICE inline int shuffle_half_bits(uint64_t count)
{
    int half = 1;
    while ((uint64_t{1} << (2 * half)) < count) {
        ++half;
    }
    return half;
}

// Position i of the shuffle of [0, count) keyed by (seed, epoch): four Feistel rounds, repeated
// while the value falls outside [0, count) (cycle walking keeps it a bijection of [0, count)).
CUDAGAP_NN_HOST_DEVICE inline uint32_t shuffle_at(uint64_t i, uint64_t count, uint64_t seed,
                                                  uint64_t epoch)
{
    const int half = shuffle_half_bits(count);
    const uint64_t mask = (uint64_t{1} << half) - 1;
    const uint64_t key = mix64(seed ^ mix64(epoch));
    uint64_t x = i;
    do {
        uint64_t left = x >> half;
        uint64_t right = x & mask;
        for (uint64_t round = 0; round < 4; ++round) {
            const uint64_t next = left ^ (mix64(right ^ mix64(key + round)) & mask);
            left = right;
            right = next;
        }
        x = (left << half) | right;
    } while (x >= count);
    return static_cast<uint32_t>(x);
}

namespace kernels {

// order[i] = shuffle_at(i, count, seed, epoch) for i in [0, count).
cudaError_t shuffle_order(uint32_t* order, uint64_t count, uint64_t seed, uint64_t epoch,
                          cudaStream_t stream);

// The batch *batch_number of the source into output (format 0 FP32, 2 FP16, 3 BF16, as
// gpu::element_type) and labels; then ++*batch_number (a second kernel, after the first).
cudaError_t gather_batch(const uint8_t* pixels, const uint8_t* labels, const uint32_t* order,
                         uint64_t count, uint64_t item_elements, long long batch, float mean,
                         float inv_std, int format, void* output, int32_t* out_labels,
                         uint32_t* batch_number, cudaStream_t stream);

} // namespace kernels

} // namespace gpu::nn::detail
