/// @file memory_ledger.hpp
/// @brief Who holds the GPU's memory: `memory_ledger` counts every tracked allocation by device
/// and tag (current and peak bytes, live and total allocations), and `memory_ledger::snapshot`
/// sets those counts beside the device's own numbers (the pool's reserved-but-unused memory,
/// what nobody tracks) as a table, in text (`to_text`) and JSON (`<gpu/json.hpp>`).
///
/// Allocations reach the ledger through `gpu::ledger_resource` (the default resource of the
/// devices is one); memory a library allocates for itself is measured around the call that
/// allocates it (`hold_growth`) and held as a `measured_holding`. One lock per device guards its
/// counts and its table of live pointers: an allocation and its free cost about what an
/// uncontended mutex costs twice (bench/alloc, "ledger" cases).
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/device.hpp>
#include <gpu/memory_tag.hpp>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gpu {

/// @brief One tag's line of a device in the ledger.
struct memory_ledger_row {
    memory_tag tag{};                  ///< the tag
    std::string name{};                ///< its name
    memory_category category{};        ///< its category
    std::size_t current_bytes = 0;     ///< held now (allocations and measured holdings)
    std::size_t peak_bytes = 0;        ///< the most held at once since start or reset
    std::size_t live_allocations = 0;  ///< allocations and holdings alive now
    std::size_t total_allocations = 0; ///< allocations and holdings made since start
    std::size_t measured_bytes = 0;    ///< of `current_bytes`, measured rather than allocated
};

/// @brief What the device says about its memory, read for a snapshot; all zeros with
/// `known == false` (and the reason) where it could not be read (no driver, no such device).
struct device_memory_reading {
    bool known = false;                    ///< the numbers below were read
    std::string reason{};                  ///< why not, when not
    std::size_t total_bytes = 0;           ///< the device's memory (`cudaMemGetInfo`)
    std::size_t free_bytes = 0;            ///< free now, for every process
    std::size_t pool_reserved_bytes = 0;   ///< held by the device's current memory pool
    std::size_t pool_used_bytes = 0;       ///< of which handed out
    std::size_t graph_reserved_bytes = 0;  ///< held for CUDA graphs' allocations
    std::size_t graph_used_bytes = 0;      ///< of which in use by graphs
    std::size_t graph_used_peak_bytes = 0; ///< high-water mark of `graph_used_bytes`
};

/// @brief Reads @p device's memory, its current pool and its graphs' memory. Never throws: a
/// failure is `known == false` with the reason.
[[nodiscard]] device_memory_reading read_device_memory(int device) noexcept;

/// @brief The ledger of one device with the device's own numbers: the table of
/// `memory_ledger::snapshot`, its extra lines, and the text of it.
struct memory_ledger_snapshot {
    int device = 0;                        ///< the device (`memory_ledger::host`: pinned memory)
    std::vector<memory_ledger_row> rows{}; ///< tags that held memory, the largest first
    std::size_t tracked_bytes = 0;         ///< the rows' current bytes together
    std::size_t tracked_peak_bytes = 0;    ///< the most the rows held together at once
    std::size_t refused_frees = 0;         ///< frees of pointers the ledger did not know
    device_memory_reading reading{};       ///< the device's numbers

    /// @brief Reserved by the pools (the current pool and the graphs') but handed to nobody:
    /// cache and fragmentation, what `gpu::trim_memory_pool` gives back.
    [[nodiscard]] std::size_t pool_unused_bytes() const noexcept;

    /// @brief Used on the device but in no row and no pool: the CUDA context, the libraries'
    /// own allocations, other processes, and memory allocated around cudagap. Negative when the
    /// ledger counts more than the device says is used; empty when the device was not read.
    [[nodiscard]] std::optional<long long> untracked_bytes() const noexcept;

    /// @brief The table as text: one line per row, then the pool and untracked lines.
    [[nodiscard]] std::string to_text() const;
};

/// @brief The text an out-of-memory error adds, from a snapshot of the failing device: the top
/// holders by tag with their share of the used memory, the pools' reserved-but-unused bytes,
/// the untracked bytes, and the fix of the largest holder (a tag's own fix, its category's, or
/// "trim the pool" when the pools' cache is the largest or alone holds the request), then the
/// fix of the request's own tag when that is another. One line, without a trailing period.
/// @param snapshot the device's ledger
/// @param requested_bytes the allocation that failed (0: not known)
/// @param request_tag the tag it was made under (the allocating thread's `current_memory_tag`),
/// if known
/// @param holders how many holders to name
[[nodiscard]] std::string out_of_memory_holders(const memory_ledger_snapshot& snapshot,
                                                std::size_t requested_bytes = 0,
                                                std::optional<memory_tag> request_tag = {},
                                                std::size_t holders = 3);

