// gpu/memory_trace.hpp: the recorded timeline as Chrome trace event JSON, parsed back here;
// counters consistent with the events; the atomic write.
#include <gpu/ledger_resource.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/memory_tag.hpp>
#include <gpu/memory_trace.hpp>

#include "fake_resource.hpp"

#include "catch.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include <unistd.h>

using Catch::Matchers::ContainsSubstring;

namespace {

namespace fs = std::filesystem;
using upstream_ref = gpu::device_resource_ref;

// A folder of its own per test, removed at the end.
struct scratch_folder {
    scratch_folder()
        : path(fs::temp_directory_path() / ("cudagap-trace-" + std::to_string(::getpid()) + "-" +
                                            std::to_string(reinterpret_cast<std::uintptr_t>(this))))
    {
        fs::create_directories(path);
    }
    scratch_folder(const scratch_folder&) = delete;
    scratch_folder& operator=(const scratch_folder&) = delete;
    ~scratch_folder() { fs::remove_all(path); }
    fs::path path;
};

nlohmann::json read_json(const fs::path& file)
{
    std::ifstream in(file);
    REQUIRE(in.good());
    return nlohmann::json::parse(in); // throws, failing the test, on invalid JSON
}

thread_local std::string_view current_range;
std::string_view range_name() noexcept
{
    return current_range;
}

// What a training step looks like to the ledger: parameters once, then per step activations
// and scratch that come and go, on two threads, inside named ranges.
void simulate(gpu::ledger_resource<upstream_ref>& resource, int steps)
{
    const auto s = gpu::test::fake_stream();
    const auto tag = [](gpu::memory_category c) { return gpu::memory_tag::standard(c); };
    for (int step = 0; step < steps; ++step) {
        current_range = "forward";
        std::vector<std::pair<void*, std::size_t>> held;
        {
            const gpu::memory_tag_scope scope(tag(gpu::memory_category::activations));
            for (int layer = 0; layer < 3; ++layer) {
                held.emplace_back(resource.allocate(s, 1000 * (layer + 1)), 1000 * (layer + 1));
            }
        }
        current_range = "backward";
        {
            const gpu::memory_tag_scope scope(tag(gpu::memory_category::scratch));
            void* tmp = resource.allocate(s, 512);
            resource.deallocate(s, tmp, 512);
        }
        for (auto& [p, n] : held) {
            resource.deallocate(s, p, n);
        }
    }
    current_range = {};
}

} // namespace

TEST_CASE("a trace is Chrome trace JSON whose counters follow its events", "[memory_trace]")
{
    scratch_folder folder;
    const fs::path file = folder.path / "memory.json";
    gpu::memory_ledger ledger;
    gpu::memory_ledger::set_range_name_source(range_name);
    gpu::test::fake_resource fake;
    gpu::ledger_resource<upstream_ref> resource(upstream_ref(fake), 0, std::nullopt, ledger);
    gpu::ledger_resource<upstream_ref> other_device(upstream_ref(fake), 1, std::nullopt, ledger);
    // Held before the recording: the trace starts from it (an "initial" sample).
    void* params = nullptr;
    {
        const gpu::memory_tag_scope scope(
            gpu::memory_tag::standard(gpu::memory_category::parameters));
        params = resource.allocate(gpu::test::fake_stream(), 4096);
    }
    {
        gpu::memory_trace trace(file, ledger);
        CHECK(ledger.recording());
        std::thread worker([&] { simulate(other_device, 2); });
        simulate(resource, 3);
        worker.join();
        trace.write();
        CHECK_FALSE(ledger.recording());
    }
    gpu::memory_ledger::set_range_name_source(nullptr);
    resource.deallocate(gpu::test::fake_stream(), params, 4096);

    const nlohmann::json doc = read_json(file);
    REQUIRE(doc["traceEvents"].is_array());
    CHECK(doc["otherData"]["dropped_events"] == 0);
    std::map<std::pair<int, std::string>, long long> level; // (pid, tag) -> bytes, replayed
    std::map<int, std::string> processes;
    int instants = 0;
    int initial_samples = 0;
    double last_ts = -1;
    for (const nlohmann::json& e : doc["traceEvents"]) {
        const std::string ph = e["ph"];
        if (ph == "M") {
            if (e["name"] == "process_name") {
                processes[e["pid"].get<int>()] = e["args"]["name"];
            }
            continue;
        }
        const int pid = e["pid"];
        const double ts = e["ts"];
        CHECK(ts >= last_ts); // in time order
        last_ts = ts;
        if (ph == "i") {
            ++instants;
            const nlohmann::json& a = e["args"];
            const std::string kind = a["kind"];
            const long long bytes = a["bytes"];
            long long& now = level[{pid, a["tag"].get<std::string>()}];
            now += (kind == "allocate" || kind == "hold") ? bytes : -bytes;
            CHECK(a["tag_bytes"].get<long long>() == now);
            CHECK(e["name"] == kind + " " + a["tag"].get<std::string>());
            CHECK(a["address"].get<std::string>().rfind("0x", 0) == 0);
            // Activations are made in the forward range; everything else happens in backward.
            const bool forward = a["tag"] == "activations" && kind == "allocate";
            CHECK(a["range"] == (forward ? "forward" : "backward"));
        } else {
            REQUIRE(ph == "C");
            const std::string tag = e["name"];
            const long long sample = e["args"]["bytes"];
            const auto key = std::make_pair(pid, tag);
            if (!level.contains(key)) {
                level[key] = sample; // a level from before the recording
                ++initial_samples;
            }
            CHECK(sample == level[key]); // each counter sample is the replayed level
        }
    }
    // 3 steps on device 0 and 2 on device 1, each 3 activations and 1 scratch allocated and
    // freed: 8 events a step. The parameters' level is the one sample from before.
    CHECK(instants == (3 + 2) * 8);
    CHECK(initial_samples == 1);
    CHECK(processes[2] == "device 0 memory");
    CHECK(processes[3] == "device 1 memory");
    CHECK(level[{2, "parameters"}] == 4096); // held through the recording
    CHECK(level[{2, "activations"}] == 0);
    CHECK(level[{3, "scratch"}] == 0);
}

