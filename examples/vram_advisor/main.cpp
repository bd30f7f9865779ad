// cudagap-vram: hobby_ai_setup.py's VRAM advice and monitoring for small cards (docs/vram.md).
//
// Advice: precision, batch size, gradient checkpointing and TF32 by memory size and compute
// capability, for this machine's GPU or any card (--vram-gib, useful without a GPU).
// Monitoring: what this process allocated through cudagap, what the stream-ordered pool
// reserves (and caches unused), and what the device shows for all processes; the ledger says
// who holds it, by tag (docs/memory.md); --clear returns the pool's cache to the device and
// shows before and after. See docs/vram.md.
#include <gpu/gpu.hpp>
#include <gpu/tools/json.hpp>
#include <gpu/tools/vram.hpp>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace {

constexpr const char* usage =
    R"(usage: cudagap-vram [--vram-gib N] [--compute-capability X.Y] [--device N]
                    [--allocate-mib N] [--clear] [--json] [--help]

Advice for training on a card of this size (hobby_ai_setup.py's tiers, extended to 24, 48 and
80+ GB cards) and, where a GPU is usable, its memory seen three ways: allocated by this
process, reserved by the memory pool, and used on the device by everyone; then the memory
ledger: who holds the device's memory, by tag, with the pool's unused and the untracked lines.

  --vram-gib N               advise for a hypothetical card with N GiB (no GPU needed)
  --compute-capability X.Y   its compute capability (BF16 and TF32 need 8.0)
  --device N                 the GPU to look at (default 0)
  --allocate-mib N           allocate and free N MiB to show the views move (default 256, 0: none)
  --clear                    return the pool's unused memory to the device, before and after
  --json                     print the report as one JSON object
  --help                     print this text
)";

// The ledger of @p device (its table on stdout unless @p json), as the report's "ledger"
// object; null for a device beyond those the ledger counts.
nlohmann::json show_ledger(const char* moment, int device, bool json)
{
    if (device >= gpu::memory_ledger::max_devices) {
        return nullptr;
    }
    const gpu::memory_ledger_snapshot snapshot =
        gpu::memory_ledger::global().snapshot(device, gpu::read_device_memory(device));
    if (!json) {
        std::printf("\n%s\n%s", moment, snapshot.to_text().c_str());
    }
    return snapshot;
}

struct options {
    std::optional<double> vram_gib;
    std::optional<gpu::compute_capability> capability;
    int device = 0;
    std::size_t allocate_mib = 256;
    bool clear = false;
    bool json = false;
};

// The value of a numeric option, whole and within [least, most]; std::invalid_argument naming the
// option and its text otherwise (std::stoi's own message is only "stoi", and std::stoul takes
// "-1" for a huge number).
long long whole_number(const std::string& text, const std::string& option, long long least,
                       long long most)
{
    std::size_t used = 0;
    long long value = 0;
    try {
        value = std::stoll(text, &used);
    } catch (const std::logic_error&) {
        used = std::string::npos; // not a number at all, or beyond long long
    }
    if (used != text.size() || value < least || value > most) {
        throw std::invalid_argument(option + " takes a whole number from " + std::to_string(least) +
                                    " to " + std::to_string(most) + ", got '" + text + "'");
    }
    return value;
}

// Parses the command line; throws std::invalid_argument naming a bad option or value.
options parse(int argc, char* argv[])
{
    options opts;
    const auto value = [&](int& i) -> std::string {
        if (i + 1 >= argc) {
            throw std::invalid_argument(std::string(argv[i]) + " needs a value");
        }
        return argv[++i];
    };
    for (int i = 1; i < argc; ++i) {
        const std::string_view arg = argv[i];
        if (arg == "--vram-gib") {
            const std::string text = value(i);
            std::size_t used = 0;
            try {
                opts.vram_gib = std::stod(text, &used);
            } catch (const std::logic_error&) {
                used = std::string::npos;
            }
            if (used != text.size() || !(*opts.vram_gib > 0.0) || *opts.vram_gib > 1e6) {
                throw std::invalid_argument("--vram-gib must be a positive size in GiB, got " +
                                            text);
            }
        } else if (arg == "--compute-capability") {
            const std::string text = value(i);
            const std::size_t dot = text.find('.');
            if (dot == std::string::npos) {
                throw std::invalid_argument("--compute-capability must look like 8.6, got " + text);
            }
            opts.capability = gpu::compute_capability{
                static_cast<int>(whole_number(text.substr(0, dot),
                                              "the major version of --compute-capability", 1, 99)),
                static_cast<int>(whole_number(text.substr(dot + 1),
                                              "the minor version of --compute-capability", 0, 9))};
        } else if (arg == "--device") {
            opts.device = static_cast<int>(whole_number(value(i), "--device", 0, 1023));
        } else if (arg == "--allocate-mib") {
            // At most 1 TiB, so that the byte count cannot overflow.
            opts.allocate_mib =
                static_cast<std::size_t>(whole_number(value(i), "--allocate-mib", 0, 1 << 20));
        } else if (arg == "--clear") {
            opts.clear = true;
        } else if (arg == "--json") {
            opts.json = true;
        } else {
            throw std::invalid_argument("unknown option '" + std::string(arg) + "'");
        }
    }
    return opts;
}

