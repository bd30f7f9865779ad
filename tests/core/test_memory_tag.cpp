// gpu/memory_tag.hpp: categories, the standard and defined tags, the thread's tag scope.
#include <gpu/memory_tag.hpp>

#include "catch.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using Catch::Matchers::ContainsSubstring;

TEST_CASE("each category has a standard tag named as it, with a fix", "[memory_tag]")
{
    std::set<std::string> names;
    for (std::size_t i = 0; i < gpu::memory_category_count; ++i) {
        const auto category = static_cast<gpu::memory_category>(i);
        const gpu::memory_tag tag = gpu::memory_tag::standard(category);
        CHECK(tag.id() == i);
        CHECK(tag.category() == category);
        CHECK(tag.name() == gpu::to_string(category));
        CHECK(tag.fix() == gpu::default_fix(category));
        CHECK_FALSE(tag.fix().empty());
        names.insert(tag.name());
    }
    CHECK(names.size() == gpu::memory_category_count);
    CHECK(gpu::memory_tag() == gpu::memory_tag::user());
    CHECK(gpu::memory_tag::user().name() == "user");
    CHECK(gpu::to_string(gpu::memory_category::optimizer_state) == "optimizer state");
    CHECK_THAT(std::string(gpu::default_fix(gpu::memory_category::activations)),
               ContainsSubstring("batch size") && ContainsSubstring("inference bucket"));
    CHECK_THAT(std::string(gpu::default_fix(gpu::memory_category::workspace)),
               ContainsSubstring("workspace budget"));
}

TEST_CASE("a defined tag keeps its name, category and fix, once per name", "[memory_tag]")
{
    const gpu::memory_tag plan = gpu::memory_tag::define(
        "test plan workspace", gpu::memory_category::workspace, "lower the test's budget");
    CHECK(plan.id() >= gpu::memory_category_count);
    CHECK(plan.name() == "test plan workspace");
    CHECK(plan.category() == gpu::memory_category::workspace);
    CHECK(plan.fix() == "lower the test's budget");
    const gpu::memory_tag again = gpu::memory_tag::define(
        "test plan workspace", gpu::memory_category::workspace, "another fix");
    CHECK(again == plan);
    CHECK(again.fix() == "lower the test's budget"); // the first definition's
    CHECK(gpu::memory_tag::from_id(plan.id()) == plan);

    const gpu::memory_tag without_fix =
        gpu::memory_tag::define("test graph memory", gpu::memory_category::graph_pool);
    CHECK(without_fix.fix() == gpu::default_fix(gpu::memory_category::graph_pool));

    const gpu::memory_tag cache = gpu::memory_tag::named("test kv cache");
    CHECK(cache.category() == gpu::memory_category::user);
    CHECK(gpu::memory_tag::named("test kv cache") == cache);
    CHECK(gpu::memory_tag::named("user") == gpu::memory_tag::user());
}

namespace {
constinit gpu::memory_tag_definition test_cache_tag{
    "test definition cache", gpu::memory_category::scratch, "drop the test's cache"};
constinit gpu::memory_tag_definition test_refused_definition{"activations",
                                                             gpu::memory_category::user};
} // namespace

TEST_CASE("a tag definition defines its tag on first use, the same one each time after",
          "[memory_tag]")
{
    std::vector<gpu::memory_tag> seen(4);
    std::vector<std::thread> threads;
    for (gpu::memory_tag& tag : seen) {
        threads.emplace_back([&tag] { tag = test_cache_tag(); });
    }
    for (std::thread& thread : threads) {
        thread.join();
    }
    const gpu::memory_tag cache = test_cache_tag();
    CHECK(cache.id() >= gpu::memory_category_count);
    CHECK(cache.name() == "test definition cache");
    CHECK(cache.category() == gpu::memory_category::scratch);
    CHECK(cache.fix() == "drop the test's cache");
    for (const gpu::memory_tag& tag : seen) {
        CHECK(tag == cache);
    }
    CHECK(gpu::memory_tag::define("test definition cache", gpu::memory_category::scratch) == cache);
    // A refused definition throws as memory_tag::define does, at each use (nothing is cached).
    CHECK_THROWS_WITH(test_refused_definition(), ContainsSubstring("already a tag of category"));
    CHECK_THROWS_AS(test_refused_definition(), std::invalid_argument);
}

TEST_CASE("a tag name of another category, an empty name, an unknown id are refused",
          "[memory_tag]")
{
    CHECK_THROWS_WITH(gpu::memory_tag::named("activations"),
                      ContainsSubstring("\"activations\" is already a tag of category "
                                        "activations, not user"));
    static_cast<void>(gpu::memory_tag::define("test refused", gpu::memory_category::scratch));
    CHECK_THROWS_AS(gpu::memory_tag::define("test refused", gpu::memory_category::parameters),
                    std::invalid_argument);
    CHECK_THROWS_WITH(gpu::memory_tag::named(""), ContainsSubstring("needs a name"));
    CHECK_THROWS_WITH(gpu::memory_tag::from_id(60000), ContainsSubstring("no tag has id 60000"));
}

TEST_CASE("tag scopes nest, restore, and belong to their thread", "[memory_tag]")
{
    const gpu::memory_tag grads = gpu::memory_tag::standard(gpu::memory_category::gradients);
    const gpu::memory_tag acts = gpu::memory_tag::standard(gpu::memory_category::activations);
    CHECK(gpu::current_memory_tag() == gpu::memory_tag::user());
    {
        const gpu::memory_tag_scope outer(grads);
        CHECK(gpu::current_memory_tag() == grads);
        {
            const gpu::memory_tag_scope inner(acts);
            CHECK(gpu::current_memory_tag() == acts);
            gpu::memory_tag seen_elsewhere = acts;
            std::thread([&] { seen_elsewhere = gpu::current_memory_tag(); }).join();
            CHECK(seen_elsewhere == gpu::memory_tag::user());
        }
        CHECK(gpu::current_memory_tag() == grads);
    }
    CHECK(gpu::current_memory_tag() == gpu::memory_tag::user());
}

TEST_CASE("a scope names the source location allocation errors report", "[memory_tag]")
{
    const std::source_location fallback = std::source_location::current();
    CHECK(gpu::detail::allocation_site_or(fallback).line() == fallback.line());
    const gpu::memory_tag_scope scope(gpu::memory_tag::user());
    const std::uint_least32_t line = std::source_location::current().line() - 1;
    CHECK(gpu::detail::allocation_site_or(fallback).line() == line);
    CHECK(scope.where().line() == line);
}