TEST_CASE("a trace keeps at most its limit and counts the rest", "[memory_trace]")
{
    scratch_folder folder;
    gpu::memory_ledger ledger;
    gpu::test::fake_resource fake;
    gpu::ledger_resource<upstream_ref> resource(upstream_ref(fake), 0, std::nullopt, ledger);
    gpu::memory_trace trace(folder.path / "short.json", ledger, 4);
    simulate(resource, 1); // 8 events
    trace.write();
    const nlohmann::json doc = read_json(folder.path / "short.json");
    CHECK(doc["otherData"]["dropped_events"] == 4);
    CHECK(doc["otherData"]["events"] == 4);
}

TEST_CASE("names that are not plain text still make valid JSON", "[memory_trace]")
{
    gpu::memory_event e;
    e.tag = gpu::memory_tag::named("test \"quoted\" \\ tab\t \xff\xfe bad UTF-8 \xc3\xa9");
    e.bytes = 10;
    e.tag_bytes = 10;
    e.range = "range\nwith a newline";
    const std::vector<gpu::memory_event> events{e};
    const nlohmann::json doc = nlohmann::json::parse(gpu::memory_trace_json(events));
    const nlohmann::json& instant = doc["traceEvents"][0];
    CHECK(instant["args"]["tag"] ==
          "test \"quoted\" \\ tab\t \xef\xbf\xbd\xef\xbf\xbd bad UTF-8 \xc3\xa9");
    CHECK(instant["args"]["range"] == "range\nwith a newline");
}

TEST_CASE("a trace is written to a temporary file and renamed", "[memory_trace]")
{
    scratch_folder folder;
    const fs::path file = folder.path / "memory.json";
    {
        std::ofstream old(file);
        old << "the previous trace";
    }
    const std::vector<gpu::memory_event> none;
    gpu::write_memory_trace(file, none);
    CHECK(read_json(file)["traceEvents"].is_array());
    // Nothing else is left beside it.
    std::size_t entries = 0;
    for (const auto& entry : fs::directory_iterator(folder.path)) {
        static_cast<void>(entry);
        ++entries;
    }
    CHECK(entries == 1);

    SECTION("a target that cannot be replaced is left as it was, and no temporary stays")
    {
        const fs::path folder_target = folder.path / "a folder";
        fs::create_directories(folder_target / "inside");
        CHECK_THROWS_AS(gpu::write_memory_trace(folder_target, none), fs::filesystem_error);
        CHECK(fs::is_directory(folder_target / "inside"));
        std::size_t after = 0;
        for (const auto& entry : fs::directory_iterator(folder.path)) {
            static_cast<void>(entry);
            ++after;
        }
        CHECK(after == 2); // memory.json and the folder
    }
    SECTION("a folder that does not exist is an error naming the file")
    {
        CHECK_THROWS_WITH(gpu::write_memory_trace(folder.path / "missing" / "x.json", none),
                          ContainsSubstring("cannot create a temporary file") &&
                              ContainsSubstring("x.json"));
    }
}

TEST_CASE("a trace that goes out of scope writes its file", "[memory_trace]")
{
    scratch_folder folder;
    gpu::memory_ledger ledger;
    gpu::test::fake_resource fake;
    gpu::ledger_resource<upstream_ref> resource(upstream_ref(fake), 0, std::nullopt, ledger);
    {
        const gpu::memory_trace trace(folder.path / "scoped.json", ledger);
        simulate(resource, 1);
    }
    CHECK(read_json(folder.path / "scoped.json")["otherData"]["events"] == 8);
    CHECK_FALSE(ledger.recording());
}
