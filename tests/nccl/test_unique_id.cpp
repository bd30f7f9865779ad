// gpu/nccl/unique_id.hpp: the id's bytes and its exchange through a file, with the real
// ncclGetUniqueId (which needs no GPU).
#include <gpu/nccl/unique_id.hpp>

#include "catch.hpp"

#include <array>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <unistd.h>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

// A fresh folder of this test process, removed at the end of the test case.
class scratch_folder {
public:
    explicit scratch_folder(const std::string& name)
        : path_(std::filesystem::temp_directory_path() /
                ("cudagap-nccl-" + name + "-" + std::to_string(::getpid())))
    {
        std::filesystem::remove_all(path_);
        std::filesystem::create_directories(path_);
    }
    ~scratch_folder()
    {
        std::error_code ignored;
        std::filesystem::remove_all(path_, ignored);
    }
    scratch_folder(const scratch_folder&) = delete;
    scratch_folder& operator=(const scratch_folder&) = delete;
    [[nodiscard]] const std::filesystem::path& path() const { return path_; }

private:
    std::filesystem::path path_;
};

std::vector<std::filesystem::path> entries(const std::filesystem::path& folder)
{
    std::vector<std::filesystem::path> found;
    for (const auto& entry : std::filesystem::directory_iterator(folder)) {
        found.push_back(entry.path());
    }
    return found;
}

// Limits the size of the files this process writes (RLIMIT_FSIZE) for the scope: a write past
// it fails with EFBIG, for root too (unlike permissions). SIGXFSZ, which would end the
// process, is ignored meanwhile.
class file_size_limit {
public:
    explicit file_size_limit(rlim_t bytes)
    {
        REQUIRE(::getrlimit(RLIMIT_FSIZE, &before_) == 0);
        previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limited = before_;
        limited.rlim_cur = bytes;
        REQUIRE(::setrlimit(RLIMIT_FSIZE, &limited) == 0);
    }
    ~file_size_limit()
    {
        static_cast<void>(::setrlimit(RLIMIT_FSIZE, &before_));
        static_cast<void>(std::signal(SIGXFSZ, previous_handler_));
    }
    file_size_limit(const file_size_limit&) = delete;
    file_size_limit& operator=(const file_size_limit&) = delete;

private:
    rlimit before_{};
    void (*previous_handler_)(int) = nullptr;
};

} // namespace

TEST_CASE("a unique id goes through its bytes unchanged", "[nccl]")
{
    const gpu::nccl::unique_id id = gpu::nccl::unique_id::create();
    const gpu::nccl::unique_id other = gpu::nccl::unique_id::create();
    CHECK_FALSE(id == other); // each names its own bootstrap
    CHECK_FALSE(id == gpu::nccl::unique_id{});

    const std::array<std::byte, 128> bytes = id.to_bytes();
    const gpu::nccl::unique_id back = gpu::nccl::unique_id::from_bytes(bytes);
    CHECK(back == id);
    CHECK(std::memcmp(back.get().internal, id.get().internal, NCCL_UNIQUE_ID_BYTES) == 0);
}

TEST_CASE("an id of the wrong length is refused with both lengths", "[nccl]")
{
    const std::vector<std::byte> short_bytes(127);
    CHECK_THROWS_WITH(
        gpu::nccl::unique_id::from_bytes(short_bytes),
        "gpu::nccl::unique_id::from_bytes: 127 bytes given, an NCCL unique id has 128");
    CHECK_THROWS_AS(gpu::nccl::unique_id::from_bytes(std::vector<std::byte>(129)),
                    std::invalid_argument);
}

TEST_CASE("a unique id goes through a file, written atomically", "[nccl]")
{
    const scratch_folder folder("file");
    const std::filesystem::path file = folder.path() / "nccl-id";
    const gpu::nccl::unique_id id = gpu::nccl::unique_id::create_file(file);
    CHECK(std::filesystem::file_size(file) == 128);
    CHECK(entries(folder.path()) == std::vector<std::filesystem::path>{file}); // no temporary left
    CHECK(gpu::nccl::unique_id::read_file(file) == id);

    // A new id replaces the old one.
    const gpu::nccl::unique_id next = gpu::nccl::unique_id::create();
    next.write_file(file);
    CHECK(gpu::nccl::unique_id::read_file(file) == next);
    CHECK(entries(folder.path()).size() == 1);
}

