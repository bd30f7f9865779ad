// cudagap-custom-kernel: your own kernel, launched from plain C++ with cudagap. It launches the
// axpy kernel of kernels.cu on a gpu::stream over gpu::device_buffers, with the configuration
// that fills the device (gpu::filling_config), times it (gpu::benchmark), checks it against a
// CPU reference, then sums the result with CUB on the same stream (gpu::as_cccl) and checks that.
// Copy this folder and replace the kernels with yours.
//
//   cudagap-custom-kernel [--profile development|production|testing] [--elements N]
//
// Exit status: 0 when the results are correct (or there is no GPU to run on), 1 when a check
// fails, 2 for a bad command line.
#include <gpu/cccl_stream.hpp>
#include <gpu/device.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/error.hpp>
#include <gpu/launch.hpp>
#include <gpu/nvtx.hpp>
#include <gpu/occupancy.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>
#include <gpu/timing.hpp>

#include "kernels.hpp"

#include <cmath>
#include <cstdio>
#include <exception>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace {

struct options {
    std::string profile_name;
    std::size_t elements = std::size_t{1} << 24;
};

options parse(int argc, char* argv[])
{
    options opts;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if ((arg == "--profile" || arg == "--elements") && i + 1 < argc) {
            const std::string value = argv[++i];
            if (arg == "--profile") {
                opts.profile_name = value;
            } else {
                opts.elements = std::stoull(value);
            }
        } else {
            throw std::invalid_argument("unknown option '" + std::string(arg) +
                                        "'; usage: cudagap-custom-kernel [--profile NAME] "
                                        "[--elements N]");
        }
    }
    if (opts.elements == 0) {
        throw std::invalid_argument("--elements 0: give at least one element");
    }
    return opts;
}

std::vector<float> random_values(std::size_t n, unsigned seed)
{
    std::mt19937 generator(seed);
    std::uniform_real_distribution<float> values(-1.0f, 1.0f);
    std::vector<float> out(n);
    for (float& v : out) {
        v = values(generator);
    }
    return out;
}

/// ‖out − ref‖ / ‖ref‖ against a float64 reference of a * x + y.
double axpy_error(float a, const std::vector<float>& x, const std::vector<float>& y,
                  const std::vector<float>& out)
{
    double difference = 0.0;
    double norm = 0.0;
    for (std::size_t i = 0; i < x.size(); ++i) {
        const double expected = static_cast<double>(a) * x[i] + y[i];
        difference += (out[i] - expected) * (out[i] - expected);
        norm += expected * expected;
    }
    return std::sqrt(difference) / std::sqrt(norm);
}

int run(const options& opts)
{
    const gpu::profile settings = gpu::select_profile(opts.profile_name);
    gpu::nvtx::apply(settings); // ranges for Nsight Systems when the profile asks for them
    const gpu::device dev = gpu::device::current();
    const gpu::stream stream(gpu::stream_flags::non_blocking);
    const std::size_t n = opts.elements;
    const float a = 2.5f;
    const std::vector<float> x = random_values(n, 1);
    const std::vector<float> y = random_values(n, 2);
    const auto dx = gpu::device_buffer<float>::from_host(x, stream);
    const auto dy = gpu::device_buffer<float>::from_host(y, stream);
    gpu::device_buffer<float> out(n, stream);

    const gpu::block_size_choice choice = gpu::best_block_size(dev, kernels::axpy());
    const gpu::launch_config config = gpu::filling_config(dev, kernels::axpy(), n);
    std::printf("device %d: %s\n", dev.id(), dev.properties().name.c_str());
    std::printf("occupancy: block of %d threads, %d blocks per multiprocessor; launch: %s\n",
                choice.block_size, choice.blocks_per_multiprocessor, config.to_string().c_str());

    const gpu::statistics stats = gpu::benchmark(stream, [&] {
        const gpu::nvtx::range range("axpy", gpu::nvtx::colours::user);
        gpu::launch(stream, config, kernels::axpy(), a, dx.data(), dy.data(), out.data(), n);
    });
    const double bytes = 3.0 * static_cast<double>(n) * sizeof(float);
    std::printf("axpy of %zu elements: %.3f ms (spread %.1f%%), %.1f GB/s\n", n, stats.median_ms,
                100 * stats.relative_spread(), gpu::gbps(bytes, stats.median_ms));

    const std::vector<float> result = out.to_host();
    const double error = axpy_error(a, x, y, result);
    const bool axpy_ok = error < 1e-5;
    std::printf("check: axpy %s: relative error %.1e against a float64 reference (bound 1e-05)\n",
                axpy_ok ? "correct" : "WRONG", error);

    // CCCL takes cudagap's stream: CUB sums the result on the same stream.
    gpu::device_buffer<float> total(1, stream);
    GPU_CUDA_CHECK(kernels::sum(gpu::as_cccl(stream), out.data(), total.data(), n));
    const float gpu_sum = total.to_host()[0];
    double cpu_sum = 0.0;
    for (float v : result) {
        cpu_sum += v;
    }
    double magnitude = 0.0;
    for (float v : result) {
        magnitude += std::fabs(v);
    }
    const double sum_error = std::fabs(gpu_sum - cpu_sum) / magnitude;
    const bool sum_ok = sum_error < 1e-5;
    std::printf("check: CUB sum %s: %.6g against %.6g, error %.1e of the sum of magnitudes "
                "(bound 1e-05)\n",
                sum_ok ? "correct" : "WRONG", gpu_sum, cpu_sum, sum_error);
    return axpy_ok && sum_ok ? 0 : 1;
}

} // namespace

int main(int argc, char* argv[])
{
    options opts;
    try {
        opts = parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-custom-kernel: %s\n", e.what());
        return 2;
    }
    if (!gpu::is_available()) {
        std::printf("cudagap-custom-kernel: no usable GPU, so the kernel is not run (it built: "
                    "kernels.cu compiled, main.cpp launches it through gpu::launch).\n"
                    "  why: %s\n"
                    "  on a GPU host this launches axpy over %zu elements with an occupancy-"
                    "derived configuration, times it and checks it against a CPU reference.\n",
                    gpu::unavailable_reason().c_str(), opts.elements);
        return 0;
    }
    try {
        return run(opts);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-custom-kernel: %s\n", e.what());
        return 1;
    }
}
