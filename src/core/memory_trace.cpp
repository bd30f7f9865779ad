// The memory timeline as Chrome trace event JSON, written by hand (the core does not need
// nlohmann-json) and atomically (a temporary file, flushed, renamed).
#include <gpu/memory_trace.hpp>
#include <gpu/version.hpp>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <set>
#include <string_view>
#include <system_error>
#include <unordered_map>
#include <utility>

#include <fcntl.h>
#include <unistd.h>

namespace gpu {
namespace {

// Appends @p text as a JSON string: quotes, backslashes and control characters escaped, and
// bytes that are not UTF-8 (a tag or range name in another encoding) replaced by U+FFFD, so
// that a strict parser reads every trace.
void append_string(std::string& out, std::string_view text)
{
    out += '"';
    for (std::size_t i = 0; i < text.size();) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
            ++i;
        } else if (c < 0x20) {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
            out += escaped;
            ++i;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
            ++i;
        } else {
            const std::size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 ? 2 : 0;
            bool valid = length != 0 && c < 0xF5 && i + length <= text.size();
            for (std::size_t k = 1; valid && k < length; ++k) {
                valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
            }
            if (valid) {
                out.append(text.substr(i, length));
                i += length;
            } else {
                out += "\\ufffd";
                ++i;
            }
        }
    }
    out += '"';
}

// One process per place: pinned host memory is 1, device d is d + 2 (pids must not be 0).
int pid_of(int device)
{
    return device + 2;
}

std::string place_name(int device)
{
    return device == memory_ledger::host ? std::string("pinned host memory")
                                         : "device " + std::to_string(device) + " memory";
}

void append_timestamp(std::string& out, std::uint64_t ns)
{
    char text[40];
    std::snprintf(text, sizeof text, "%llu.%03llu", static_cast<unsigned long long>(ns / 1000),
                  static_cast<unsigned long long>(ns % 1000));
    out += text;
}

void append_metadata(std::string& out, const char* what, int pid, std::uint32_t tid,
                     const std::string& name)
{
    out += "{\"name\":\"";
    out += what;
    out += "\",\"ph\":\"M\",\"pid\":" + std::to_string(pid) + ",\"tid\":" + std::to_string(tid) +
           ",\"args\":{\"name\":";
    append_string(out, name);
    out += "}},\n";
}

// The counter sample of the event's tag (the tag's bytes after it), on the device's process.
void append_counter(std::string& out, const memory_event& e, const std::string& tag)
{
    out += "{\"name\":";
    append_string(out, tag);
    out += ",\"cat\":\"memory\",\"ph\":\"C\",\"ts\":";
    append_timestamp(out, e.time_ns);
    out += ",\"pid\":" + std::to_string(pid_of(e.device)) +
           ",\"args\":{\"bytes\":" + std::to_string(e.tag_bytes) + "}},\n";
}

// The instant event of an allocation, free or holding, on its thread's track.
void append_instant(std::string& out, const memory_event& e, const std::string& tag)
{
    out += "{\"name\":";
    append_string(out, std::string(to_string(e.kind)) + " " + tag);
    out += ",\"cat\":\"memory\",\"ph\":\"i\",\"s\":\"t\",\"ts\":";
    append_timestamp(out, e.time_ns);
    out += ",\"pid\":" + std::to_string(pid_of(e.device)) +
           ",\"tid\":" + std::to_string(e.thread + 1) + ",\"args\":{\"kind\":\"" +
           std::string(to_string(e.kind)) + "\",\"tag\":";
    append_string(out, tag);
    char address[24];
    std::snprintf(address, sizeof address, "0x%llx", static_cast<unsigned long long>(e.address));
    out += ",\"bytes\":" + std::to_string(e.bytes) +
           ",\"tag_bytes\":" + std::to_string(e.tag_bytes) + ",\"address\":\"" + address +
           "\",\"range\":";
    append_string(out, e.range);
    out += "}},\n";
}

