/// @file memory_trace.hpp
/// @brief The memory timeline: `memory_trace` records a ledger's allocations, frees and
/// holdings while it lives and writes them as Chrome trace event JSON, which Perfetto
/// (ui.perfetto.dev) and `chrome://tracing` open: one process per device ("device 0 memory"),
/// one counter track per tag (its bytes over time), and an instant event per allocation and
/// free with its size, tag, address, thread and NVTX range. `bench/plot_memory_trace.py` turns
/// the file into a stacked-area picture per tag. docs/memory.md reads one.
///
/// The file is written to a temporary name beside it, flushed, and renamed over it: a reader
/// never sees half a trace, and a run that fails leaves the previous file as it was.
#pragma once

#include <gpu/memory_ledger.hpp>

#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace gpu {

/// @brief Records while it lives; `write()` (or the destructor) writes the file.
///
/// @code
/// {
///     gpu::memory_trace trace("memory.json");   // recording starts
///     train(model, data);
/// }                                             // memory.json written
/// @endcode
class memory_trace {
public:
    /// @brief Starts recording @p ledger for @p file, keeping at most @p max_events events
    /// (later ones are counted in the file's `dropped_events`). One recording per ledger: a
    /// second trace on the same ledger restarts it.
    explicit memory_trace(std::filesystem::path file,
                          memory_ledger& ledger = memory_ledger::global(),
                          std::size_t max_events = std::size_t{1} << 24);
    /// @brief Writes the file unless `write()` did; a failure is reported on stderr.
    ~memory_trace();
    memory_trace(const memory_trace&) = delete;
    memory_trace& operator=(const memory_trace&) = delete;

    /// @brief Stops recording and writes the file. Does nothing the second time.
    /// @throws std::filesystem::filesystem_error when the file cannot be written (the target
    /// is then untouched)
    void write();

    /// @brief The file.
    [[nodiscard]] const std::filesystem::path& file() const noexcept { return file_; }

private:
    std::filesystem::path file_;
    memory_ledger* ledger_;
    bool written_ = false;
};

/// @brief The Chrome trace event JSON of @p events (from `memory_ledger::stop_recording`),
/// noting @p dropped events that were not kept.
[[nodiscard]] std::string memory_trace_json(std::span<const memory_event> events,
                                            std::size_t dropped = 0);

/// @brief Writes `memory_trace_json(events, dropped)` to @p file through a temporary file
/// beside it, flushed and renamed over it.
/// @throws std::filesystem::filesystem_error naming the file when it cannot
void write_memory_trace(const std::filesystem::path& file, std::span<const memory_event> events,
                        std::size_t dropped = 0);

} // namespace gpu
