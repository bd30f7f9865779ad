// Random fills through cuRAND's Philox generator: uniform and normal values of every element
// type, any count and alignment, with actionable errors.
#include <gpu/blas/convert.hpp>
#include <gpu/blas/random.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/device.hpp>
#include <gpu/detail/unique_handle.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpu::blas {

namespace detail {

void curand_generator_deleter::operator()(curandGenerator_t generator) const noexcept
{
    gpu::detail::report_destroy_failure("curandDestroyGenerator",
                                        curandDestroyGenerator(generator));
}

} // namespace detail

random_generator::random_generator(std::uint64_t seed, stream_ref stream) : seed_(seed)
{
    curandGenerator_t raw = nullptr;
    GPU_CURAND_CHECK(curandCreateGenerator(&raw, CURAND_RNG_PSEUDO_PHILOX4_32_10));
    generator_.reset(raw);
    GPU_CURAND_CHECK(curandSetPseudoRandomGeneratorSeed(raw, seed));
    set_stream(stream);
}

random_generator::random_generator(const gpu::profile& profile, stream_ref stream)
    : random_generator(profile.seed.value_or(static_cast<std::uint64_t>(
                           std::chrono::high_resolution_clock::now().time_since_epoch().count())),
                       stream)
{}

random_generator::~random_generator()
{
    if (generator_) {
        // cuRAND frees the generator's state at destruction; queued fills may still use it.
        gpu::detail::report_destroy_failure("cudaStreamSynchronize before curandDestroyGenerator",
                                            cudaStreamSynchronize(stream_.get()));
    }
}

void random_generator::set_stream(stream_ref stream)
{
    if (!generator_) {
        gpu::detail::throw_empty_owner("gpu::blas::random_generator::set_stream",
                                       "gpu::blas::random_generator", "cuRAND generator");
    }
    GPU_CURAND_CHECK(curandSetStream(generator_.get(), stream.get()));
    stream_ = stream;
}

void random_generator::fill(detail::element_type type, void* data, std::size_t count, bool normal,
                            double a, double b)
{
    const char* function =
        normal ? "gpu::blas::random_generator::normal" : "gpu::blas::random_generator::uniform";
    if (!generator_) {
        gpu::detail::throw_empty_owner(function, "gpu::blas::random_generator", "cuRAND generator");
    }
    const bool finite = std::isfinite(a) && std::isfinite(b);
    GPU_EXPECTS(!normal || (finite && b >= 0.0), std::invalid_argument, function, ": mean ", a,
                ", stddev ", b, " (the deviation must be finite and not negative)");
    GPU_EXPECTS(normal || (finite && a < b), std::invalid_argument, function, ": range (", a, ", ",
                b, "] (the bounds must be finite and low < high)");
    if (count == 0) {
        return;
    }
    GPU_EXPECTS(data != nullptr, std::invalid_argument, function, ": null data for ", count,
                " elements");
    const curandGenerator_t raw = generator_.get();
    const bool wide = type == detail::element_type::fp64;
    const std::size_t element = wide ? sizeof(double) : sizeof(float);
    // cuRAND writes FP32 or FP64 values; normal values come in pairs (Box-Muller), so an odd
    // count or a pointer not aligned to a pair goes through a temporary.
    const bool direct = (type == detail::element_type::fp32 || wide) &&
                        (!normal || (count % 2 == 0 &&
                                     reinterpret_cast<std::uintptr_t>(data) % (2 * element) == 0));
    const std::size_t drawn = normal ? count + count % 2 : count;
    device_buffer<double> wide_scratch(direct || !wide ? 0 : drawn, stream_);
    device_buffer<float> scratch(direct || wide ? 0 : drawn, stream_);
    void* target = direct ? data
                   : wide ? static_cast<void*>(wide_scratch.data())
                          : static_cast<void*>(scratch.data());
    if (normal) {
        gpu::detail::check(
            wide ? curandGenerateNormalDouble(raw, static_cast<double*>(target), drawn, a, b)
                 : curandGenerateNormal(raw, static_cast<float*>(target), drawn,
                                        static_cast<float>(a), static_cast<float>(b)),
            wide ? "curandGenerateNormalDouble" : "curandGenerateNormal");
    } else {
        gpu::detail::check(
            wide ? curandGenerateUniformDouble(raw, static_cast<double*>(target), drawn)
                 : curandGenerateUniform(raw, static_cast<float*>(target), drawn),
            wide ? "curandGenerateUniformDouble" : "curandGenerateUniform");
    }
    // Uniform values are in (0, 1]: map them to (low, high]. Normal values are final.
    const double scale = normal ? 1.0 : b - a;
    const double shift = normal ? 0.0 : a;
    if (!direct || scale != 1.0 || shift != 0.0) {
        detail::convert(wide ? detail::element_type::fp64 : detail::element_type::fp32, target,
                        type, data, count, scale, shift, stream_);
    }
}

} // namespace gpu::blas