// Writes a file atomically: a new temporary file beside the target (created exclusively),
// written, flushed to the disk, then renamed over the target; removed on every failure.
class atomic_file {
public:
    explicit atomic_file(std::filesystem::path target) : target_(std::move(target))
    {
        static std::atomic<unsigned> counter{0};
        for (int attempt = 0; attempt < 100 && fd_ < 0; ++attempt) {
            temporary_ = target_;
            temporary_ += ".tmp" + std::to_string(::getpid()) + "." + std::to_string(counter++);
            fd_ = ::open(temporary_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd_ < 0 && errno != EEXIST) {
                break;
            }
        }
        if (fd_ < 0) {
            fail("cannot create a temporary file beside the target", errno);
        }
    }
    atomic_file(const atomic_file&) = delete;
    atomic_file& operator=(const atomic_file&) = delete;
    ~atomic_file()
    {
        if (fd_ >= 0) {
            ::close(fd_);
        }
        if (!committed_ && !temporary_.empty()) {
            ::unlink(temporary_.c_str());
        }
    }

    void write(std::string_view bytes)
    {
        while (!bytes.empty()) {
            const ::ssize_t written = ::write(fd_, bytes.data(), bytes.size());
            if (written < 0 && errno == EINTR) {
                continue;
            }
            if (written < 0) {
                fail("cannot write the temporary file", errno);
            }
            bytes.remove_prefix(static_cast<std::size_t>(written));
        }
    }

    void commit()
    {
        if (::fsync(fd_) != 0) {
            fail("cannot flush the temporary file to the disk", errno);
        }
        if (::close(std::exchange(fd_, -1)) != 0) {
            fail("cannot close the temporary file", errno);
        }
        if (::rename(temporary_.c_str(), target_.c_str()) != 0) {
            fail("cannot rename the temporary file over the target", errno);
        }
        committed_ = true;
    }

private:
    [[noreturn]] void fail(const char* what, int error) const
    {
        throw std::filesystem::filesystem_error(std::string("gpu::write_memory_trace: ") + what,
                                                target_, temporary_,
                                                std::error_code(error, std::generic_category()));
    }

    std::filesystem::path target_;
    std::filesystem::path temporary_;
    int fd_ = -1;
    bool committed_ = false;
};

} // namespace

std::string memory_trace_json(std::span<const memory_event> events, std::size_t dropped)
{
    std::unordered_map<std::uint16_t, std::string> names; // once per tag, not per event
    std::set<int> places;
    std::set<std::pair<int, std::uint32_t>> threads;
    std::string out = "{\"traceEvents\":[\n";
    for (const memory_event& e : events) {
        auto [name, added] = names.try_emplace(e.tag.id());
        if (added) {
            name->second = e.tag.name();
        }
        places.insert(e.device);
        // The instant first, then the counter sample it leads to: a reader replaying the
        // events in file order sees each sample after the change that made it.
        if (e.kind != memory_event_kind::initial) {
            threads.emplace(e.device, e.thread);
            append_instant(out, e, name->second);
        }
        append_counter(out, e, name->second);
    }
    for (const int device : places) {
        append_metadata(out, "process_name", pid_of(device), 0, place_name(device));
    }
    for (const auto& [device, thread] : threads) {
        append_metadata(out, "thread_name", pid_of(device), thread + 1,
                        "thread " + std::to_string(thread));
    }
    if (out.ends_with(",\n")) {
        out.erase(out.size() - 2, 1); // the last entry takes no comma
    }
    out += "],\n";
    out += "\"displayTimeUnit\":\"ms\",\n\"otherData\":{\"writer\":\"cudagap memory trace\","
           "\"cudagap\":\"" +
           library_version().to_string() + "\",\"events\":" + std::to_string(events.size()) +
           ",\"dropped_events\":" + std::to_string(dropped) + "}}\n";
    return out;
}

void write_memory_trace(const std::filesystem::path& file, std::span<const memory_event> events,
                        std::size_t dropped)
{
    const std::string text = memory_trace_json(events, dropped);
    atomic_file out(file);
    out.write(text);
    out.commit();
}

memory_trace::memory_trace(std::filesystem::path file, memory_ledger& ledger,
                           std::size_t max_events)
    : file_(std::move(file)), ledger_(&ledger)
{
    ledger_->start_recording(max_events);
}

memory_trace::~memory_trace()
{
    if (written_) {
        return;
    }
    try {
        write();
    } catch (const std::exception& failure) {
        std::fprintf(stderr, "cudagap: memory trace %s not written: %s\n", file_.c_str(),
                     failure.what());
    }
}

void memory_trace::write()
{
    if (written_) {
        return;
    }
    written_ = true;
    const auto [events, dropped] = ledger_->stop_recording();
    write_memory_trace(file_, events, dropped);
}

} // namespace gpu