TEST_CASE("a rank waits for the file that rank 0 writes later", "[nccl]")
{
    const scratch_folder folder("wait");
    const std::filesystem::path file = folder.path() / "nccl-id";
    const gpu::nccl::unique_id id = gpu::nccl::unique_id::create();
    std::thread rank0([&] {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        id.write_file(file);
    });
    const auto start = std::chrono::steady_clock::now();
    const gpu::nccl::unique_id read = gpu::nccl::unique_id::wait_for_file(
        file, std::chrono::seconds(20), std::chrono::milliseconds(5));
    const auto waited = std::chrono::steady_clock::now() - start;
    rank0.join();
    CHECK(read == id);
    CHECK(waited >= std::chrono::milliseconds(90));
    CHECK(waited < std::chrono::seconds(10));
}

TEST_CASE("waiting for a file that never comes ends at the timeout, naming the file and the time",
          "[nccl]")
{
    const scratch_folder folder("timeout");
    const std::filesystem::path file = folder.path() / "never";
    const auto start = std::chrono::steady_clock::now();
    try {
        static_cast<void>(
            gpu::nccl::unique_id::wait_for_file(file, std::chrono::milliseconds(300)));
        FAIL("no exception");
    } catch (const gpu::nccl::bootstrap_error& e) {
        const auto elapsed = std::chrono::steady_clock::now() - start;
        INFO(e.what());
        CHECK(e.path() == file);
        CHECK(e.waited() >= std::chrono::milliseconds(300));
        CHECK(elapsed >= std::chrono::milliseconds(300));
        CHECK(elapsed < std::chrono::seconds(5)); // bounded, not forever
        CHECK_THAT(std::string(e.what()),
                   ContainsSubstring("no unique id appeared at " + file.string() +
                                     " after waiting 0.3 s") &&
                       ContainsSubstring("(timeout 0.3 s)") &&
                       ContainsSubstring("rank 0 writes it"));
    }
    CHECK_THROWS_AS(gpu::nccl::unique_id::wait_for_file(file, std::chrono::milliseconds(-1)),
                    std::invalid_argument);
}

TEST_CASE("a file that holds no id, or none at all, is an error that names it", "[nccl]")
{
    const scratch_folder folder("bad");
    const std::filesystem::path file = folder.path() / "nccl-id";
    std::ofstream(file) << "not an id";
    try {
        static_cast<void>(gpu::nccl::unique_id::wait_for_file(file, std::chrono::seconds(5)));
        FAIL("no exception");
    } catch (const gpu::nccl::bootstrap_error& e) {
        CHECK_THAT(std::string(e.what()),
                   ContainsSubstring(file.string() + " holds 9 bytes, not the 128"));
        CHECK(e.waited() == std::chrono::milliseconds(0));
    }
    CHECK_THROWS_AS(gpu::nccl::unique_id::read_file(folder.path() / "missing"),
                    std::filesystem::filesystem_error);
    CHECK_THROWS_AS(gpu::nccl::unique_id{}.write_file(folder.path() / "no-such-folder" / "id"),
                    std::filesystem::filesystem_error);
}

TEST_CASE("a unique id that cannot be written all is an error with the system's reason, and leaves "
          "nothing",
          "[nccl]")
{
    const scratch_folder folder("full");
    const std::filesystem::path file = folder.path() / "nccl-id";
    const gpu::nccl::unique_id id = gpu::nccl::unique_id::create();
    try {
        const file_size_limit limit(100); // the id is 128 bytes
        id.write_file(file);
        FAIL("no exception");
    } catch (const std::filesystem::filesystem_error& e) {
        INFO(e.what());
        CHECK(e.code() == std::error_code(EFBIG, std::generic_category()));
        CHECK_THAT(std::string(e.what()),
                   ContainsSubstring("cannot write the unique id to a temporary file"));
    }
    CHECK(entries(folder.path()).empty()); // neither the file nor its temporary
    id.write_file(file);                   // the limit is gone
    CHECK(gpu::nccl::unique_id::read_file(file) == id);
}

TEST_CASE("a file that cannot even be looked for is an error at once, not a wait until the timeout",
          "[nccl]")
{
    // A loop of symbolic links on the way (ELOOP), which root meets too; a folder that may not
    // be searched (EACCES), the common case, cannot be made here when the tests run as root.
    const scratch_folder folder("loop");
    std::filesystem::create_symlink(folder.path() / "loop", folder.path() / "loop");
    const std::filesystem::path file = folder.path() / "loop" / "nccl-id";
    const auto start = std::chrono::steady_clock::now();
    try {
        static_cast<void>(gpu::nccl::unique_id::wait_for_file(file, std::chrono::seconds(20)));
        FAIL("no exception");
    } catch (const std::filesystem::filesystem_error& e) {
        INFO(e.what());
        CHECK(e.code() == std::error_code(ELOOP, std::generic_category()));
        CHECK(e.path1() == file);
        CHECK_THAT(std::string(e.what()),
                   ContainsSubstring("cannot look for the unique id's file"));
    }
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
}
