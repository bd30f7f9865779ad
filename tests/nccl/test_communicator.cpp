// gpu/nccl/communicator.hpp: argument checks and the empty communicator (no GPU needed), then
// a real one-rank communicator, one per local GPU, and NCCL's own refusal of a duplicated GPU.
#include <gpu/device.hpp>
#include <gpu/nccl/communicator.hpp>
#include <gpu/nccl/error.hpp>

#include "catch.hpp"

#include <chrono>
#include <exception>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;

TEST_CASE("an empty communicator refuses every use, and aborting it does nothing", "[nccl]")
{
    gpu::nccl::communicator comm;
    CHECK_FALSE(comm);
    CHECK(comm.get() == nullptr);
    CHECK_THROWS_WITH(comm.rank(), StartsWith("gpu::nccl::communicator::rank: used after it was moved from or "
                                              "released (it holds no NCCL communicator)"));
    CHECK_THROWS_AS(comm.size(), std::logic_error);
    CHECK_THROWS_AS(comm.device(), std::logic_error);
    CHECK_THROWS_AS(comm.timeout(), std::logic_error);
    CHECK_THROWS_AS(comm.check_async_error(), std::logic_error);
    CHECK_THROWS_AS(comm.destroy(), std::logic_error);
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
    CHECK_THROWS_WITH(gpu::nccl::detail::check_options("f", options),
                      "f: the timeouts must be positive, got timeout 300000 ms and close_timeout 0 ms");

    using gpu::nccl::detail::check_devices;
    CHECK_THROWS_WITH(check_devices("f", {}), "f: no device given (a communicator needs at least one rank)");
    const std::vector<int> twice{0, 1, 0};
    CHECK_THROWS_WITH(check_devices("f", twice),
                      "f: device 0 is given twice (ranks 0 and 2): each rank needs a GPU of its own");
    const std::vector<int> distinct{3, 1, 0};
    CHECK_NOTHROW(check_devices("f", distinct));
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
    gpu::nccl::communicator aborted = gpu::nccl::communicator::init_rank(gpu::nccl::unique_id::create(), 0, 1, dev);
    aborted.abort();
    CHECK_FALSE(aborted);
    const auto start = std::chrono::steady_clock::now();
    {
        const gpu::nccl::communicator closed =
            gpu::nccl::communicator::init_rank(gpu::nccl::unique_id::create(), 0, 1, dev);
    }
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
}

TEST_CASE("init_all makes one communicator per device and restores the current device", "[nccl][gpu]")
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
                gpu::nccl::communicator comm = gpu::nccl::communicator::init_rank(id, rank, 2, gpu::device(0), options);
                failures[static_cast<std::size_t>(rank)] = "no error";
            } catch (const gpu::nccl::nccl_error& e) {
                failures[static_cast<std::size_t>(rank)] = e.what();
            } catch (const std::exception& e) {
                failures[static_cast<std::size_t>(rank)] = std::string("not an nccl_error: ") + e.what();
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
