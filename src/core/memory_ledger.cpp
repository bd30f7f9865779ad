// The ledger's counting: one state per device (a lock, the live pointers in an open-addressing
// table, the counts per tag, the recorded events), refusals, measured holdings.
#include <gpu/detail/enum_names.hpp>
#include <gpu/memory_ledger.hpp>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <iterator>
#include <memory>
#include <cstdio>
#include <mutex>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace gpu {
namespace {

// The live pointers of one device: open addressing with linear probing, deleted by shifting
// the entries after back (no tombstones), grown to keep the load at most a half. Faster than a
// node-based map here, because an insert allocates nothing once the table has grown.
class pointer_table {
public:
    struct slot {
        const void* key = nullptr;
        std::size_t bytes = 0;
        memory_tag tag{};
    };

    // Returns the entry that was live at @p key (replaced), if any.
    std::optional<slot> insert(const slot& entry)
    {
        if ((used_ + 1) * 2 > capacity()) {
            grow();
        }
        for (std::size_t i = home(entry.key);; i = next(i)) {
            if (slots_[i].key == nullptr) {
                slots_[i] = entry;
                ++used_;
                return std::nullopt;
            }
            if (slots_[i].key == entry.key) {
                return std::exchange(slots_[i], entry);
            }
        }
    }

    std::optional<slot> erase(const void* key) noexcept
    {
        if (used_ == 0) {
            return std::nullopt;
        }
        std::size_t hole = home(key);
        for (; slots_[hole].key != key; hole = next(hole)) {
            if (slots_[hole].key == nullptr) {
                return std::nullopt;
            }
        }
        const slot found = slots_[hole];
        // Shift back each following entry whose home is not between the hole and itself.
        for (std::size_t j = next(hole); slots_[j].key != nullptr; j = next(j)) {
            const std::size_t h = home(slots_[j].key);
            const bool stays = hole < j ? (h > hole && h <= j) : (h > hole || h <= j);
            if (!stays) {
                slots_[hole] = slots_[j];
                hole = j;
            }
        }
        slots_[hole] = slot{};
        --used_;
        return found;
    }

private:
    // The capacity is a power of two, kept as its mask: no division on the hot path.
    [[nodiscard]] std::size_t capacity() const noexcept { return slots_ ? mask_ + 1 : 0; }
    [[nodiscard]] std::size_t home(const void* key) const noexcept
    {
        auto x = reinterpret_cast<std::uintptr_t>(key);
        x ^= x >> 33;
        x *= 0xff51afd7ed558ccdULL;
        x ^= x >> 33;
        return static_cast<std::size_t>(x) & mask_;
    }
    [[nodiscard]] std::size_t next(std::size_t i) const noexcept { return (i + 1) & mask_; }
    void grow()
    {
        const std::size_t old_capacity = capacity();
        const std::size_t new_capacity = std::max<std::size_t>(64, old_capacity * 2);
        std::unique_ptr<slot[]> old = std::exchange(slots_, std::make_unique<slot[]>(new_capacity));
        mask_ = new_capacity - 1;
        used_ = 0;
        for (std::size_t i = 0; i < old_capacity; ++i) {
            if (old[i].key != nullptr) {
                static_cast<void>(insert(old[i]));
            }
        }
    }

    std::unique_ptr<slot[]> slots_;
    std::size_t mask_ = 0;
    std::size_t used_ = 0;
};

struct tag_counts {
    std::size_t current = 0;
    std::size_t peak = 0;
    std::size_t live = 0;
    std::size_t total = 0;
    std::size_t measured = 0;
};

struct device_state {
    mutable std::mutex mutex;
    pointer_table live;
    std::unordered_map<std::uint64_t, ledger_entry> holdings;
    std::vector<tag_counts> tags; // by tag id, grown on first use
    std::size_t current = 0;
    std::size_t peak = 0;
    std::vector<memory_event> events;
    std::size_t dropped = 0;

