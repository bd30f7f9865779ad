// gpu/detail/unique_handle.hpp: the single implementation of moving and destroying handles.
#include <gpu/detail/unique_handle.hpp>

#include "catch.hpp"

#include <type_traits>
#include <utility>
#include <vector>

namespace {

std::vector<int> destroyed;

struct int_deleter {
    void operator()(int handle) const noexcept { destroyed.push_back(handle); }
};
using owner = gpu::detail::unique_handle<int, int_deleter>;

struct pair_handle {
    int id = 0;
    int size = 0;
    friend bool operator==(const pair_handle&, const pair_handle&) = default;
};
struct pair_deleter {
    void operator()(const pair_handle& handle) const noexcept { destroyed.push_back(handle.id); }
};

} // namespace

TEST_CASE("unique_handle destroys its handle exactly once", "[unique_handle]")
{
    destroyed.clear();
    {
        const owner a(7);
        CHECK(a.get() == 7);
        CHECK(static_cast<bool>(a));
    }
    CHECK(destroyed == std::vector<int>{7});
}

TEST_CASE("an empty unique_handle destroys nothing", "[unique_handle]")
{
    destroyed.clear();
    {
        const owner empty;
        CHECK_FALSE(static_cast<bool>(empty));
    }
    CHECK(destroyed.empty());
}

TEST_CASE("move construction transfers and leaves the null handle", "[unique_handle]")
{
    destroyed.clear();
    {
        owner a(3);
        owner b(std::move(a));
        CHECK(b.get() == 3);
        CHECK(a.get() == 0); // NOLINT(bugprone-use-after-move): the documented moved-from state
    }
    CHECK(destroyed == std::vector<int>{3});
}

TEST_CASE("move assignment destroys the old handle and takes the new one", "[unique_handle]")
{
    destroyed.clear();
    {
        owner a(1);
        owner b(2);
        b = std::move(a);
        CHECK(destroyed == std::vector<int>{2});
        CHECK(b.get() == 1);
        CHECK(a.get() == 0); // NOLINT(bugprone-use-after-move)
    }
    CHECK(destroyed == std::vector<int>{2, 1});
}

TEST_CASE("self move assignment keeps the handle", "[unique_handle]")
{
    destroyed.clear();
    owner a(5);
    owner& same = a;
    a = std::move(same);
    CHECK(a.get() == 5);
    CHECK(destroyed.empty());
}

TEST_CASE("release gives up ownership without destroying, reset destroys", "[unique_handle]")
{
    destroyed.clear();
    owner a(9);
    CHECK(a.release() == 9);
    CHECK_FALSE(static_cast<bool>(a));
    a.reset(10);
    a.reset(11);
    CHECK(destroyed == std::vector<int>{10});
    a.reset();
    CHECK(destroyed == std::vector<int>{10, 11});
}

TEST_CASE("swap exchanges the handles", "[unique_handle]")
{
    destroyed.clear();
    owner a(1);
    owner b(2);
    a.swap(b);
    CHECK(a.get() == 2);
    CHECK(b.get() == 1);
}

TEST_CASE("aggregate handles carry all of an owner's state through moves", "[unique_handle]")
{
    destroyed.clear();
    using pair_owner = gpu::detail::unique_handle<pair_handle, pair_deleter>;
    {
        pair_owner a(pair_handle{4, 100});
        pair_owner b(std::move(a));
        CHECK(b.get() == pair_handle{4, 100});
        CHECK(a.get() == pair_handle{}); // NOLINT(bugprone-use-after-move)
    }
    CHECK(destroyed == std::vector<int>{4});
}

TEST_CASE("unique_handle is move-only and never throws when moved", "[unique_handle]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<owner>);
    STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<owner>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<owner>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<owner>);
    STATIC_REQUIRE(std::is_nothrow_destructible_v<owner>);
}
