// Random fills through cuRAND's Philox generator: uniform and normal values of every element
// type, any count and alignment, with actionable errors.
#include <gpu/blas/convert.hpp>
#include <gpu/blas/random.hpp>
#include <gpu/device.hpp>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace gpu::blas {

namespace {

void check_random(curandStatus_t status, const char* api)
{
    if (status != CURAND_STATUS_SUCCESS) [[unlikely]] {
        detail::throw_random_error(status, api);
    }
}

// cuRAND's own descriptions of its statuses (from curand.h; cuRAND has no function for them).
std::string_view random_status_message(curandStatus_t status) noexcept
{
    switch (status) {
    case CURAND_STATUS_SUCCESS: return "no errors";
    case CURAND_STATUS_VERSION_MISMATCH: return "header file and linked library version do not match";
    case CURAND_STATUS_NOT_INITIALIZED: return "generator not initialized";
    case CURAND_STATUS_ALLOCATION_FAILED: return "memory allocation failed";
    case CURAND_STATUS_TYPE_ERROR: return "generator is wrong type";
    case CURAND_STATUS_OUT_OF_RANGE: return "argument out of range";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE: return "length requested is not a multiple of dimension";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED: return "GPU does not have double precision required by MRG32k3a";
    case CURAND_STATUS_LAUNCH_FAILURE: return "kernel launch failure";
    case CURAND_STATUS_PREEXISTING_FAILURE: return "preexisting failure on library entry";
    case CURAND_STATUS_INITIALIZATION_FAILED: return "initialization of CUDA failed";
    case CURAND_STATUS_ARCH_MISMATCH: return "architecture mismatch, GPU does not support requested feature";
    case CURAND_STATUS_INTERNAL_ERROR: return "internal library error";
    }
    return "unknown cuRAND status";
}

std::string random_hint(curandStatus_t status)
{
    switch (status) {
    case CURAND_STATUS_INITIALIZATION_FAILED:
        if (!gpu::is_available()) {
            return "cuRAND could not initialise CUDA because no GPU is usable: " + gpu::unavailable_reason();
        }
        return "cuRAND could not initialise CUDA on a working GPU: check the driver with cudagap-doctor";
    case CURAND_STATUS_ALLOCATION_FAILED:
        return "cuRAND could not allocate memory for the generator's state: free device memory";
    case CURAND_STATUS_LAUNCH_FAILURE:
    case CURAND_STATUS_PREEXISTING_FAILURE:
        return "a kernel failed (this one, or an earlier one whose error was not checked): run with "
               "CUDA_LAUNCH_BLOCKING=1 or under `compute-sanitizer` to find it";
    case CURAND_STATUS_VERSION_MISMATCH:
        return "the cuRAND library loaded is not the one cudagap was compiled against: check "
               "LD_LIBRARY_PATH, or run cudagap-doctor";
    case CURAND_STATUS_ARCH_MISMATCH:
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED:
        return "this GPU lacks a feature the generator needs";
    default:
        return {};
    }
}

} // namespace

std::string random_status_name(curandStatus_t status)
{
    switch (status) {
    case CURAND_STATUS_SUCCESS:
        return "CURAND_STATUS_SUCCESS";
    case CURAND_STATUS_VERSION_MISMATCH:
        return "CURAND_STATUS_VERSION_MISMATCH";
    case CURAND_STATUS_NOT_INITIALIZED:
        return "CURAND_STATUS_NOT_INITIALIZED";
    case CURAND_STATUS_ALLOCATION_FAILED:
        return "CURAND_STATUS_ALLOCATION_FAILED";
    case CURAND_STATUS_TYPE_ERROR:
        return "CURAND_STATUS_TYPE_ERROR";
    case CURAND_STATUS_OUT_OF_RANGE:
        return "CURAND_STATUS_OUT_OF_RANGE";
    case CURAND_STATUS_LENGTH_NOT_MULTIPLE:
        return "CURAND_STATUS_LENGTH_NOT_MULTIPLE";
    case CURAND_STATUS_DOUBLE_PRECISION_REQUIRED:
        return "CURAND_STATUS_DOUBLE_PRECISION_REQUIRED";
    case CURAND_STATUS_LAUNCH_FAILURE:
        return "CURAND_STATUS_LAUNCH_FAILURE";
    case CURAND_STATUS_PREEXISTING_FAILURE:
        return "CURAND_STATUS_PREEXISTING_FAILURE";
    case CURAND_STATUS_INITIALIZATION_FAILED:
        return "CURAND_STATUS_INITIALIZATION_FAILED";
    case CURAND_STATUS_ARCH_MISMATCH:
        return "CURAND_STATUS_ARCH_MISMATCH";
    case CURAND_STATUS_INTERNAL_ERROR:
        return "CURAND_STATUS_INTERNAL_ERROR";
    }
    return "curandStatus(" + std::to_string(static_cast<int>(status)) + ")";
}