    tag_counts& counts(memory_tag tag)
    {
        if (tag.id() >= tags.size()) {
            tags.resize(static_cast<std::size_t>(tag.id()) + 1);
        }
        return tags[tag.id()];
    }
};

constexpr std::size_t state_count = static_cast<std::size_t>(memory_ledger::max_devices) + 1;

std::atomic<memory_ledger::range_name_source> range_source{nullptr};

std::uint32_t thread_number() noexcept
{
    static std::atomic<std::uint32_t> next{0};
    thread_local const std::uint32_t number = next.fetch_add(1, std::memory_order_relaxed);
    return number;
}

[[noreturn]] void throw_bad_device(const char* who, int device)
{
    throw std::invalid_argument(std::string(who) + ": device " + std::to_string(device) +
                                " is outside what the ledger counts (-1 for pinned host memory, "
                                "0 to " +
                                std::to_string(memory_ledger::max_devices - 1) + ")");
}

// Reports the first few refusals and duplicates of the process on stderr, then stays quiet: a
// loop that frees foreign pointers must not flood the output.
void report(const char* what, int device, const void* pointer, std::size_t count) noexcept
{
    constexpr std::size_t reported = 5;
    if (count <= reported) {
        std::fprintf(stderr, "cudagap: memory ledger: %s %p on device %d%s\n", what, pointer,
                     device, count == reported ? " (further ones are counted, not reported)" : "");
    }
}

} // namespace

struct memory_ledger::impl {
    std::array<device_state, state_count> devices;
    std::atomic<std::size_t> refused{0};
    std::atomic<std::size_t> duplicates{0};
    std::atomic<std::uint64_t> next_holding{1};
    std::atomic<bool> recording{false};
    std::chrono::steady_clock::time_point started{};
    std::size_t max_events = 0; // per device, read under its lock after start_recording

    device_state& state(int device, const char* who)
    {
        if (device < host || device >= max_devices) {
            throw_bad_device(who, device);
        }
        const int slot = device - host; // the host's row first, then device 0, 1, ...
        return devices[static_cast<std::size_t>(slot)];
    }
    device_state* find(int device) noexcept
    {
        if (device < host || device >= max_devices) {
            return nullptr;
        }
        const int slot = device - host;
        return &devices[static_cast<std::size_t>(slot)];
    }

    // Under the device's lock: the event, when a recording runs.
    void note(device_state& s, int device, memory_event_kind kind, memory_tag tag,
              std::size_t bytes, const void* pointer, std::size_t tag_bytes)
    {
        if (!recording.load(std::memory_order_relaxed)) {
            return;
        }
        if (s.events.size() >= max_events) {
            ++s.dropped;
            return;
        }
        memory_event event;
        event.time_ns =
            static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                           std::chrono::steady_clock::now() - started)
                                           .count());
        event.device = device;
        event.kind = kind;
        event.tag = tag;
        event.bytes = bytes;
        event.address = reinterpret_cast<std::uintptr_t>(pointer);
        event.tag_bytes = tag_bytes;
        event.thread = thread_number();
        if (const range_name_source source = range_source.load(std::memory_order_relaxed)) {
            event.range = std::string(source());
        }
        s.events.push_back(std::move(event));
    }

    // For frees: an event that cannot be kept (no host memory for it) is counted as dropped.
    void note_noexcept(device_state& s, int device, memory_event_kind kind, memory_tag tag,
                       std::size_t bytes, const void* pointer, std::size_t tag_bytes) noexcept
    {
        try {
            note(s, device, kind, tag, bytes, pointer, tag_bytes);
        } catch (...) {
            ++s.dropped;
        }
    }
};