/// @brief `out_of_memory_holders` of the process's ledger on @p device, read now, for the
/// allocation of @p requested_bytes under the calling thread's tag: the line an out-of-memory
/// error's hint gains (the core's and the library wrappers'). Empty when it cannot be made
/// (no host memory for it); never throws.
[[nodiscard]] std::string out_of_memory_holders(int device,
                                                std::size_t requested_bytes = 0) noexcept;

/// @brief What the ledger knew of a pointer it was told was freed.
struct ledger_entry {
    std::size_t bytes = 0; ///< the size recorded at allocation
    memory_tag tag{};      ///< the tag recorded at allocation
};

class memory_ledger;

namespace detail {
/// @brief Throws `std::invalid_argument` when the ledger does not count @p device (outside
/// [`memory_ledger::host`, `memory_ledger::max_devices`)).
void check_ledger_device(int device);

/// @brief A measured holding as `measured_holding` owns it.
struct measured_record {
    memory_ledger* ledger = nullptr; ///< where it is held
    int device = 0;                  ///< on which device
    memory_tag tag{};                ///< under which tag
    std::size_t bytes = 0;           ///< how much
    std::uint64_t id = 0;            ///< the ledger's number for it

    friend bool operator==(const measured_record&, const measured_record&) = default;
};
/// @brief Takes a holding out of its ledger.
void release_measured(const measured_record& record) noexcept;
/// @brief Releases through `release_measured`.
struct measured_deleter {
    void operator()(const measured_record& record) const noexcept { release_measured(record); }
};
} // namespace detail

/// @brief Memory measured rather than allocated (a library's own buffers), held in the ledger
/// until this is destroyed or `release`d. Move-only.
class measured_holding {
public:
    /// @brief Holds nothing.
    measured_holding() noexcept = default;
    /// @brief Takes @p other's holding.
    /// @post `other.bytes() == 0`
    measured_holding(measured_holding&& other) noexcept = default;
    /// @brief Releases its own holding, then takes @p other's.
    /// @post `other.bytes() == 0`
    measured_holding& operator=(measured_holding&& other) noexcept = default;
    measured_holding(const measured_holding&) = delete;
    measured_holding& operator=(const measured_holding&) = delete;
    /// @brief Releases the holding.
    ~measured_holding() = default;

    /// @brief Takes the bytes out of the ledger now. Does nothing the second time.
    void release() noexcept { record_.reset(); }
    /// @brief The bytes held (0 once released or moved from).
    [[nodiscard]] std::size_t bytes() const noexcept { return record_.get().bytes; }
    /// @brief The device they are held on.
    [[nodiscard]] int device() const noexcept { return record_.get().device; }
    /// @brief The tag they are held under.
    [[nodiscard]] memory_tag tag() const noexcept { return record_.get().tag; }

private:
    friend class memory_ledger;
    explicit measured_holding(const detail::measured_record& record) noexcept : record_(record) {}

    detail::unique_handle<detail::measured_record, detail::measured_deleter> record_;
};

/// @brief What happened to one allocation, as a recording (`memory_ledger::start_recording`)
/// keeps it for the timeline (`<gpu/memory_trace.hpp>`).
enum class memory_event_kind : std::uint8_t {
    initial,  ///< the tag's bytes when the recording started
    allocate, ///< an allocation was recorded
    free,     ///< an allocation was freed
    forget,   ///< an allocation left cudagap without a free (`device_buffer::release`)
    hold,     ///< measured memory was added
    release,  ///< measured memory was released
};

/// @brief `"initial"`, `"allocate"`, `"free"`, `"forget"`, `"hold"` or `"release"`.
[[nodiscard]] std::string_view to_string(memory_event_kind kind) noexcept;

/// @brief One event of a recording.
struct memory_event {
    std::uint64_t time_ns = 0;                            ///< since the recording started
    int device = 0;                                       ///< where
    memory_event_kind kind = memory_event_kind::allocate; ///< what happened
    memory_tag tag{};                                     ///< under which tag
    std::size_t bytes = 0;                                ///< how many bytes
    std::uintptr_t address = 0;                           ///< the pointer (0 for measured memory)
    std::size_t tag_bytes = 0; ///< the tag's current bytes on the device after
    std::uint32_t thread = 0;  ///< the recording's number for the thread
    std::string range{};       ///< the NVTX range it happened in, if known
};

