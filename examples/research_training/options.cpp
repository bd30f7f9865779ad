// cudagap-train's command line. Every value is checked whole ("12abc" is refused, not read as
// 12) and within its range; the message names the option and the text given.
#include "options.hpp"

#include <cctype>
#include <cmath>
#include <stdexcept>
#include <string>
#include <string_view>

namespace train {

static_assert(max_batch_size == 85598,
              "the usage text and docs/research_training.md give the number");

const char* const usage =
    R"(usage: cudagap-train [--data DIR] [--epochs N] [--batch-size B] [--lr LR]
                     [--precision fp16|bf16|fp32] [--graph] [--seed S]
                     [--train-limit N] [--test-limit N] [--weight-decay WD] [--dropout P]
                     [--json FILE|-] [--save FILE] [--resume FILE] [--memory-trace FILE]
                     [--quiet]
                     [--profile development|production|testing] [--gpus N] [--help] [--version]

Trains the Fashion-MNIST reference convnet (conv 5x5 32, pool, conv 5x5 64, pool, linear 1024,
dropout, linear 10) with AdamW, cross-entropy and mixed precision, the whole data set on the
GPU, shuffled there each epoch.

  --data DIR          the four IDX files (default /usr/share/datasets/fashion-mnist:
                      apt-get install dataset-fashion-mnist)
  --epochs N          passes over the training set (default 10)
  --batch-size B      images per step (default 64, at most 85598); out of GPU memory:
                      lower it
  --lr LR             AdamW's learning rate (default 0.001)
  --precision P       fp16 (with the grad scaler), bf16 or fp32 (default fp16)
  --graph             capture the whole training step once, replay it every step
  --seed S            weights, dropout and shuffle (default 42)
  --train-limit N     the first N training images (default 0: all)
  --test-limit N      the first N test images (default 0: all)
  --weight-decay WD   AdamW's weight decay (default 0.01)
  --dropout P         the dropout probability, in [0, 1) (default 0.4)
  --json FILE|-       write the report as one JSON object (- : to stdout)
  --save FILE         the training state after every epoch (safetensors, written atomically)
  --resume FILE       start from a saved training state
  --memory-trace FILE record every allocation of the run by tag as a Chrome trace (open it
                      in ui.perfetto.dev; written atomically at the end) and print the
                      memory ledger's table, with each tag's peak, when the run ends
  --quiet             no progress bar
  --profile NAME      production (default: exhaustive algorithm search, TF32), development
                      or testing
  --gpus N            data-parallel on N GPUs of this host: one process per GPU, each
                      on --batch-size images of every step (a step takes N x B), the
                      gradients averaged with NCCL; only rank 0 prints, writes --json
                      and --save; Ctrl-C stops after the epoch in progress
  --help              print this text
  --version           print the version
  --profile testing checks every layer's output for NaN and Inf on the device and names the
  first that held one. --json is written also when the run fails ("error") or is interrupted.
Exit status: 0 done (or no GPU: the reason), 1 a failure (data, checkpoint, CUDA, out of
memory, a NaN loss, replicas that differ), 2 bad arguments, 130 interrupted (Ctrl-C; the
last complete checkpoint is kept). With --gpus N: the first failing rank's status.
)";

