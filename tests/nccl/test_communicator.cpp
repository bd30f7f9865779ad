// gpu/nccl/communicator.hpp: argument checks, what the makers refuse before any GPU call (an
// open group, NCCL_COMM_BLOCKING) and the empty communicator (no GPU needed), then a real
// one-rank communicator, one per local GPU, closing them together, adopting and closing ones
// still in progress, and NCCL's own refusal of a duplicated GPU.
#include <gpu/device.hpp>
#include <gpu/memory_ledger.hpp>
#include <gpu/nccl/communicator.hpp>
#include <gpu/nccl/error.hpp>
#include <gpu/nccl/group.hpp>

#include "catch.hpp"

#include <chrono>
#include <cstdlib>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

namespace {

// Sets an environment variable for the scope, then restores what it was.
class scoped_environment {
public:
    scoped_environment(const char* name, const char* value) : name_(name)
    {
        if (const char* before = std::getenv(name)) {
            before_ = before;
        }
        ::setenv(name, value, 1);
    }
    ~scoped_environment()
    {
        if (before_) {
            ::setenv(name_, before_->c_str(), 1);
        } else {
            ::unsetenv(name_);
        }
    }
    scoped_environment(const scoped_environment&) = delete;
    scoped_environment& operator=(const scoped_environment&) = delete;

private:
    const char* name_;
    std::optional<std::string> before_;
};

// Rank 0 of a two-rank communicator made raw and non-blocking, whose rank 1 never comes: it
// stays in progress (setting up) until it is aborted.
ncclComm_t half_made_communicator()
{
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclUniqueId id{};
    REQUIRE(ncclGetUniqueId(&id) == ncclSuccess);
    const gpu::scoped_device on(gpu::device(0));
    ncclComm_t comm = nullptr;
    const ncclResult_t started = ncclCommInitRankConfig(&comm, 2, id, 0, &config);
    REQUIRE((started == ncclSuccess || started == ncclInProgress));
    REQUIRE(comm != nullptr);
    return comm;
}

} // namespace

TEST_CASE("an empty communicator refuses every use, and aborting it does nothing", "[nccl]")
{
    gpu::nccl::communicator comm;
    CHECK_FALSE(comm);
    CHECK(comm.get() == nullptr);
    CHECK_THROWS_WITH(comm.rank(),
                      StartsWith("gpu::nccl::communicator::rank: the gpu::nccl::communicator is "
                                 "empty (moved from or released; it holds no NCCL communicator)"));
    CHECK_THROWS_AS(comm.size(), std::logic_error);
    CHECK_THROWS_AS(comm.device(), std::logic_error);
    CHECK_THROWS_AS(comm.timeout(), std::logic_error);
    CHECK_THROWS_AS(comm.check_async_error(), std::logic_error);
    CHECK_THROWS_AS(comm.destroy(), std::logic_error);
    CHECK(comm.measured_bytes() == 0);
    comm.abort();
    CHECK(comm.release() == nullptr);
    CHECK_THROWS_AS(gpu::nccl::communicator::from_native_handle(nullptr), std::invalid_argument);
}

TEST_CASE("ranks, sizes, timeouts and devices are checked before NCCL is called", "[nccl]")
{
    using gpu::nccl::detail::check_rank;
    CHECK_THROWS_WITH(check_rank("f", 0, 0), "f: size 0 is not a number of ranks (at least 1)");
    CHECK_THROWS_WITH(check_rank("f", 2, 2), "f: rank 2 is outside [0, 2) for size 2");
    CHECK_THROWS_WITH(check_rank("f", -1, 4), "f: rank -1 is outside [0, 4) for size 4");
    CHECK_NOTHROW(check_rank("f", 3, 4));

    gpu::nccl::communicator_options options;
    CHECK_NOTHROW(gpu::nccl::detail::check_options("f", options));
    options.close_timeout = std::chrono::milliseconds(0);
    CHECK_THROWS_WITH(
        gpu::nccl::detail::check_options("f", options),
        "f: the timeouts must be positive, got timeout 300000 ms and close_timeout 0 ms");

    using gpu::nccl::detail::check_devices;
    CHECK_THROWS_WITH(check_devices("f", {}),
                      "f: no device given (a communicator needs at least one rank)");
    const std::vector<int> twice{0, 1, 0};
    CHECK_THROWS_WITH(
        check_devices("f", twice),
        "f: device 0 is given twice (ranks 0 and 2): each rank needs a GPU of its own");
    const std::vector<int> distinct{3, 1, 0};
    CHECK_NOTHROW(check_devices("f", distinct));
}

