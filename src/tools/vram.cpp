// The VRAM advisor and monitor (docs/vram.md): settings by card size, the three views of
// memory kept apart, and clearing the pool's cache.
#include <gpu/tools/vram.hpp>

#include <gpu/error.hpp>

#include <array>
#include <cstdio>

namespace gpu::tools {

namespace {

constexpr std::size_t gib = std::size_t{1} << 30;

struct tier_row {
    vram_tier tier;
    std::string_view name;
    std::size_t nominal_gib; // the size the class is sold as
    int batch_size;
    bool half_precision;
    bool gradient_checkpointing;
    std::string_view note;
};

// Starting batch sizes: 1, 4, 8 on small cards, then doubling as memory doubles. Half precision
// below 12 GB, where FP32 weights, activations and gradients crowd the card; FP32 from 12 GB on.
constexpr std::array<tier_row, 6> tiers = {{
    {vram_tier::under_8gb, "under 8 GB", 0, 1, true, true,
     "memory is the limit: half precision halves weights, activations and gradients, and "
     "gradient checkpointing recomputes activations in the backward pass (about a third more "
     "compute) instead of storing them; accumulate gradients over several batches of 1 for a "
     "larger effective batch"},
    {vram_tier::class_8gb, "8 GB class", 8, 4, true, false,
     "half precision with a moderate batch fits fine-tuning of small models; turn on gradient "
     "checkpointing if a model runs out of memory"},
    {vram_tier::class_12gb, "12 GB class", 12, 8, false, false,
     "full precision fits; switch to BF16/FP16 before shrinking the "
     "batch when a model does not"},
    {vram_tier::class_24gb, "24 GB class", 24, 16, false, false,
     "room for FP32 training of mid-sized models; mixed precision still doubles tensor-core "
     "throughput when speed matters more than memory"},
    {vram_tier::class_48gb, "48 GB class", 48, 32, false, false,
     "room for large batches in FP32, or fine-tuning multi-billion-parameter models in BF16"},
    {vram_tier::class_80gb, "80 GB and more", 80, 64, false, false,
     "data-centre memory: FP32 for accuracy work, BF16 for the largest models; size the batch "
     "for throughput rather than fit"},
}};

const tier_row& row(vram_tier tier)
{
    return tiers[static_cast<std::size_t>(tier)];
}

std::string percent(double fraction)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f%%", 100.0 * fraction);
    return text;
}

} // namespace

std::string_view to_string(vram_tier tier) noexcept
{
    const auto index = static_cast<std::size_t>(tier);
    return index < tiers.size() ? tiers[index].name : std::string_view("unknown");
}

std::size_t vram_tier_floor_bytes(vram_tier tier) noexcept
{
    const auto index = static_cast<std::size_t>(tier);
    return index < tiers.size() ? tiers[index].nominal_gib * gib / 8 * 7 : 0;
}

vram_tier vram_tier_for(std::size_t total_bytes) noexcept
{
    vram_tier found = vram_tier::under_8gb;
    for (const tier_row& candidate : tiers) {
        if (total_bytes >= vram_tier_floor_bytes(candidate.tier)) {
            found = candidate.tier;
        }
    }
    return found;
}

vram_advice advise_vram(std::size_t total_bytes, std::optional<compute_capability> capability)
{
    vram_advice advice;
    advice.total_bytes = total_bytes;
    advice.capability = capability;
    advice.tier = vram_tier_for(total_bytes);
    const tier_row& tier = row(advice.tier);
    advice.batch_size = tier.batch_size;
    advice.gradient_checkpointing = tier.gradient_checkpointing;
    advice.allow_tf32 = capability && capability->has_tf32();
    advice.notes.emplace_back(tier.note);
    if (tier.half_precision) {
        if (capability && capability->has_bf16()) {
            advice.precision = preferred_precision::bf16;
            advice.notes.emplace_back("BF16 rather than FP16: same size, FP32's range, so "
                                      "training needs no loss scaling (compute capability " +
                                      capability->to_string() + " has BF16 tensor cores)");
        } else {
            advice.precision = preferred_precision::fp16;
            advice.notes.emplace_back(
                "FP16 training needs loss scaling (gpu::nn::grad_scaler, "
                "PyTorch's GradScaler) to keep small gradients from underflowing");
            if (!capability) {
                advice.notes.emplace_back("on an Ampere or newer GPU (compute capability 8.0+) "
                                          "use BF16 instead: give the capability for exact advice");
            } else if (!capability->has_tensor_cores()) {
                advice.notes.emplace_back("compute capability " + capability->to_string() +
                                          " has no tensor cores: FP16 saves memory here, not time");
            }
        }
    } else {
        advice.precision = preferred_precision::fp32;
        if (advice.allow_tf32) {
            advice.notes.emplace_back("allow TF32: FP32 data on tensor cores, about 8x the FP32 "
                                      "matrix throughput with a 10-bit mantissa");
        }
    }
    return advice;
}

