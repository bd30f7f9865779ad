/// @file random.hpp
/// @brief Random fills of device memory through cuRAND, seeded and reproducible: uniform and
/// normal values of any of the blas wrapper's element types, for demos, tests and benchmarks.
///
/// @code
/// gpu::device_buffer<__half> a(n * n, stream);
/// gpu::blas::fill_uniform(a, 42);                  // same seed, same values; on a's stream
/// gpu::blas::random_generator rng(gpu::profile::testing(), stream);   // the profile's seed (42)
/// rng.normal(b, 0.0, 0.02);                         // consecutive fills continue the sequence
/// @endcode
///
/// The generator is Philox4x32-10 (as in PyTorch): a seed and the number of values drawn so far
/// fix every value, on any GPU. FP16 and BF16 fills draw FP32 values and round them.
#pragma once

#include <gpu/blas/error.hpp>
#include <gpu/blas/types.hpp>
#include <gpu/detail/unique_handle.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include <curand.h>

#include <cstddef>
#include <cstdint>

namespace gpu::blas {

namespace detail {

/// @brief Destroys a cuRAND generator; failures are reported, never thrown.
struct curand_generator_deleter {
    void operator()(curandGenerator_t generator) const noexcept;
};

} // namespace detail

/// @brief An owning cuRAND generator (Philox4x32-10) with its seed and stream. Move-only.
///
/// Each fill continues the sequence: two generators with the same seed that make the same fills
/// in the same order produce the same values.
///
/// Like a `gpu::blas::handle`, the generator has a stream of its own (set when it is made, or
/// with `set_stream`): every fill runs there, also a fill of a buffer that lives on another
/// stream, because cuRAND launches a generator's work on the one stream set with
/// `curandSetStream`. Make the generator on the
/// buffers' stream (`random_generator rng(seed, buffer.stream())`), or order the streams
/// yourself; `fill_uniform` and `fill_normal` use the buffer's stream.
class random_generator {
public:
    /// @brief Creates a generator seeded with @p seed whose fills run on @p stream (required:
    /// fills are stream-ordered work).
    /// @throws gpu::blas::random_error when cuRAND cannot initialise (no GPU: the hint says why)
    explicit random_generator(std::uint64_t seed, stream_ref stream);

    /// @brief Creates a generator with the profile's seed, or one from the clock when the
    /// profile has none (`seed()` tells which).
    /// @throws gpu::blas::random_error when cuRAND cannot initialise
    explicit random_generator(const gpu::profile& profile, stream_ref stream);

    /// @brief The seed.
    [[nodiscard]] std::uint64_t seed() const noexcept { return seed_; }

    /// @brief The stream fills run on.
    [[nodiscard]] stream_ref stream() const noexcept { return stream_; }

    /// @brief Makes later fills run on @p stream.
    void set_stream(stream_ref stream);

    /// @brief The raw generator, still owned (null after a move).
    [[nodiscard]] curandGenerator_t get() const noexcept { return generator_.get(); }

    /// @brief Fills @p count elements at @p data (device memory) with values uniform in
    /// (@p low, @p high]; after rounding to the element type the bounds themselves can occur,
    /// in FP32 too (cuRAND's smallest values, about 1e-10, vanish next to `low = -1`).
    /// @throws std::invalid_argument when `low >= high`, either is not finite, or @p data is
    /// null with a non-zero count
    template <blas_element T>
    void uniform(T* data, std::size_t count, double low = -1.0, double high = 1.0)
    {
        fill(detail::element_type_of<T>, data, count, false, low, high);
    }

    /// @brief Fills a device buffer with values uniform in (@p low, @p high], on the
    /// generator's stream (see the class).
    template <blas_element T>
    void uniform(device_buffer<T>& buffer, double low = -1.0, double high = 1.0)
    {
        uniform(buffer.data(), buffer.size(), low, high);
    }

    /// @brief Fills @p count elements at @p data (device memory) with normally distributed
    /// values (any count, any alignment).
    /// @throws std::invalid_argument when @p stddev is negative or a value is not finite, or
    /// @p data is null with a non-zero count
    template <blas_element T>
    void normal(T* data, std::size_t count, double mean = 0.0, double stddev = 1.0)
    {
        fill(detail::element_type_of<T>, data, count, true, mean, stddev);
    }

    /// @brief Fills a device buffer with normally distributed values, on the generator's stream
    /// (see the class).
    template <blas_element T>
    void normal(device_buffer<T>& buffer, double mean = 0.0, double stddev = 1.0)
    {
        normal(buffer.data(), buffer.size(), mean, stddev);
    }

    /// @brief Moving leaves the source without a generator.
    /// @post `other.get() == nullptr`
    random_generator(random_generator&& other) noexcept = default;
    /// @brief Destroys the owned generator and takes @p other's.
    /// @post `other.get() == nullptr`
    random_generator& operator=(random_generator&& other) noexcept = default;
    random_generator(const random_generator&) = delete;
    random_generator& operator=(const random_generator&) = delete;
    /// @brief Waits for the fills queued on the generator's stream (cuRAND frees the state they
    /// use), then destroys the generator.
    ~random_generator();

private:
    void fill(detail::element_type type, void* data, std::size_t count, bool normal, double a,
              double b);

    gpu::detail::unique_handle<curandGenerator_t, detail::curand_generator_deleter> generator_;
    std::uint64_t seed_ = 0;
    stream_ref stream_ = legacy_default_stream; // every constructor sets the caller's stream
};

/// @brief Fills a device buffer with values uniform in (@p low, @p high] from a fresh generator
/// seeded with @p seed, on @p stream: the same seed gives the same values. Returns when they
/// are written. The caller orders the buffer's own stream with @p stream.
/// @throws gpu::blas::random_error when cuRAND cannot initialise
template <blas_element T>
void fill_uniform(device_buffer<T>& buffer, std::uint64_t seed, double low, double high,
                  stream_ref stream)
{
    random_generator(seed, stream).uniform(buffer, low, high);
}

/// @brief Fills a device buffer with values uniform in (@p low, @p high] from a fresh generator
/// seeded with @p seed, on the buffer's stream (after the work already queued there, such as
/// its allocation): the same seed gives the same values. Returns when they are written.
/// @throws gpu::blas::random_error when cuRAND cannot initialise
template <blas_element T>
void fill_uniform(device_buffer<T>& buffer, std::uint64_t seed, double low = -1.0,
                  double high = 1.0)
{
    fill_uniform(buffer, seed, low, high, buffer.stream());
}

/// @brief Fills a device buffer with normally distributed values from a fresh generator seeded
/// with @p seed, on @p stream: the same seed gives the same values. Returns when they are
/// written. The caller orders the buffer's own stream with @p stream.
/// @throws gpu::blas::random_error when cuRAND cannot initialise
template <blas_element T>
void fill_normal(device_buffer<T>& buffer, std::uint64_t seed, double mean, double stddev,
                 stream_ref stream)
{
    random_generator(seed, stream).normal(buffer, mean, stddev);
}

/// @brief Fills a device buffer with normally distributed values from a fresh generator seeded
/// with @p seed, on the buffer's stream: the same seed gives the same values. Returns when they
/// are written.
/// @throws gpu::blas::random_error when cuRAND cannot initialise
template <blas_element T>
void fill_normal(device_buffer<T>& buffer, std::uint64_t seed, double mean = 0.0,
                 double stddev = 1.0)
{
    fill_normal(buffer, seed, mean, stddev, buffer.stream());
}

} // namespace gpu::blas
