// cudagap-profiles: the three configuration files of docs/profiles.md (cuda_dev_config.py,
// cuda_prod_config.py, cuda_test_config.py) as gpu::profile presets, and what each changes.
//
// For every preset (or the one chosen with --profile or CUDAGAP_PROFILE) it prints the
// settings as [DEV], [PROD] and [TEST] lines, then their effect: the math mode
// and atomics a cuBLAS handle reads back, the search policy a cuDNN convolution plan makes of
// the profile's benchmark and deterministic switches and the algorithm it gets, what happens to a NaN in a GEMM's input, and whether random fills repeat. Without a
// GPU it prints the settings that would apply.
#include <gpu/blas/gemm.hpp>
#include <gpu/blas/handle.hpp>
#include <gpu/blas/numerics.hpp>
#include <gpu/blas/random.hpp>
#include <gpu/gpu.hpp>
#include <gpu/json.hpp>
#if CUDAGAP_PROFILES_HAS_DNN
#include <gpu/dnn/convolution.hpp>
#include <gpu/dnn/handle.hpp>
#endif

#include <cstdio>
#include <iostream>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace {

constexpr const char* usage =
    R"(usage: cudagap-profiles [--profile development|production|testing] [--json] [--help]

Prints the development, production and testing profiles as cudagap presets and shows what each
changes in cuBLAS and cuDNN (on a GPU; without one, the settings that would apply).

  --profile NAME   only this preset (also: CUDAGAP_PROFILE=NAME in the environment)
  --json           print the report as one JSON object
  --help           print this text
)";

// Each line of the report, printed with the preset's tag (as the Python files do) and kept for
// --json.
struct report {
    std::string tag;
    bool quiet = false;
    void line(const std::string& text) const
    {
        if (!quiet) {
            std::printf("[%s] %s\n", tag.c_str(), text.c_str());
        }
    }
};

nlohmann::json blas_effect(const gpu::profile& p, const report& out)
{
    const gpu::blas::handle_options wanted = gpu::blas::handle_options::from_profile(p);
    nlohmann::json j = {{"math", std::string(gpu::blas::to_string(wanted.math))},
                        {"atomics", std::string(gpu::blas::to_string(wanted.atomics))},
                        {"synchronous_checks", wanted.synchronous_checks},
                        {"check_numerics", wanted.check_numerics},
                        {"read_back", false}};
    if (!gpu::is_available()) {
        out.line("cuBLAS handle would get: math mode " + j["math"].get<std::string>() +
                 ", atomics " + j["atomics"].get<std::string>() + " (no GPU to create one)");
        return j;
    }
    const gpu::stream stream;
    const gpu::blas::handle h(p, stream);
    j["math"] = std::string(gpu::blas::to_string(h.math()));
    j["atomics"] = std::string(gpu::blas::to_string(h.atomics()));
    j["read_back"] = true;
    out.line("cuBLAS handle: math mode " + j["math"].get<std::string>() + ", atomics " +
             j["atomics"].get<std::string>() + " (read back from cuBLAS), FP32 GEMMs compute in " +
             std::string(gpu::blas::compute_type_name<float>(h.math())));
    return j;
}

// A GEMM whose input holds one NaN: the development profile's check stops it at the call; the
// others let the NaN spread through C, as PyTorch does without anomaly detection.
nlohmann::json anomaly_effect(const gpu::profile& p, const report& out)
{
    if (!gpu::is_available()) {
        out.line(std::string("NaN/Inf check of outputs: ") + (p.check_numerics ? "on" : "off") +
                 " (no GPU to show it on)");
        return nullptr;
    }
    constexpr std::int64_t n = 64;
    std::vector<float> host(n * n, 0.5F);
    host[7] = std::numeric_limits<float>::quiet_NaN();
    gpu::stream stream;
    gpu::blas::handle h(p, stream);
    const auto a = gpu::device_buffer<float>::from_host(host, stream);
    gpu::device_buffer<float> c(n * n, stream);
    const auto view = [&](auto& buffer) { return gpu::matrix::row_major(buffer.data(), n, n); };
    try {
        gpu::blas::gemm(h, view(a), view(a), view(c));
        stream.synchronize();
        const gpu::non_finite_report found = gpu::blas::check_finite(c, stream);
        out.line("a NaN in a GEMM's input went unnoticed: " + found.to_string() + " in C");
        return {{"caught", false}, {"message", found.to_string()}};
    } catch (const gpu::numerics_error& e) {
        out.line(std::string("a NaN in a GEMM's input was caught at the call: ") + e.what());
        return {{"caught", true}, {"message", e.what()}};
    }
}