vram_advice advise_vram(device dev)
{
    const device_properties props = dev.properties();
    return advise_vram(props.total_memory_bytes, props.capability);
}

profile vram_advice::apply_to(profile base) const
{
    base.precision = precision;
    base.allow_tf32 = allow_tf32;
    return base;
}

std::vector<std::string> vram_advice::describe() const
{
    std::vector<std::string> lines = {
        "total VRAM: " + format_bytes(total_bytes) + " (" + std::string(to_string(tier)) + ")",
        "precision: " + std::string(to_string(precision)),
        "batch size: " + std::to_string(batch_size),
        "gradient checkpointing: " + std::string(gradient_checkpointing ? "yes" : "no"),
        "TF32: " + std::string(allow_tf32   ? "allowed"
                               : capability ? "not supported"
                                            : "unknown (no capability given)"),
    };
    for (const std::string& note : notes) {
        lines.push_back("note: " + note);
    }
    return lines;
}

std::string vram_usage::warning() const
{
    if (!high()) {
        return {};
    }
    std::string text = "VRAM usage is high: " + percent(device_memory.used_fraction()) + " of " +
                       format_bytes(device_memory.total_bytes) + " in use";
    if (pool.cached_bytes() > 0) {
        text += "; the pool caches " + format_bytes(pool.cached_bytes()) +
                " it does not use (clear it with gpu::tools::clear_vram / --clear)";
    }
    const std::size_t others = device_memory.used_bytes() > pool.reserved_bytes
                                   ? device_memory.used_bytes() - pool.reserved_bytes
                                   : 0;
    text += "; other processes, the driver and non-pool allocations hold " + format_bytes(others) +
            " (see nvidia-smi); reduce the batch size or use half precision";
    return text;
}

std::vector<std::string> vram_usage::describe() const
{
    std::vector<std::string> lines = {
        "allocated by cudagap in this process: " + format_bytes(allocated.current_bytes) +
            " now in " + std::to_string(allocated.live_allocations) + " buffer(s), peak " +
            format_bytes(allocated.peak_bytes),
    };
    if (pool.supported) {
        lines.push_back("reserved by the memory pool of device " + std::to_string(device_id) +
                        ": " + format_bytes(pool.reserved_bytes) + " (" +
                        format_bytes(pool.used_bytes) + " in use, " +
                        format_bytes(pool.cached_bytes()) + " free but held for reuse; peak " +
                        format_bytes(pool.reserved_peak_bytes) + ")");
    } else {
        lines.push_back("device " + std::to_string(device_id) +
                        " has no memory pool: buffers come from cudaMalloc and nothing is cached");
    }
    lines.push_back(
        "device " + std::to_string(device_id) + " (all processes, as nvidia-smi sees it): " +
        format_bytes(device_memory.used_bytes()) + " used of " +
        format_bytes(device_memory.total_bytes) + " (" + percent(device_memory.used_fraction()) +
        "), " + format_bytes(device_memory.free_bytes) + " free");
    if (const std::string text = warning(); !text.empty()) {
        lines.push_back("WARNING: " + text);
    }
    return lines;
}

vram_usage measure_vram(device dev)
{
    vram_usage usage;
    usage.device_id = dev.id();
    usage.pool = memory_pool_info(dev);
    usage.device_memory = dev.memory();
    usage.allocated = allocation_statistics();
    return usage;
}

vram_clear_result clear_vram(device dev)
{
    vram_clear_result result;
    dev.synchronize(); // frees queued on streams reach the pool first, so "before" is honest
    result.before = measure_vram(dev);
    trim_memory_pool(dev, 0);
    result.after = measure_vram(dev);
    return result;
}

} // namespace gpu::tools