namespace {
void count_in(device_state& s, tag_counts& c, std::size_t bytes, std::size_t measured)
{
    c.current += bytes;
    c.measured += measured;
    c.peak = std::max(c.peak, c.current);
    ++c.live;
    ++c.total;
    s.current += bytes;
    s.peak = std::max(s.peak, s.current);
}

void count_out(device_state& s, tag_counts& c, std::size_t bytes, std::size_t measured)
{
    c.current -= bytes;
    c.measured -= measured;
    --c.live;
    s.current -= bytes;
}

void sort_rows(std::vector<memory_ledger_row>& rows)
{
    std::stable_sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
        return a.current_bytes != b.current_bytes ? a.current_bytes > b.current_bytes
                                                  : a.peak_bytes > b.peak_bytes;
    });
}

// What CUDA graphs hold is read from the device: it becomes the "graph pools" row. What was
// allocated inside a capture was recorded under that tag (gpu::capture's scope) and is in the
// graphs' used memory once they run: the measured part is only what the device says beyond
// it, so that the row is the larger of the two and nothing is counted twice.
void add_graph_row(memory_ledger_snapshot& snap)
{
    const device_memory_reading& r = snap.reading;
    if (!r.known || (r.graph_used_bytes == 0 && r.graph_used_peak_bytes == 0)) {
        return;
    }
    const memory_tag tag = memory_tag::standard(memory_category::graph_pool);
    auto row = std::find_if(snap.rows.begin(), snap.rows.end(),
                            [&](const memory_ledger_row& x) { return x.tag == tag; });
    if (row == snap.rows.end()) {
        snap.rows.push_back({tag, tag.name(), tag.category(), 0, 0, 0, 0, 0});
        row = std::prev(snap.rows.end());
    }
    const std::size_t beyond =
        r.graph_used_bytes > row->current_bytes ? r.graph_used_bytes - row->current_bytes : 0;
    row->current_bytes += beyond;
    row->measured_bytes += beyond;
    row->peak_bytes = std::max(row->peak_bytes, r.graph_used_peak_bytes);
    snap.tracked_bytes += beyond;
    sort_rows(snap.rows);
}
} // namespace

memory_ledger::memory_ledger() : impl_(std::make_unique<impl>()) {}
memory_ledger::~memory_ledger() = default;

memory_ledger& memory_ledger::global() noexcept
{
    // Never destroyed (see the header). A failure to allocate this one small object at first use
    // ends the program (noexcept): nothing could be counted without it.
    // NOLINTNEXTLINE(bugprone-unhandled-exception-at-new)
    static memory_ledger* const instance = new memory_ledger();
    return *instance;
}

void memory_ledger::record_allocation(int device, const void* pointer, std::size_t bytes,
                                      memory_tag tag)
{
    if (pointer == nullptr) {
        throw std::invalid_argument("gpu::memory_ledger::record_allocation: a null pointer "
                                    "holds no memory (a 0-byte allocation is not recorded)");
    }
    device_state& s = impl_->state(device, "gpu::memory_ledger::record_allocation");
    const std::lock_guard lock(s.mutex);
    static_cast<void>(s.counts(tag)); // grows the counts (may throw) before the table changes
    if (const std::optional<pointer_table::slot> stale = s.live.insert({pointer, bytes, tag})) {
        count_out(s, s.counts(stale->tag), stale->bytes, 0);
        report("recorded again while live (its free bypassed the ledger, or two ledger "
               "resources are stacked):",
               device, pointer, impl_->duplicates.fetch_add(1, std::memory_order_relaxed) + 1);
    }
    tag_counts& c = s.counts(tag);
    count_in(s, c, bytes, 0);
    impl_->note(s, device, memory_event_kind::allocate, tag, bytes, pointer, c.current);
}

