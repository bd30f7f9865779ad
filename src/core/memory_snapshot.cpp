// The ledger's snapshot: reading the device's numbers, the table as text, and the
// out-of-memory advice made from it.
#include <gpu/device.hpp>
#include <gpu/error.hpp>
#include <gpu/memory_ledger.hpp>

#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

namespace gpu {
namespace {

// Reads a device's numbers with it current, and restores the caller's device, without
// throwing: a snapshot is also taken while an out-of-memory error is being built.
class reader {
public:
    explicit reader(int device) noexcept : on_(detail::device_from_cuda(device), std::nothrow)
    {
        check("cudaGetDevice/cudaSetDevice (making the device being read current)", on_.status());
    }
    reader(const reader&) = delete;
    reader& operator=(const reader&) = delete;
    ~reader() = default;

    bool ok() const noexcept { return reason_.empty(); }
    const std::string& reason() const noexcept { return reason_; }

    // Whether @p status is success; otherwise notes why the numbers are unknown.
    bool check(const char* api, cudaError_t status) noexcept
    {
        if (status != cudaSuccess) {
            static_cast<void>(cudaGetLastError());
            failed(api, status);
        }
        return ok();
    }

private:
    void failed(const char* api, cudaError_t status) noexcept
    {
        if (!reason_.empty()) {
            return;
        }
        try {
            reason_ = std::string(api) + ": " + cuda_status_name(status) + " (" +
                      cuda_status_message(status) + ")";
        } catch (...) {
            reason_ = "out of host memory while reading the device";
        }
    }