// The testing profile fixes the seed: two generators made from it draw the same values.
nlohmann::json seed_effect(const gpu::profile& p, const report& out)
{
    if (!gpu::is_available()) {
        out.line("random fills would be seeded " +
                 (p.seed ? "with " + std::to_string(*p.seed) : std::string("from the clock")) +
                 " (no GPU to draw on)");
        return nullptr;
    }
    const auto draw = [&p] {
        gpu::stream stream;
        gpu::blas::random_generator rng(p, stream);
        gpu::device_buffer<float> values(4, stream);
        rng.uniform(values);
        return std::pair{rng.seed(), values.to_host()};
    };
    const auto [first_seed, first] = draw();
    const auto [second_seed, second] = draw();
    char text[160];
    std::snprintf(text, sizeof text, "%.6f, %.6f, %.6f, %.6f", first[0], first[1], first[2],
                  first[3]);
    out.line("random fills seeded " + (p.seed ? "with " : std::string("from the clock: ")) +
             std::to_string(first_seed) + ", first values " + text + "; a second generator " +
             (first == second ? "draws the same values" : "draws different values"));
    return {{"seed", first_seed},
            {"first_values", first},
            {"reproducible", first == second && first_seed == second_seed}};
}

#if CUDAGAP_PROFILES_HAS_DNN
nlohmann::json dnn_effect(const gpu::profile& p, const report& out)
{
    const gpu::dnn::convolution_options options = gpu::dnn::convolution_options::from_profile(p);
    const gpu::dnn::convolution_problem problem{
        .input = {8, 3, 224, 224}, .filter = {64, 3, 3, 3}, .geometry = {.padding = {1, 1}}};
    nlohmann::json j = {{"search", std::string(gpu::dnn::to_string(options.search))},
                        {"deterministic_only", options.deterministic_only()},
                        {"allow_tf32", options.allow_tf32},
                        {"algorithm", nullptr},
                        {"deterministic", nullptr}};
    const std::string policy = "search " + j["search"].get<std::string>() +
                               ", deterministic only " +
                               (options.deterministic_only() ? "yes" : "no") + ", TF32 " +
                               (options.allow_tf32 ? "allowed" : "off");
    if (!gpu::is_available()) {
        out.line("cuDNN convolution plans would get: " + policy + " (no GPU to plan on)");
        return j;
    }
    const gpu::stream stream;
    gpu::dnn::handle h(stream);
    const gpu::dnn::convolution conv(h, problem, options);
    const gpu::dnn::convolution_explanation& why = conv.explain();
    j["algorithm"] = std::string(gpu::dnn::to_string(why.algorithm));
    j["deterministic"] = why.deterministic;
    out.line("cuDNN convolution plan: " + policy + " -> " + j["algorithm"].get<std::string>() +
             (why.deterministic ? " (deterministic)" : " (not deterministic)") +
             (why.time_ms ? ", timed" : ", ranked by cuDNN's heuristics"));
    return j;
}
#endif

nlohmann::json show(const gpu::profile& p, bool quiet)
{
    const report out{p.tag(), quiet};
    if (gpu::is_available()) {
        const gpu::device_properties props = gpu::current_device().properties();
        out.line("Device: cuda:" + std::to_string(props.id) + " (" + props.name + ")");
    } else {
        out.line("Device: cpu (no usable GPU)");
    }
    out.line("CUDA Version: " + gpu::runtime_version().to_string());
    for (const std::string& setting : p.describe()) {
        out.line(setting);
    }
    nlohmann::json j = {{"profile", p},
                        {"cublas", blas_effect(p, out)},
                        {"cudnn", nullptr},
                        {"anomaly_check", anomaly_effect(p, out)},
                        {"random", seed_effect(p, out)}};
#if CUDAGAP_PROFILES_HAS_DNN
    j["cudnn"] = dnn_effect(p, out);
#endif
    if (!quiet) {
        std::printf("\n");
    }
    return j;
}

} // namespace

int main(int argc, char* argv[])
{
    bool json = false;
    std::string chosen;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--json") {
            json = true;
        } else if (arg == "--profile" && i + 1 < argc) {
            chosen = argv[++i];
        } else if (arg == "--help" || arg == "-h") {
            std::fputs(usage, stdout);
            return 0;
        } else {
            std::fprintf(stderr, "cudagap-profiles: unknown option '%s'\n\n%s", argv[i], usage);
            return 2;
        }
    }
    try {
        std::vector<gpu::profile> profiles;
        nlohmann::json selected = nullptr;
        if (!chosen.empty() || gpu::profile_from_environment()) {
            profiles.push_back(gpu::select_profile(chosen));
            selected = profiles.back().name;
        } else {
            profiles = {gpu::profile::development(), gpu::profile::production(),
                        gpu::profile::testing()};
        }
        if (!json && !gpu::is_available()) {
            std::printf("No usable GPU: %s\nShowing the settings each profile would apply.\n\n",
                        gpu::unavailable_reason().c_str());
        }
        nlohmann::json shown = nlohmann::json::array();
        for (const gpu::profile& p : profiles) {
            std::fprintf(stderr, "cudagap-profiles: %s...\n", p.name.c_str());
            shown.push_back(show(p, json));
        }
        if (json) {
            std::cout << gpu::to_json_text(
                             {{"gpu_available", gpu::is_available()},
                              {"reason", gpu::is_available()
                                             ? nlohmann::json(nullptr)
                                             : nlohmann::json(gpu::unavailable_reason())},
                              {"selected", selected},
                              {"profiles", shown}})
                      << '\n';
        }
        return 0;
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "cudagap-profiles: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-profiles: %s\n", e.what());
        return 1;
    }
}