TEST_CASE(
    "NCCL_COMM_BLOCKING is read as NCCL reads it: only the value 1 makes communicators blocking",
    "[nccl]")
{
    using gpu::nccl::detail::forces_blocking;
    CHECK(forces_blocking("1"));
    CHECK(forces_blocking(" 1"));   // strtoll skips leading blanks
    CHECK(forces_blocking("0x1"));  // base 0: hexadecimal
    CHECK(forces_blocking("1abc")); // NCCL ignores what follows the number
    CHECK_FALSE(forces_blocking(nullptr));
    CHECK_FALSE(forces_blocking(""));
    CHECK_FALSE(forces_blocking("0"));
    CHECK_FALSE(forces_blocking("2"));
    CHECK_FALSE(forces_blocking("yes"));
    CHECK_FALSE(forces_blocking("99999999999999999999")); // out of range: NCCL uses its default
}

TEST_CASE("NCCL_COMM_BLOCKING=1 is refused before any GPU call, naming the variable", "[nccl]")
{
    const scoped_environment blocking("NCCL_COMM_BLOCKING", "1");
    try {
        // Without the check, a host without a GPU would say "no visible device" here, and one
        // with a GPU would make a blocking communicator.
        static_cast<void>(gpu::nccl::communicator::init_all());
        FAIL("no exception");
    } catch (const gpu::nccl::nccl_error& e) {
        INFO(e.what());
        CHECK(e.status() == ncclInvalidUsage);
        CHECK(e.device() == -1);
        CHECK_THAT(
            std::string(e.what()),
            StartsWith(
                "gpu::nccl::communicator::init_all: ncclInvalidUsage (5): the environment sets "
                "NCCL_COMM_BLOCKING=1, which makes NCCL's communicators blocking"));
        CHECK_THAT(e.hint(), StartsWith("unset NCCL_COMM_BLOCKING (or set it to 0)") &&
                                 ContainsSubstring("NCCL_DEBUG=INFO"));
    }
    CHECK_THROWS_AS(gpu::nccl::detail::check_can_make("f"), gpu::nccl::nccl_error);
    const scoped_environment not_blocking("NCCL_COMM_BLOCKING", "0");
    CHECK_NOTHROW(gpu::nccl::detail::check_can_make("f"));
}

TEST_CASE("making a communicator inside an open group is refused: NCCL cannot group both", "[nccl]")
{
    gpu::nccl::group_scope group;
    CHECK_THROWS_WITH(
        gpu::nccl::detail::check_can_make("f"),
        "f: called inside an open gpu::nccl::group_scope; NCCL groups collectives or the "
        "set-up of communicators, never both: make the communicators before the group");
    // Before the devices are looked at: without a GPU this would otherwise be "no visible device".
    CHECK_THROWS_AS(gpu::nccl::communicator::init_all(), std::logic_error);
    // Closing inside a group is refused too, before anything is taken.
    std::vector<gpu::nccl::communicator> none(2);
    CHECK_THROWS_WITH(
        gpu::nccl::destroy_all(none),
        StartsWith("gpu::nccl::destroy_all: called inside an open gpu::nccl::group_scope"));
    group.end();
    CHECK_NOTHROW(gpu::nccl::detail::check_can_make("f"));
}

TEST_CASE("closing a set skips empty communicators", "[nccl]")
{
    std::vector<gpu::nccl::communicator> empty(3);
    CHECK_NOTHROW(gpu::nccl::destroy_all(empty));
    gpu::nccl::close_all(empty);
    gpu::nccl::destroy_all({});
    for (const gpu::nccl::communicator& comm : empty) {
        CHECK_FALSE(comm);
    }
}

TEST_CASE("without a GPU, a communicator over every device is refused with the reason", "[nccl]")
{
    if (gpu::is_available()) {
        CHECK(gpu::device_count() >= 1); // the [gpu] cases below make it
        return;
    }
    CHECK_THROWS_WITH(gpu::nccl::communicator::init_all(),
                      StartsWith("gpu::nccl::communicator::init_all: no visible device (") &&
                          ContainsSubstring(gpu::unavailable_reason()));
}