void print_lines(const char* title, const std::vector<std::string>& lines)
{
    std::printf("%s\n", title);
    for (const std::string& line : lines) {
        std::printf("  %s\n", line.c_str());
    }
}

// The tiers at a glance: what a card of each class gets (on an Ampere-class GPU).
std::vector<gpu::tools::vram_advice> tier_table()
{
    std::vector<gpu::tools::vram_advice> table;
    for (const gpu::tools::vram_tier tier :
         {gpu::tools::vram_tier::under_8gb, gpu::tools::vram_tier::class_8gb,
          gpu::tools::vram_tier::class_12gb, gpu::tools::vram_tier::class_24gb,
          gpu::tools::vram_tier::class_48gb, gpu::tools::vram_tier::class_80gb}) {
        table.push_back(gpu::tools::advise_vram(gpu::tools::vram_tier_floor_bytes(tier),
                                                gpu::compute_capability{8, 0}));
    }
    return table;
}

} // namespace

int main(int argc, char* argv[])
{
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--help" || std::string_view(argv[i]) == "-h") {
            std::fputs(usage, stdout);
            return 0;
        }
    }
    options opts;
    try {
        opts = parse(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-vram: %s\n\n%s", e.what(), usage);
        return 2;
    }
    try {
        nlohmann::json report = {{"gpu_available", gpu::is_available()},
                                 {"reason", nullptr},
                                 {"advice", nullptr},
                                 {"monitoring", nullptr},
                                 {"clear", nullptr},
                                 {"ledger", nullptr}};
        const bool have_gpu = gpu::is_available();
        if (!have_gpu) {
            report["reason"] = gpu::unavailable_reason();
        }

        // 1. Advice: for the card asked about, else for the GPU, else the table of tiers.
        std::optional<gpu::tools::vram_advice> advice;
        if (opts.vram_gib) {
            advice = gpu::tools::advise_vram(static_cast<std::size_t>(*opts.vram_gib * (1u << 30)),
                                             opts.capability);
        } else if (have_gpu) {
            advice = gpu::tools::advise_vram(gpu::device(opts.device));
        }
        if (advice) {
            report["advice"] = *advice;
        }
        if (!opts.json) {
            if (advice) {
                print_lines(opts.vram_gib ? "Recommended settings for the card asked about:"
                                          : "Recommended settings for this GPU:",
                            advice->describe());
            } else {
                std::printf("No usable GPU: %s\n\nAsk about a card with --vram-gib N (e.g. "
                            "--vram-gib 8 --compute-capability 8.6). The tiers:\n",
                            gpu::unavailable_reason().c_str());
                for (const gpu::tools::vram_advice& row : tier_table()) {
                    std::printf("  from %-10s %-15s %-5s batch %-3d checkpointing %s\n",
                                gpu::format_bytes(row.total_bytes).c_str(),
                                std::string(gpu::tools::to_string(row.tier)).c_str(),
                                std::string(gpu::to_string(row.precision)).c_str(), row.batch_size,
                                row.gradient_checkpointing ? "yes" : "no");
                }
            }
        }

        // 2. Monitoring, on a real GPU only.
        if (!have_gpu) {
            if (!opts.json) {
                std::printf("\nMonitoring skipped: no usable GPU.\n");
            }
        } else {
            const gpu::device dev(opts.device);
            const gpu::scoped_device on(dev);
            nlohmann::json snapshots = nlohmann::json::array();
            const auto show = [&](const char* moment) {
                const gpu::tools::vram_usage usage = gpu::tools::measure_vram(dev);
                snapshots.push_back({{"moment", moment}, {"usage", usage}});
                if (!opts.json) {
                    std::printf("\n");
                    print_lines(moment, usage.describe());
                }
            };
            show("VRAM now:");
            if (opts.allocate_mib > 0) {
                std::fprintf(stderr, "cudagap-vram: allocating %zu MiB...\n", opts.allocate_mib);
                gpu::stream stream;
                {
                    const gpu::device_buffer<std::byte> block(
                        opts.allocate_mib << 20, stream,
                        gpu::memory_tag::named("cudagap-vram --allocate-mib"));
                    stream.synchronize();
                    show("VRAM with the buffer allocated:");
                    static_cast<void>(show_ledger(
                        "Who holds it, with the buffer allocated:", opts.device, opts.json));
                }
                stream.synchronize();
                // What the pool kept depends on its release threshold (gpu::memory_pool).
                const std::string threshold =
                    gpu::format_bytes(gpu::memory_pool_info(dev).release_threshold_bytes);
                show(("VRAM after freeing it (the pool keeps up to its release threshold, " +
                      threshold + "):")
                         .c_str());
            }
            report["monitoring"] = snapshots;
            if (opts.clear) {
                const gpu::tools::vram_clear_result cleared = gpu::tools::clear_vram(dev);
                report["clear"] = cleared;
                if (!opts.json) {
                    std::printf("\nClearing the pool released %s:\n",
                                gpu::format_bytes(cleared.released_bytes()).c_str());
                    print_lines("before:", cleared.before.describe());
                    print_lines("after:", cleared.after.describe());
                }
            }
        }
        report["ledger"] =
            show_ledger("Who holds the memory (the ledger):", opts.device, opts.json);
        if (opts.json) {
            std::cout << gpu::to_json_text(report) << '\n';
        }
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "cudagap-vram: %s\n", e.what());
        return 1;
    }
}
