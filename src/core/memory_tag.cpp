// Memory tags: the categories with their names and fixes, the process's registry of tags, and
// the thread's tag scope.
#include <gpu/memory_tag.hpp>

#include <array>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace gpu {
namespace {

struct category_text {
    std::string_view name;
    std::string_view fix;
};

// One row per memory_category, in its order. The fixes are library-neutral: a layer that
// defines a tag of its own gives the precise one (which option, which flag).
constexpr std::array<category_text, memory_category_count> categories{{
    {"user", "free or shrink your own buffers (tag them with gpu::memory_tag::named to see "
             "which holds the most)"},
    {"parameters", "use a smaller model, or keep the parameters in FP16/BF16"},
    {"gradients", "keep the gradients in FP16/BF16, or train fewer parameters (freeze layers)"},
    {"working copy", "the low-precision copy is the size of the parameters in FP16/BF16: use a "
                     "smaller model, or train in one precision"},
    {"optimizer state", "the optimizer keeps state per parameter (two FP32 moments for "
                        "Adam-like ones): use a smaller model or an optimizer with less state"},
    {"activations", "lower the batch size (activations grow with it); a server keeps every "
                    "resident inference bucket's activations: serve fewer or smaller buckets"},
    {"scratch", "lower the batch size (the temporaries of a step grow with it)"},
    {"workspace", "lower the library's workspace budget (a smaller workspace picks slower "
                  "algorithms that need less)"},
    {"planning scratch", "lower the workspace budget of the algorithm search, or plan before "
                         "the big allocations are made"},
    {"graph pools", "each captured CUDA graph keeps its own memory: capture fewer graphs (fewer "
                    "resident inference buckets), or replay without graphs"},
    {"communicator", "the communication library's buffers grow with channels and peers: lower "
                     "its buffer size or channel count, or use fewer communicators"},
}};

const category_text& text_of(memory_category category) noexcept
{
    const auto index = static_cast<std::size_t>(category);
    return categories[index < categories.size() ? index : 0];
}

struct tag_record {
    std::string name;
    memory_category category;
    std::string fix;
};

// The process's tags: the standard ones first (ids equal to their categories), then the
// defined ones. A deque keeps records in place as it grows; the map finds a name.
class registry {
public:
    registry()
    {
        for (std::size_t i = 0; i < categories.size(); ++i) {
            const auto category = static_cast<memory_category>(i);
            records_.push_back({std::string(categories[i].name), category, {}});
            ids_.emplace(records_.back().name, static_cast<std::uint16_t>(i));
        }
    }

    std::uint16_t define(std::string_view name, memory_category category, std::string_view fix)
    {
        if (name.empty()) {
            throw std::invalid_argument("gpu::memory_tag: a tag needs a name");
        }
        const std::lock_guard lock(mutex_);
        if (const auto found = ids_.find(std::string(name)); found != ids_.end()) {
            const tag_record& existing = records_[found->second];
            if (existing.category != category) {
                throw std::invalid_argument(
                    "gpu::memory_tag: \"" + std::string(name) + "\" is already a tag of category " +
                    std::string(to_string(existing.category)) + ", not " +
                    std::string(to_string(category)) + ": give this one another name");
            }
            return found->second;
        }
        if (records_.size() >= memory_tag::max_tags) {
            throw std::invalid_argument(
                "gpu::memory_tag: the process already has " + std::to_string(records_.size()) +
                " tags, the most there can be, so \"" + std::string(name) +
                "\" cannot be defined: tags name kinds of memory, not single buffers");
        }
        records_.push_back({std::string(name), category, std::string(fix)});
        const auto id = static_cast<std::uint16_t>(records_.size() - 1);
        ids_.emplace(records_.back().name, id);
        return id;
    }

    tag_record record(std::uint16_t id) const
    {
        const std::lock_guard lock(mutex_);
        if (id >= records_.size()) {
            throw std::invalid_argument("gpu::memory_tag: no tag has id " + std::to_string(id) +
                                        " (" + std::to_string(records_.size()) +
                                        " tags are defined)");
        }
        return records_[id];
    }

private:
    mutable std::mutex mutex_;
    std::deque<tag_record> records_;
    std::unordered_map<std::string, std::uint16_t> ids_;
};

registry& tags()
{
    static registry instance;
    return instance;
}

thread_local const memory_tag_scope* innermost_scope = nullptr;

} // namespace

std::string_view to_string(memory_category category) noexcept
{
    return text_of(category).name;
}

std::string_view default_fix(memory_category category) noexcept
{
    return text_of(category).fix;
}

memory_tag memory_tag::named(std::string_view name)
{
    return define(name, memory_category::user);
}

memory_tag memory_tag::define(std::string_view name, memory_category category, std::string_view fix)
{
    return memory_tag(tags().define(name, category, fix));
}

memory_tag memory_tag::from_id(std::uint16_t id)
{
    static_cast<void>(tags().record(id)); // throws for an unknown id
    return memory_tag(id);
}

std::string memory_tag::name() const
{
    if (id_ < memory_category_count) {
        return std::string(categories[id_].name);
    }
    return tags().record(id_).name;
}

memory_category memory_tag::category() const
{
    if (id_ < memory_category_count) {
        return static_cast<memory_category>(id_);
    }
    return tags().record(id_).category;
}

std::string memory_tag::fix() const
{
    if (id_ < memory_category_count) {
        return std::string(categories[id_].fix);
    }
    tag_record record = tags().record(id_);
    return record.fix.empty() ? std::string(default_fix(record.category)) : std::move(record.fix);
}

memory_tag memory_tag_definition::operator()() const
{
    std::uint16_t id = id_.load(std::memory_order_acquire);
    if (id == 0) {
        // Two threads may both define it: the registry gives both the same id.
        id = memory_tag::define(name_, category_, fix_).id();
        id_.store(id, std::memory_order_release);
    }
    return memory_tag(id);
}

memory_tag_scope::memory_tag_scope(memory_tag tag, std::source_location where) noexcept
    : tag_(tag), where_(where), previous_(innermost_scope)
{
    innermost_scope = this;
}

memory_tag_scope::~memory_tag_scope()
{
    innermost_scope = previous_;
}

memory_tag current_memory_tag() noexcept
{
    return innermost_scope != nullptr ? innermost_scope->tag() : memory_tag::user();
}

namespace detail {
std::source_location allocation_site_or(std::source_location fallback) noexcept
{
    return innermost_scope != nullptr ? innermost_scope->where() : fallback;
}
} // namespace detail

} // namespace gpu