TEST_CASE("a one-rank communicator: rank, size, device, destroy and move", "[nccl][gpu]")
{
    const gpu::device dev(0);
    gpu::nccl::communicator comm =
        gpu::nccl::communicator::init_rank(gpu::nccl::unique_id::create(), 0, 1, dev);
    REQUIRE(comm);
    CHECK(comm.rank() == 0);
    CHECK(comm.size() == 1);
    CHECK(comm.device() == dev);
    CHECK(comm.timeout() == gpu::nccl::communicator_options{}.timeout);
    CHECK_NOTHROW(comm.check_async_error());

    gpu::nccl::communicator moved = std::move(comm);
    CHECK_FALSE(comm); // NOLINT(bugprone-use-after-move): the moved-from state is specified
    CHECK(moved.size() == 1);
    moved.destroy();
    CHECK_FALSE(moved);

    // A second one is aborted; a third is closed by its destructor (finalize, then destroy).
    gpu::nccl::communicator aborted =
        gpu::nccl::communicator::init_rank(gpu::nccl::unique_id::create(), 0, 1, dev);
    aborted.abort();
    CHECK_FALSE(aborted);
    const auto start = std::chrono::steady_clock::now();
    {
        const gpu::nccl::communicator closed =
            gpu::nccl::communicator::init_rank(gpu::nccl::unique_id::create(), 0, 1, dev);
    }
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

namespace {
// What the process's ledger holds on @p device under "NCCL communicator" now.
std::size_t nccl_held(int device)
{
    for (const gpu::memory_ledger_row& row : gpu::memory_ledger::global().rows(device)) {
        if (row.name == "NCCL communicator") {
            return row.current_bytes;
        }
    }
    return 0;
}
} // namespace

TEST_CASE("a communicator's set-up is held in the ledger until it closes", "[nccl][gpu]")
{
    const gpu::device dev(0);
    const std::size_t before = nccl_held(dev.id());
    const std::size_t used = dev.memory().used_bytes();
    gpu::nccl::communicator comm =
        gpu::nccl::communicator::init_rank(gpu::nccl::unique_id::create(), 0, 1, dev);
    // NCCL allocates its buffers as it sets up: the device's used memory grew by what it holds.
    CHECK(comm.measured_bytes() > 0);
    CHECK(comm.measured_bytes() <= dev.memory().used_bytes() - used);
    CHECK(nccl_held(dev.id()) == before + comm.measured_bytes());
    comm.destroy();
    CHECK(comm.measured_bytes() == 0);
    CHECK(nccl_held(dev.id()) == before);

    const std::vector<gpu::device> one{dev};
    std::vector<gpu::nccl::communicator> all = gpu::nccl::communicator::init_all(one);
    REQUIRE(all.size() == 1);
    CHECK(nccl_held(dev.id()) == before + all[0].measured_bytes());
    gpu::nccl::destroy_all(all);
    CHECK(nccl_held(dev.id()) == before);
}

TEST_CASE("init_all makes one communicator per device and restores the current device",
          "[nccl][gpu]")
{
    const gpu::device before = gpu::current_device();
    const std::vector<gpu::device> devices = gpu::devices();
    const std::vector<gpu::nccl::communicator> comms = gpu::nccl::communicator::init_all(devices);
    REQUIRE(comms.size() == devices.size());
    for (std::size_t i = 0; i < comms.size(); ++i) {
        CHECK(comms[i].rank() == static_cast<int>(i));
        CHECK(comms[i].size() == static_cast<int>(devices.size()));
        CHECK(comms[i].device() == devices[i]);
    }
    CHECK(gpu::current_device() == before);
    const std::vector<gpu::device> twice{devices[0], devices[0]};
    CHECK_THROWS_AS(gpu::nccl::communicator::init_all(twice), std::invalid_argument);
}

TEST_CASE("a rank that never joins makes init_rank throw at its timeout, not hang", "[nccl][gpu]")
{
    gpu::nccl::communicator_options options;
    options.timeout = std::chrono::seconds(3);
    const auto start = std::chrono::steady_clock::now();
    try {
        // Rank 0 of 2; rank 1 never comes.
        static_cast<void>(gpu::nccl::communicator::init_rank(gpu::nccl::unique_id::create(), 0, 2,
                                                             gpu::device(0), options));
        FAIL("no exception");
    } catch (const gpu::nccl::nccl_error& e) {
        INFO(e.what());
        CHECK(e.status() == ncclInProgress);
        CHECK_THAT(std::string(e.what()), ContainsSubstring("did not finish within 3.0 s"));
        CHECK_THAT(e.hint(), StartsWith("not all 2 ranks joined"));
    }
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("NCCL refuses two ranks on one GPU, and the error says so", "[nccl][gpu]")
{
    // Two threads of one process, ranks 0 and 1 of one communicator, both on device 0.
    const gpu::nccl::unique_id id = gpu::nccl::unique_id::create();
    gpu::nccl::communicator_options options;
    options.timeout = std::chrono::seconds(30);
    std::vector<std::string> failures(2);
    std::vector<std::thread> ranks;
    for (int rank = 0; rank < 2; ++rank) {
        ranks.emplace_back([&, rank] {
            try {
                gpu::nccl::communicator comm =
                    gpu::nccl::communicator::init_rank(id, rank, 2, gpu::device(0), options);
                failures[static_cast<std::size_t>(rank)] = "no error";
            } catch (const gpu::nccl::nccl_error& e) {
                failures[static_cast<std::size_t>(rank)] = e.what();
            } catch (const std::exception& e) {
                failures[static_cast<std::size_t>(rank)] =
                    std::string("not an nccl_error: ") + e.what();
            }
        });
    }
    for (std::thread& rank : ranks) {
        rank.join();
    }
    bool named = false;
    for (const std::string& failure : failures) {
        INFO(failure);
        CHECK_THAT(failure, StartsWith("ncclCommInitRankConfig"));
        named = named || (failure.find("ncclInvalidUsage") != std::string::npos &&
                          failure.find("two ranks use the same GPU") != std::string::npos);
    }
    CHECK(named);
}

TEST_CASE("init_all's communicators close together, and the vector is left empty", "[nccl][gpu]")
{
    gpu::nccl::communicator_options options;
    options.close_timeout = std::chrono::seconds(20);
    std::vector<gpu::nccl::communicator> comms =
        gpu::nccl::communicator::init_all(gpu::devices(), options);
    const auto start = std::chrono::steady_clock::now();
    gpu::nccl::destroy_all(comms);
    CHECK(std::chrono::steady_clock::now() - start < options.close_timeout);
    for (const gpu::nccl::communicator& comm : comms) {
        CHECK_FALSE(comm);
    }
    // close_all, with an empty member among them (moving one of the set out instead would
    // leave the others' finalize waiting for it).
    comms = gpu::nccl::communicator::init_all(gpu::devices(), options);
    comms.emplace_back();
    const auto again = std::chrono::steady_clock::now();
    gpu::nccl::close_all(comms);
    CHECK(std::chrono::steady_clock::now() - again < options.close_timeout);
    for (const gpu::nccl::communicator& comm : comms) {
        CHECK_FALSE(comm);
    }
}

TEST_CASE("a communicator cannot be destroyed inside an open group, and stays owned", "[nccl][gpu]")
{
    gpu::nccl::communicator comm =
        gpu::nccl::communicator::init_rank(gpu::nccl::unique_id::create(), 0, 1, gpu::device(0));
    {
        gpu::nccl::group_scope group;
        CHECK_THROWS_WITH(
            comm.destroy(),
            StartsWith(
                "gpu::nccl::communicator::destroy: called inside an open gpu::nccl::group_scope"));
        group.end();
    }
    REQUIRE(comm);
    comm.destroy();
    CHECK_FALSE(comm);
}

TEST_CASE("adopting a communicator that is still setting up waits, then says so", "[nccl][gpu]")
{
    ncclComm_t comm = half_made_communicator();
    gpu::nccl::communicator_options options;
    options.timeout = std::chrono::seconds(2);
    try {
        static_cast<void>(gpu::nccl::communicator::from_native_handle(comm, options));
        FAIL("no exception");
    } catch (const gpu::nccl::nccl_error& e) {
        INFO(e.what());
        // Not NCCL's ncclInvalidArgument for describing a communicator in progress.
        CHECK(e.status() == ncclInProgress);
        CHECK_THAT(std::string(e.what()), ContainsSubstring("did not finish within 2.0 s"));
    }
    const ncclResult_t aborted = ncclCommAbort(comm); // the caller still owns it
    CHECK((aborted == ncclSuccess || aborted == ncclInProgress));
}

TEST_CASE("closing a communicator still in progress aborts it within the close timeout",
          "[nccl][gpu]")
{
    const gpu::nccl::detail::communicator_record record{
        half_made_communicator(), 0, 2, 0, std::chrono::seconds(5), std::chrono::seconds(1)};
    const auto start = std::chrono::steady_clock::now();
    gpu::nccl::detail::close_communicator(record); // reported "in progress at close", then aborted
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}