/// @brief The ledger: per device and tag, the bytes held now, the peak, the live and total
/// allocation counts; the live pointers, so that a free matches its allocation. Thread-safe.
///
/// `global()` is the process's ledger, the one the default resources record in and that
/// `snapshot(device)` reads; other instances are for tests and for code that wants its own.
///
/// **A free of a pointer the ledger does not know is refused**: `record_free` returns nothing,
/// changes no count, counts a refusal (`refused_frees`, in every snapshot) and reports the first
/// few on stderr; `gpu::ledger_resource` then does not pass the free on, because a pointer it
/// never handed out (or already freed) may be another owner's memory. The check is the lookup
/// the free needs anyway to find the allocation's size and tag: it costs nothing more.
class memory_ledger {
public:
    /// @brief The device number under which pinned host memory is counted.
    static constexpr int host = -1;
    /// @brief Devices 0 to `max_devices - 1` can be counted.
    static constexpr int max_devices = 64;
    /// @brief A function that names the calling thread's innermost NVTX range (empty: none).
    using range_name_source = std::string_view (*)() noexcept;

    /// @brief An empty ledger.
    memory_ledger();
    /// @brief Forgets everything (memory still held is not freed).
    ~memory_ledger();
    memory_ledger(const memory_ledger&) = delete;
    memory_ledger& operator=(const memory_ledger&) = delete;

    /// @brief The process's ledger. Never destroyed, so that buffers freed at exit can reach it.
    [[nodiscard]] static memory_ledger& global() noexcept;

    /// @brief Records that @p pointer holds @p bytes under @p tag on @p device. A pointer
    /// already live there is replaced (its free was missed: the allocator handed it out again),
    /// and the duplicate is counted and reported.
    /// @throws std::invalid_argument for a null @p pointer or a device outside
    /// [`host`, `max_devices`)
    void record_allocation(int device, const void* pointer, std::size_t bytes, memory_tag tag);

    /// @brief Records that @p pointer was freed; returns what it held, or nothing (refused: see
    /// the class) when @p device has no live allocation there. A null pointer is refused
    /// silently (freeing null frees nothing).
    [[nodiscard]] std::optional<ledger_entry> record_free(int device, const void* pointer) noexcept;

    /// @brief Stops counting @p pointer without a free (its owner gave it away); returns
    /// whether it was live.
    bool forget(int device, const void* pointer) noexcept;

    /// @brief Holds @p bytes of measured memory under @p tag on @p device until the result is
    /// destroyed.
    /// @throws std::invalid_argument for a device outside [`host`, `max_devices`)
    [[nodiscard]] measured_holding hold(int device, memory_tag tag, std::size_t bytes);

    /// @brief Runs @p work and holds what @p dev's used memory grew by meanwhile (0 when it
    /// shrank): for memory a library allocates for itself, such as a communicator's. Other
    /// threads' allocations on the device during @p work are counted too.
    /// @throws gpu::cuda_error when the device's memory cannot be read (before @p work runs);
    /// whatever @p work throws
    template <class Work>
    [[nodiscard]] measured_holding hold_growth(device dev, memory_tag tag, Work&& work)
    {
        const std::size_t before = dev.memory().used_bytes();
        std::forward<Work>(work)();
        const std::size_t after = dev.memory().used_bytes();
        return hold(dev.id(), tag, after > before ? after - before : 0);
    }

    /// @brief The rows of @p device: every tag that held memory since start, the largest first.
    [[nodiscard]] std::vector<memory_ledger_row> rows(int device) const;

    /// @brief The rows of @p device beside @p reading (what `read_device_memory` gave).
    [[nodiscard]] memory_ledger_snapshot snapshot(int device, device_memory_reading reading) const;

    /// @brief The process's ledger for @p dev beside what the device says (one call: the
    /// table behind `cudagap-vram` and the out-of-memory advice).
    [[nodiscard]] static memory_ledger_snapshot snapshot(device dev);

    /// @brief Restarts @p device's peaks from the current bytes.
    void reset_peaks(int device) noexcept;

    /// @brief Frees of unknown pointers refused since start, on every device.
    [[nodiscard]] std::size_t refused_frees() const noexcept;

    /// @brief Pointers recorded while already live, since start, on every device.
    [[nodiscard]] std::size_t duplicate_records() const noexcept;

    /// @brief Starts keeping an event per allocation, free and holding, plus each tag's bytes
    /// now (`initial` events), for at most @p max_events events (then later ones are counted,
    /// not kept). A recording already running starts again, empty.
    void start_recording(std::size_t max_events = std::size_t{1} << 24);

    /// @brief Whether a recording is running.
    [[nodiscard]] bool recording() const noexcept;

    /// @brief Ends the recording; its events, by time, and the number dropped past the limit.
    [[nodiscard]] std::pair<std::vector<memory_event>, std::size_t> stop_recording();

    /// @brief Sets where recorded events take their NVTX range's name from (null: nowhere).
    /// The hook for `gpu::nvtx`: it installs a function that names the thread's innermost
    /// range while NVTX ranges are on.
    static void set_range_name_source(range_name_source source) noexcept;

private:
    friend void detail::release_measured(const detail::measured_record& record) noexcept;
    void release_holding(int device, std::uint64_t id) noexcept;

    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace gpu
