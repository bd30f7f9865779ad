// cudagap-infer's command line. Numbers are digits only and checked whole ("12abc" and " -1"
// are refused) and within range; lists are comma-separated; the message names the option.
#include "options.hpp"

#include "server.hpp"

#include <algorithm>
#include <cctype>
#include <functional>
#include <map>
#include <stdexcept>
#include <string_view>

namespace infer {

const char* const usage = R"(usage: cudagap-infer [--checkpoint FILE] [--seed S] [--data DIR]
                     [--precision fp16|bf16|fp32] [--buckets 1,8,32,128,256]
                     [--batch-sizes 1,32,256] [--requests N] [--warmup N]
                     [--mode eager|graph|both] [--test-limit N] [--export-onnx FILE]
                     [--outputs FILE] [--json FILE|-] [--quiet]
                     [--profile development|production|testing] [--help] [--version]

Serves the Fashion-MNIST convnet that cudagap-train trains, as
production_inference.py does: requests padded to batch buckets, each bucket planned once and
captured once as a CUDA graph; eager and graph latency (p50/p90/p99), images/s and test
accuracy side by side; --export-onnx writes the model for TensorRT and Triton.

  --checkpoint FILE   a cudagap-train --save file (none: weights from --seed, and the
                      predictions are meaningless)
  --seed S            the weights without a checkpoint (default 42)
  --data DIR          Fashion-MNIST's t10k files (default /usr/share/datasets/fashion-mnist:
                      apt-get install dataset-fashion-mnist; without it, synthetic inputs and
                      no accuracy)
  --precision P       fp16, bf16 or fp32 (default fp16)
  --buckets LIST      ascending batch buckets, each planned and captured once (default
                      1,8,32,128,256)
  --batch-sizes LIST  the request sizes timed (default 1,32,256)
  --requests N        timed requests per batch size and mode (default 1000)
  --warmup N          untimed requests first (default 20)
  --mode M            eager, graph or both (default both)
  --test-limit N      the first N test images (default 0: all)
  --export-onnx FILE  write the model as ONNX (opset 17, dynamic batch); needs no GPU
  --outputs FILE      the first inputs and cudagap's logits for them (safetensors)
  --json FILE|-       write the report as one JSON object (- : to stdout); also on a failure,
                      with "error"; a file is replaced whole (written aside, then renamed)
  --quiet             no progress line
  --profile NAME      production (default: exhaustive algorithm search, TF32), development
                      (eager only: it synchronises after every call) or testing
  --help              print this text
  --version           print the version, and whether this build exports ONNX
Exit status: 0 done (or no GPU: the reason, after the checks that need none), 1 a failure
(checkpoint, data, export, CUDA), 2 bad arguments.
)";

namespace {

std::uint64_t number(std::string_view text, std::string_view option, std::uint64_t least,
                     std::uint64_t most)
{
    std::uint64_t value = 0;
    bool ok = !text.empty() && text.size() <= 20;
    for (const char c : text) {
        const auto digit = static_cast<std::uint64_t>(c - '0');
        ok = ok && std::isdigit(static_cast<unsigned char>(c)) != 0 &&
             value <= (UINT64_MAX - digit) / 10;
        value = ok ? value * 10 + digit : 0;
    }
    if (!ok || value < least || value > most) {
        throw std::invalid_argument(std::string(option) + " takes a whole number from " +
                                    std::to_string(least) + " to " + std::to_string(most) +
                                    ", got '" + std::string(text) + "'");
    }
    return value;
}

std::vector<std::int64_t> number_list(std::string_view text, std::string_view option,
                                      std::int64_t most)
{
    std::vector<std::int64_t> values;
    std::size_t start = 0;
    while (true) {
        const std::size_t comma = text.find(',', start);
        const std::string_view item =
            text.substr(start, comma == std::string_view::npos ? comma : comma - start);
        values.push_back(
            static_cast<std::int64_t>(number(item, option, 1, static_cast<std::uint64_t>(most))));
        if (comma == std::string_view::npos) {
            return values;
        }
        start = comma + 1;
    }
}

std::string choice(std::string_view text, std::string_view what,
                   std::initializer_list<std::string_view> names)
{
    std::string list;
    for (const std::string_view name : names) {
        if (text == name) {
            return std::string(text);
        }
        list += (list.empty() ? "" : ", ") + std::string(name);
    }
    throw std::invalid_argument("unknown " + std::string(what) + " '" + std::string(text) + "' (" +
                                list + ")");
}

using setter = std::function<void(options&, std::string_view, std::string_view)>;

const std::map<std::string_view, setter>& value_options()
{
    static const std::map<std::string_view, setter> table{
        {"--checkpoint", [](options& o, auto, auto v) { o.checkpoint = std::string(v); }},
        {"--seed", [](options& o, auto a, auto v) { o.seed = number(v, a, 0, UINT64_MAX); }},
        {"--data", [](options& o, auto, auto v) { o.data = std::string(v); }},
        {"--precision",
         [](options& o, auto, auto v) {
             o.precision = choice(v, "precision", {"fp16", "bf16", "fp32"});
         }},
        {"--buckets",
         [](options& o, auto a, auto v) {
             o.buckets = number_list(v, a, max_bucket);
             try {
                 check_buckets(o.buckets);
             } catch (const std::invalid_argument& e) {
                 throw std::invalid_argument(std::string(a) + " '" + std::string(v) +
                                             "': " + e.what());
             }
         }},
        {"--batch-sizes",
         [](options& o, auto a, auto v) { o.batch_sizes = number_list(v, a, 1 << 20); }},
        {"--requests",
         [](options& o, auto a, auto v) {
             o.requests = static_cast<std::int64_t>(number(v, a, 1, 10'000'000));
         }},
        {"--warmup",
         [](options& o, auto a, auto v) {
             o.warmup = static_cast<std::int64_t>(number(v, a, 0, 1'000'000));
         }},
        {"--mode",
         [](options& o, auto, auto v) {
             o.mode = choice(v, "mode", {"eager", "graph", "both"});
         }},
        {"--test-limit",
         [](options& o, auto a, auto v) { o.test_limit = number(v, a, 0, UINT32_MAX); }},
        {"--export-onnx", [](options& o, auto, auto v) { o.export_onnx = std::string(v); }},
        {"--outputs", [](options& o, auto, auto v) { o.outputs = std::string(v); }},
        {"--json", [](options& o, auto, auto v) { o.json = std::string(v); }},
        {"--profile",
         [](options& o, auto, auto v) {
             o.profile = choice(v, "profile", {"development", "production", "testing"});
         }},
    };
    return table;
}

} // namespace

options parse(int argc, char* argv[])
{
    options opts;
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            opts.help = true;
        } else if (arg == "--version") {
            opts.version = true;
        } else if (arg == "--quiet") {
            opts.quiet = true;
        } else if (const auto it = value_options().find(arg); it != value_options().end()) {
            if (i + 1 >= argc) {
                throw std::invalid_argument(std::string(arg) + " needs a value");
            }
            it->second(opts, arg, argv[++i]);
        } else {
            throw std::invalid_argument("unknown option '" + std::string(arg) + "'");
        }
    }
    if (opts.mode == "graph" && opts.profile == "development") {
        throw std::invalid_argument(
            "--mode graph needs a profile that does not synchronise after every call, which a "
            "CUDA graph cannot capture: development does (use --mode eager, or --profile "
            "production or testing)");
    }
    return opts;
}

} // namespace infer