namespace detail {

void throw_random_error(curandStatus_t status, const char* api)
{
    int device = -1;
    if (cudaGetDevice(&device) != cudaSuccess) {
        static_cast<void>(cudaGetLastError());
        device = -1;
    }
    throw random_error(api, random_status_name(status), static_cast<long long>(status),
                       std::string(random_status_message(status)), random_hint(status), device,
                       std::source_location::current());
}

void curand_generator_deleter::operator()(curandGenerator_t generator) const noexcept
{
    const curandStatus_t status = curandDestroyGenerator(generator);
    if (status != CURAND_STATUS_SUCCESS) {
        gpu::detail::report_destroy_failure("curandDestroyGenerator", "cuRAND status",
                                            static_cast<long long>(status));
    }
}

} // namespace detail

random_generator::random_generator(std::uint64_t seed, stream_ref stream) : seed_(seed)
{
    curandGenerator_t raw = nullptr;
    check_random(curandCreateGenerator(&raw, CURAND_RNG_PSEUDO_PHILOX4_32_10),
                 "curandCreateGenerator(&raw, CURAND_RNG_PSEUDO_PHILOX4_32_10)");
    generator_.reset(raw);
    check_random(curandSetPseudoRandomGeneratorSeed(raw, seed), "curandSetPseudoRandomGeneratorSeed");
    set_stream(stream);
}

random_generator::random_generator(const gpu::profile& profile, stream_ref stream)
    : random_generator(profile.seed.value_or(static_cast<std::uint64_t>(
                           std::chrono::high_resolution_clock::now().time_since_epoch().count())),
                       stream)
{
}

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
        throw std::logic_error("gpu::blas::random_generator::set_stream: the generator is empty (moved from)");
    }
    check_random(curandSetStream(generator_.get(), stream.get()), "curandSetStream");
    stream_ = stream;
}

void random_generator::fill(detail::element_type type, void* data, std::size_t count, bool normal,
                            double a, double b)
{
    const char* function = normal ? "gpu::blas::random_generator::normal" : "gpu::blas::random_generator::uniform";
    if (!generator_) {
        throw std::logic_error(std::string(function) + ": the generator is empty (moved from)");
    }
    if (!std::isfinite(a) || !std::isfinite(b) || (normal ? b < 0.0 : a >= b)) {
        throw std::invalid_argument(std::string(function) + ": " +
                                    (normal ? "mean " + std::to_string(a) + ", stddev " + std::to_string(b) +
                                                  " (the deviation must be finite and not negative)"
                                            : "range (" + std::to_string(a) + ", " + std::to_string(b) +
                                                  "] (the bounds must be finite and low < high)"));
    }
    if (count == 0) {
        return;
    }
    if (data == nullptr) {
        throw std::invalid_argument(std::string(function) + ": null data for " + std::to_string(count) +
                                    " elements");
    }
    const curandGenerator_t raw = generator_.get();
    const bool wide = type == detail::element_type::fp64;
    const std::size_t element = wide ? sizeof(double) : sizeof(float);
    // cuRAND writes FP32 or FP64 values; normal values come in pairs (Box-Muller), so an odd
    // count or a pointer not aligned to a pair goes through a temporary.
    const bool direct = (type == detail::element_type::fp32 || wide) &&
                        (!normal || (count % 2 == 0 && reinterpret_cast<std::uintptr_t>(data) % (2 * element) == 0));
    const std::size_t drawn = normal ? count + count % 2 : count;
    device_buffer<double> wide_scratch(direct || !wide ? 0 : drawn, stream_);
    device_buffer<float> scratch(direct || wide ? 0 : drawn, stream_);
    void* target = direct ? data : wide ? static_cast<void*>(wide_scratch.data()) : static_cast<void*>(scratch.data());
    if (normal) {
        check_random(wide ? curandGenerateNormalDouble(raw, static_cast<double*>(target), drawn, a, b)
                          : curandGenerateNormal(raw, static_cast<float*>(target), drawn,
                                                 static_cast<float>(a), static_cast<float>(b)),
                     wide ? "curandGenerateNormalDouble" : "curandGenerateNormal");
    } else {
        check_random(wide ? curandGenerateUniformDouble(raw, static_cast<double*>(target), drawn)
                          : curandGenerateUniform(raw, static_cast<float*>(target), drawn),
                     wide ? "curandGenerateUniformDouble" : "curandGenerateUniform");
    }
    // Uniform values are in (0, 1]: map them to (low, high]. Normal values are final.
    const double scale = normal ? 1.0 : b - a;
    const double shift = normal ? 0.0 : a;
    if (!direct || scale != 1.0 || shift != 0.0) {
        detail::convert(wide ? detail::element_type::fp64 : detail::element_type::fp32, target, type, data,
                        count, scale, shift, stream_);
    }
}

} // namespace gpu::blas