    std::string reason_;
    scoped_device on_; // restores the caller's device when the reader goes
};

std::size_t graph_attribute(int device, cudaGraphMemAttributeType which, reader& r)
{
    std::uint64_t value = 0;
    r.check("cudaDeviceGetGraphMemAttribute",
            cudaDeviceGetGraphMemAttribute(device, which, &value));
    return static_cast<std::size_t>(value);
}

std::size_t pool_attribute(cudaMemPool_t pool, cudaMemPoolAttr which, reader& r)
{
    std::uint64_t value = 0;
    r.check("cudaMemPoolGetAttribute", cudaMemPoolGetAttribute(pool, which, &value));
    return static_cast<std::size_t>(value);
}

void read_pool(int device, device_memory_reading& out, reader& r)
{
    int supported = 0;
    if (!r.check("cudaDeviceGetAttribute(MemoryPoolsSupported)",
                 cudaDeviceGetAttribute(&supported, cudaDevAttrMemoryPoolsSupported, device)) ||
        supported == 0) {
        return;
    }
    cudaMemPool_t pool = nullptr;
    if (r.check("cudaDeviceGetMemPool", cudaDeviceGetMemPool(&pool, device))) {
        out.pool_reserved_bytes = pool_attribute(pool, cudaMemPoolAttrReservedMemCurrent, r);
        out.pool_used_bytes = pool_attribute(pool, cudaMemPoolAttrUsedMemCurrent, r);
    }
}

std::string percent(std::size_t part, std::size_t whole)
{
    if (whole == 0) {
        return {};
    }
    char text[16];
    std::snprintf(text, sizeof text, " (%.0f%%)",
                  100.0 * static_cast<double>(part) / static_cast<double>(whole));
    return text;
}

std::string signed_bytes(long long bytes)
{
    if (bytes >= 0) {
        return format_bytes(static_cast<std::size_t>(bytes));
    }
    std::string text = format_bytes(static_cast<std::size_t>(-bytes));
    text.insert(text.begin(), '-');
    return text;
}

std::string padded(std::string text, std::size_t width, bool right)
{
    if (text.size() >= width) {
        return text;
    }
    const std::string fill(width - text.size(), ' ');
    return right ? fill + text : text + fill;
}

std::string where_name(int device)
{
    return device == memory_ledger::host ? std::string("pinned host memory")
                                         : "device " + std::to_string(device);
}

} // namespace

device_memory_reading read_device_memory(int device) noexcept
{
    device_memory_reading out;
    reader r(device);
    if (r.ok() && r.check("cudaMemGetInfo", cudaMemGetInfo(&out.free_bytes, &out.total_bytes))) {
        read_pool(device, out, r);
        out.graph_reserved_bytes = graph_attribute(device, cudaGraphMemAttrReservedMemCurrent, r);
        out.graph_used_bytes = graph_attribute(device, cudaGraphMemAttrUsedMemCurrent, r);
        out.graph_used_peak_bytes = graph_attribute(device, cudaGraphMemAttrUsedMemHigh, r);
    }
    if (!r.ok()) {
        device_memory_reading unknown;
        try {
            unknown.reason = r.reason();
        } catch (...) {
            // the reason is a courtesy
        }
        return unknown;
    }
    out.known = true;
    return out;
}

std::size_t memory_ledger_snapshot::pool_unused_bytes() const noexcept
{
    const device_memory_reading& r = reading;
    const auto unused = [](std::size_t reserved, std::size_t used) {
        return reserved > used ? reserved - used : 0;
    };
    return unused(r.pool_reserved_bytes, r.pool_used_bytes) +
           unused(r.graph_reserved_bytes, r.graph_used_bytes);
}

std::optional<long long> memory_ledger_snapshot::untracked_bytes() const noexcept
{
    if (!reading.known || reading.total_bytes < reading.free_bytes) {
        return std::nullopt;
    }
    const auto used = static_cast<long long>(reading.total_bytes - reading.free_bytes);
    return used - static_cast<long long>(tracked_bytes) -
           static_cast<long long>(pool_unused_bytes());
}

std::string memory_ledger_snapshot::to_text() const
{
    std::size_t width = 28;
    for (const memory_ledger_row& row : rows) {
        width = std::max(width, row.name.size() + (row.measured_bytes != 0 ? 11 : 0) + 2);
    }
    const auto line = [&](std::string name, const std::string& a, const std::string& b,
                          const std::string& c, const std::string& d) {
        return "  " + padded(std::move(name), width, false) + padded(a, 12, true) +
               padded(b, 13, true) + padded(c, 8, true) + padded(d, 13, true) + "\n";
    };
    std::string text = "memory ledger, " + where_name(device);
    if (reading.known) {
        text += ": " + format_bytes(reading.total_bytes) + " total, " +
                format_bytes(reading.total_bytes - reading.free_bytes) + " used by every process";
    }
    text += "\n" + line("tag", "current", "peak", "live", "allocations");
    for (const memory_ledger_row& row : rows) {
        text += line(row.name + (row.measured_bytes != 0 ? " (measured)" : ""),
                     format_bytes(row.current_bytes), format_bytes(row.peak_bytes),
                     std::to_string(row.live_allocations), std::to_string(row.total_allocations));
    }
    text += line("tracked by the ledger", format_bytes(tracked_bytes),
                 format_bytes(tracked_peak_bytes), "", "");
    if (device == memory_ledger::host) {
        return text;
    }
    if (!reading.known) {
        return text + "  device not read (" + reading.reason +
               "): the pool and untracked lines need it\n";
    }
    text += line("reserved by pools, unused", format_bytes(pool_unused_bytes()), "", "", "");
    text += line("not tracked", signed_bytes(untracked_bytes().value_or(0)), "", "", "") +
            "  (not tracked: the CUDA context, the libraries' own memory, other processes)\n";
    if (refused_frees != 0) {
        text += "  " + std::to_string(refused_frees) + " frees of unknown pointers refused\n";
    }
    return text;
}

namespace {

// The holders' part: "who holds device 0: a 1.00 GiB (40%), ...; the pools keep ...".
std::string holders_text(const memory_ledger_snapshot& snapshot, std::size_t holders)
{
    const device_memory_reading& r = snapshot.reading;
    const std::size_t used = r.known ? r.total_bytes - r.free_bytes : snapshot.tracked_bytes;
    std::string text = "who holds " + where_name(snapshot.device) + ": ";
    std::size_t named = 0;
    for (const memory_ledger_row& row : snapshot.rows) {
        if (named == holders || row.current_bytes == 0) {
            break;
        }
        text += (named++ == 0 ? "" : ", ") + row.name + " " + format_bytes(row.current_bytes) +
                percent(row.current_bytes, used);
    }
    if (named == 0) {
        text += "nothing the ledger tracks";
    }
    if (r.known) {
        text += "; the pools keep " + format_bytes(snapshot.pool_unused_bytes()) +
                " reserved but unused; " + signed_bytes(snapshot.untracked_bytes().value_or(0)) +
                " is not tracked";
    }
    return text;
}

// The fix of the largest holder: the pools' cache, memory outside cudagap, or a tag.
std::string largest_fix(const memory_ledger_snapshot& snapshot, std::size_t requested_bytes,
                        const memory_ledger_row*& largest)
{
    const bool known = snapshot.reading.known;
    const std::size_t cached = snapshot.pool_unused_bytes();
    const long long untracked = snapshot.untracked_bytes().value_or(0);
    const std::size_t top = snapshot.rows.empty() ? 0 : snapshot.rows.front().current_bytes;
    largest = nullptr;
    if (known && cached > 0 && (cached >= top || cached >= requested_bytes) &&
        static_cast<long long>(cached) >= untracked) {
        return "; fix: trim the pool (gpu::trim_memory_pool returns its " + format_bytes(cached) +
               " to the device; a lower gpu::memory_pool release threshold keeps less)";
    }
    if (known && untracked > 0 && static_cast<std::size_t>(untracked) > top) {
        return "; fix: most of the memory is held outside cudagap: by other processes "
               "(nvidia-smi lists them), the CUDA context or the libraries' own allocations; "
               "free it there, or use another GPU";
    }
    if (top == 0) {
        return {};
    }
    largest = &snapshot.rows.front();
    return "; fix for " + largest->name + ", the largest: " + largest->tag.fix();
}

} // namespace

std::string out_of_memory_holders(const memory_ledger_snapshot& snapshot,
                                  std::size_t requested_bytes,
                                  std::optional<memory_tag> request_tag, std::size_t holders)
{
    const memory_ledger_row* largest = nullptr;
    std::string text =
        holders_text(snapshot, holders) + largest_fix(snapshot, requested_bytes, largest);
    if (request_tag && (largest == nullptr || largest->tag != *request_tag)) {
        text += "; the request was for " + request_tag->name() + ": " + request_tag->fix();
    }
    return text;
}

std::string out_of_memory_holders(int device, std::size_t requested_bytes) noexcept
{
    try {
        return out_of_memory_holders(
            memory_ledger::global().snapshot(device, read_device_memory(device)), requested_bytes,
            current_memory_tag());
    } catch (...) {
        return {}; // the advice is a courtesy: the error itself must still be thrown
    }
}

memory_ledger_snapshot memory_ledger::snapshot(device dev)
{
    return global().snapshot(dev.id(), read_device_memory(dev.id()));
}

} // namespace gpu