std::optional<ledger_entry> memory_ledger::record_free(int device, const void* pointer) noexcept
{
    if (pointer == nullptr) {
        return std::nullopt;
    }
    if (device_state* s = impl_->find(device)) {
        const std::lock_guard lock(s->mutex);
        if (const std::optional<pointer_table::slot> found = s->live.erase(pointer)) {
            tag_counts& c = s->counts(found->tag); // exists: the allocation grew it
            count_out(*s, c, found->bytes, 0);
            impl_->note_noexcept(*s, device, memory_event_kind::free, found->tag, found->bytes,
                                 pointer, c.current);
            return ledger_entry{found->bytes, found->tag};
        }
    }
    report("refused a free of the unknown pointer", device, pointer,
           impl_->refused.fetch_add(1, std::memory_order_relaxed) + 1);
    return std::nullopt;
}

bool memory_ledger::forget(int device, const void* pointer) noexcept
{
    device_state* s = impl_->find(device);
    if (s == nullptr || pointer == nullptr) {
        return false;
    }
    const std::lock_guard lock(s->mutex);
    const std::optional<pointer_table::slot> found = s->live.erase(pointer);
    if (!found) {
        return false;
    }
    tag_counts& c = s->counts(found->tag);
    count_out(*s, c, found->bytes, 0);
    impl_->note_noexcept(*s, device, memory_event_kind::forget, found->tag, found->bytes, pointer,
                         c.current);
    return true;
}

measured_holding memory_ledger::hold(int device, memory_tag tag, std::size_t bytes)
{
    device_state& s = impl_->state(device, "gpu::memory_ledger::hold");
    const std::uint64_t id = impl_->next_holding.fetch_add(1, std::memory_order_relaxed);
    const std::lock_guard lock(s.mutex);
    s.holdings.emplace(id, ledger_entry{bytes, tag});
    tag_counts& c = s.counts(tag);
    count_in(s, c, bytes, bytes);
    impl_->note(s, device, memory_event_kind::hold, tag, bytes, nullptr, c.current);
    return measured_holding(detail::measured_record{this, device, tag, bytes, id});
}

void memory_ledger::release_holding(int device, std::uint64_t id) noexcept
{
    device_state* s = impl_->find(device);
    if (s == nullptr) {
        return;
    }
    const std::lock_guard lock(s->mutex);
    const auto found = s->holdings.find(id);
    if (found == s->holdings.end()) {
        return;
    }
    const ledger_entry entry = found->second;
    s->holdings.erase(found);
    tag_counts& c = s->counts(entry.tag);
    count_out(*s, c, entry.bytes, entry.bytes);
    impl_->note_noexcept(*s, device, memory_event_kind::release, entry.tag, entry.bytes, nullptr,
                         c.current);
}

std::vector<memory_ledger_row> memory_ledger::rows(int device) const
{
    const device_state& s = impl_->state(device, "gpu::memory_ledger::rows");
    std::vector<std::pair<memory_tag, tag_counts>> counted;
    {
        const std::lock_guard lock(s.mutex);
        for (std::size_t id = 0; id < s.tags.size(); ++id) {
            if (s.tags[id].total != 0) {
                counted.emplace_back(memory_tag::from_id(static_cast<std::uint16_t>(id)),
                                     s.tags[id]);
            }
        }
    }
    std::vector<memory_ledger_row> rows;
    rows.reserve(counted.size());
    for (const auto& [tag, c] : counted) { // names outside the lock: the registry has its own
        rows.push_back(
            {tag, tag.name(), tag.category(), c.current, c.peak, c.live, c.total, c.measured});
    }
    sort_rows(rows);
    return rows;
}

memory_ledger_snapshot memory_ledger::snapshot(int device, device_memory_reading reading) const
{
    memory_ledger_snapshot snap;
    snap.device = device;
    snap.rows = rows(device);
    {
        const device_state& s = impl_->state(device, "gpu::memory_ledger::snapshot");
        const std::lock_guard lock(s.mutex);
        snap.tracked_bytes = s.current;
        snap.tracked_peak_bytes = s.peak;
    }
    snap.refused_frees = refused_frees();
    snap.reading = std::move(reading);
    add_graph_row(snap);
    return snap;
}

