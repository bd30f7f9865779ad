// gpu/nn/safetensors.hpp: write_safetensors is atomic. A finished write replaces the old file
// and leaves no temporary file; a failed one (a missing folder, a rename that cannot happen, a
// write cut short) leaves the old file as it was and no temporary file either.
#include <gpu/nn/safetensors.hpp>

#include "catch.hpp"
#include "file_support.hpp"

#include <csignal>
#include <system_error>
#include <vector>

#include <sys/resource.h>

using Catch::Matchers::ContainsSubstring;

namespace {

std::vector<gpu::nn::tensor_view> one_tensor(const std::vector<float>& values)
{
    return {gpu::nn::make_tensor_view("w", values, {values.size()})};
}

// Sets the largest file this process may write (RLIMIT_FSIZE) for its lifetime, and ignores
// SIGXFSZ, so that a write past the limit fails with EFBIG instead of killing the process.
// Root is not exempt, unlike from folder permissions.
class file_size_limit {
public:
    explicit file_size_limit(rlim_t bytes)
    {
        if (::getrlimit(RLIMIT_FSIZE, &saved_) != 0) {
            throw std::runtime_error("getrlimit failed");
        }
        previous_handler_ = std::signal(SIGXFSZ, SIG_IGN);
        rlimit limit = saved_;
        limit.rlim_cur = bytes;
        if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) {
            throw std::runtime_error("setrlimit failed");
        }
    }
    file_size_limit(const file_size_limit&) = delete;
    file_size_limit& operator=(const file_size_limit&) = delete;
    ~file_size_limit()
    {
        ::setrlimit(RLIMIT_FSIZE, &saved_);
        std::signal(SIGXFSZ, previous_handler_);
    }

private:
    rlimit saved_{};
    void (*previous_handler_)(int) = nullptr;
};

} // namespace

TEST_CASE("a write replaces the old file and leaves no temporary file", "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    const auto path = folder / "model.safetensors";
    const std::vector<float> old_values{1, 2};
    const std::vector<float> new_values{3, 4, 5};
    gpu::nn::write_safetensors(path, one_tensor(old_values));
    gpu::nn::write_safetensors(path, one_tensor(new_values), {{"step", "2"}});
    CHECK(folder.names() == std::vector<std::string>{"model.safetensors"});
    const gpu::nn::safetensors_file file = gpu::nn::read_safetensors(path);
    CHECK(file.values<float>("w", {3}) == new_values);
    CHECK(file.metadata().at("step") == "2");
}

TEST_CASE("a write into a missing folder fails naming the path, and creates nothing",
          "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    const std::vector<float> values{1};
    try {
        gpu::nn::write_safetensors(folder / "missing" / "model.safetensors", one_tensor(values));
        FAIL("the write succeeded");
    } catch (const std::filesystem::filesystem_error& e) {
        CHECK(e.code() == std::errc::no_such_file_or_directory);
        CHECK(e.path1() == folder / "missing" / "model.safetensors");
        CHECK_THAT(e.what(),
                   ContainsSubstring("gpu::nn::write_safetensors: cannot create a temporary file"));
    }
    CHECK(folder.names().empty());
}

TEST_CASE("a write whose rename fails leaves the target and no temporary file", "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    const auto path = folder / "model.safetensors";
    std::filesystem::create_directory(path);
    gpu::test::write_file(path / "inside", gpu::test::bytes_of("kept"));
    const std::vector<float> values{1, 2, 3};
    try {
        gpu::nn::write_safetensors(path, one_tensor(values)); // renaming a file over a folder fails
        FAIL("the write succeeded");
    } catch (const std::filesystem::filesystem_error& e) {
        CHECK(e.code() == std::errc::is_a_directory);
        CHECK_THAT(e.what(), ContainsSubstring("cannot rename the temporary file over the target"));
    }
    CHECK(folder.names() == std::vector<std::string>{"model.safetensors"});
    CHECK(gpu::test::read_file(path / "inside") == gpu::test::bytes_of("kept"));
}

TEST_CASE("a write cut short leaves the old file intact and no temporary file", "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    const auto path = folder / "model.safetensors";
    const std::vector<float> old_values{1, 2, 3};
    gpu::nn::write_safetensors(path, one_tensor(old_values));
    const std::vector<std::byte> old_bytes = gpu::test::read_file(path);

    const std::vector<float> big(1 << 16, 0.5F); // 256 KiB, past the 64 KiB limit below
    {
        const file_size_limit limit(1 << 16);
        try {
            gpu::nn::write_safetensors(path, one_tensor(big));
            FAIL("the write succeeded past the file size limit");
        } catch (const std::filesystem::filesystem_error& e) {
            CHECK(e.code() == std::errc::file_too_large);
            CHECK_THAT(e.what(), ContainsSubstring("cannot write the temporary file"));
        }
    }
    CHECK(folder.names() == std::vector<std::string>{"model.safetensors"});
    CHECK(gpu::test::read_file(path) == old_bytes);
    CHECK(gpu::nn::read_safetensors(path).values<float>("w", {3}) == old_values);
}

TEST_CASE("reading a missing file is a filesystem_error naming it", "[nn][safetensors]")
{
    const gpu::test::temporary_folder folder;
    try {
        static_cast<void>(gpu::nn::read_safetensors(folder / "absent.safetensors"));
        FAIL("the read succeeded");
    } catch (const std::filesystem::filesystem_error& e) {
        CHECK(e.code() == std::errc::no_such_file_or_directory);
        CHECK(e.path1() == folder / "absent.safetensors");
        CHECK_THAT(e.what(), ContainsSubstring("gpu::nn::read_safetensors: cannot open"));
    }
    CHECK_THROWS_AS(gpu::nn::read_safetensors(folder.path()),
                    std::filesystem::filesystem_error); // a folder
}