namespace {

// A whole number in [least, most]; `why` (if any) says where `most` comes from.
std::uint64_t whole(const std::string& text, std::string_view option, std::uint64_t least,
                    std::uint64_t most, std::string_view why = {})
{
    std::size_t used = 0;
    unsigned long long value = 0;
    try {
        // Digits only: std::stoull would also take a sign or leading white space (" -1" as 2^64 - 1).
        value = text.empty() || std::isdigit(static_cast<unsigned char>(text[0])) == 0
                    ? throw std::invalid_argument("not a digit")
                    : std::stoull(text, &used);
    } catch (const std::logic_error&) {
        used = std::string::npos;
    }
    if (used != text.size() || value < least || value > most) {
        throw std::invalid_argument(std::string(option) + " takes a whole number from " +
                                    std::to_string(least) + " to " + std::to_string(most) +
                                    std::string(why) + ", got '" + text + "'");
    }
    return value;
}

// A real number in [least, most] (most_open: below most).
double real(const std::string& text, std::string_view option, double least, double most,
            bool most_open, std::string_view range)
{
    std::size_t used = 0;
    double value = 0.0;
    try {
        value = std::stod(text, &used);
    } catch (const std::logic_error&) {
        used = std::string::npos;
    }
    const bool inside =
        std::isfinite(value) && value >= least && (most_open ? value < most : value <= most);
    if (used != text.size() || !inside) {
        throw std::invalid_argument(std::string(option) + " takes a number " + std::string(range) +
                                    ", got '" + text + "'");
    }
    return value;
}

std::string one_of(const std::string& text, std::string_view option,
                   std::initializer_list<std::string_view> names)
{
    std::string list;
    for (const std::string_view name : names) {
        if (text == name) {
            return text;
        }
        list += (list.empty() ? "" : ", ") + std::string(name);
    }
    throw std::invalid_argument("unknown " + std::string(option) + " '" + text + "' (" + list +
                                ")");
}

bool takes_value(std::string_view arg)
{
    for (const std::string_view name :
         {"--data", "--epochs", "--batch-size", "--lr", "--precision", "--seed", "--train-limit",
          "--test-limit", "--weight-decay", "--dropout", "--json", "--save", "--resume",
          "--memory-trace", "--profile", "--gpus"}) {
        if (arg == name) {
            return true;
        }
    }
    return false;
}

// The options that take a text: a path or a name; false when `arg` is none of them.
bool parse_text(options& opts, std::string_view arg, const std::string& text)
{
    if (arg == "--data") {
        opts.data = text;
    } else if (arg == "--precision") {
        opts.precision = one_of(text, "precision", {"fp16", "bf16", "fp32"});
    } else if (arg == "--json") {
        opts.json = text;
    } else if (arg == "--save") {
        opts.save = text;
    } else if (arg == "--resume") {
        opts.resume = text;
    } else if (arg == "--memory-trace") {
        opts.memory_trace = text;
    } else if (arg == "--profile") {
        opts.profile = one_of(text, "profile", {"development", "production", "testing"});
    } else {
        return false;
    }
    return true;
}

// The options that take a value; false when `arg` is none of them.
bool parse_value(options& opts, std::string_view arg, const std::string& text)
{
    if (arg == "--epochs") {
        opts.epochs = static_cast<int>(whole(text, arg, 1, 100000));
    } else if (arg == "--batch-size") {
        opts.batch_size = static_cast<std::int64_t>(
            whole(text, arg, 1, static_cast<std::uint64_t>(max_batch_size),
                  " (a larger batch makes conv1's output, B x 32 x 28 x 28, more than the 2^31 - 1 "
                  "elements cuDNN "
                  "indexes)"));
    } else if (arg == "--lr") {
        opts.lr = real(text, arg, 0.0, 10.0, false, "from 0 to 10");
    } else if (arg == "--seed") {
        opts.seed = whole(text, arg, 0, UINT64_MAX);
    } else if (arg == "--train-limit") {
        opts.train_limit = whole(text, arg, 0, UINT32_MAX);
    } else if (arg == "--test-limit") {
        opts.test_limit = whole(text, arg, 0, UINT32_MAX);
    } else if (arg == "--weight-decay") {
        opts.weight_decay = real(text, arg, 0.0, 10.0, false, "from 0 to 10");
    } else if (arg == "--dropout") {
        opts.dropout = real(text, arg, 0.0, 1.0, true, "in [0, 1)");
    } else if (arg == "--gpus") {
        opts.gpus = static_cast<int>(whole(text, arg, 1, max_gpus));
    } else {
        return parse_text(opts, arg, text);
    }
    return true;
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
        } else if (arg == "--graph") {
            opts.graph = true;
        } else if (arg == "--quiet") {
            opts.quiet = true;
        } else if (takes_value(arg)) {
            if (i + 1 >= argc) {
                throw std::invalid_argument(std::string(arg) + " needs a value");
            }
            parse_value(opts, arg, argv[++i]);
        } else {
            throw std::invalid_argument("unknown option '" + std::string(arg) + "'");
        }
    }
    // Found here rather than by the capture on a GPU, after the data is read and the layers planned.
    if (opts.graph && opts.profile == "development") {
        throw std::invalid_argument(
            "--graph cannot run under --profile development: its checks wait for the GPU "
            "after every call, which a CUDA graph capture cannot hold (use --profile "
            "testing, whose NaN/Inf checks of every layer are captured with the step)");
    }
    return opts;
}

} // namespace train