void memory_ledger::reset_peaks(int device) noexcept
{
    device_state* s = impl_->find(device);
    if (s == nullptr) {
        return;
    }
    const std::lock_guard lock(s->mutex);
    for (tag_counts& c : s->tags) {
        c.peak = c.current;
    }
    s->peak = s->current;
}

std::size_t memory_ledger::refused_frees() const noexcept
{
    return impl_->refused.load(std::memory_order_relaxed);
}

std::size_t memory_ledger::duplicate_records() const noexcept
{
    return impl_->duplicates.load(std::memory_order_relaxed);
}

void memory_ledger::start_recording(std::size_t max_events)
{
    // Every device's lock is taken in turn: an allocation on a device sees either no recording
    // or the whole new one (its initial levels already noted).
    std::array<std::unique_lock<std::mutex>, state_count> locks;
    for (std::size_t i = 0; i < state_count; ++i) {
        locks[i] = std::unique_lock(impl_->devices[i].mutex);
    }
    impl_->started = std::chrono::steady_clock::now();
    impl_->max_events = max_events;
    impl_->recording.store(true, std::memory_order_relaxed);
    for (std::size_t i = 0; i < state_count; ++i) {
        device_state& s = impl_->devices[i];
        s.events.clear();
        s.dropped = 0;
        for (std::size_t id = 0; id < s.tags.size(); ++id) {
            if (s.tags[id].current != 0) {
                impl_->note(s, static_cast<int>(i) - 1, memory_event_kind::initial,
                            memory_tag::from_id(static_cast<std::uint16_t>(id)), s.tags[id].current,
                            nullptr, s.tags[id].current);
            }
        }
    }
}

bool memory_ledger::recording() const noexcept
{
    return impl_->recording.load(std::memory_order_relaxed);
}

std::pair<std::vector<memory_event>, std::size_t> memory_ledger::stop_recording()
{
    std::vector<memory_event> events;
    std::size_t dropped = 0;
    std::array<std::unique_lock<std::mutex>, state_count> locks;
    for (std::size_t i = 0; i < state_count; ++i) {
        locks[i] = std::unique_lock(impl_->devices[i].mutex);
    }
    impl_->recording.store(false, std::memory_order_relaxed);
    for (device_state& s : impl_->devices) {
        std::move(s.events.begin(), s.events.end(), std::back_inserter(events));
        s.events.clear();
        s.events.shrink_to_fit();
        dropped += std::exchange(s.dropped, 0);
    }
    // Events of one device are in time order already; merging the devices needs a sort, stable
    // so that events with the same time keep their order.
    std::stable_sort(
        events.begin(), events.end(),
        [](const memory_event& a, const memory_event& b) { return a.time_ns < b.time_ns; });
    return {std::move(events), dropped};
}

void memory_ledger::set_range_name_source(range_name_source source) noexcept
{
    range_source.store(source, std::memory_order_relaxed);
}

constexpr gpu::detail::enum_name<memory_event_kind> memory_event_kind_names[] = {
    {memory_event_kind::initial, "initial"}, {memory_event_kind::allocate, "allocate"},
    {memory_event_kind::free, "free"},       {memory_event_kind::forget, "forget"},
    {memory_event_kind::hold, "hold"},       {memory_event_kind::release, "release"}};
std::string_view to_string(memory_event_kind kind) noexcept
{
    return gpu::detail::name_of(memory_event_kind_names, kind);
}

namespace detail {
void check_ledger_device(int device)
{
    if (device < memory_ledger::host || device >= memory_ledger::max_devices) {
        throw_bad_device("gpu::ledger_resource", device);
    }
}

void release_measured(const measured_record& record) noexcept
{
    if (record.ledger != nullptr) {
        record.ledger->release_holding(record.device, record.id);
    }
}
} // namespace detail

} // namespace gpu
