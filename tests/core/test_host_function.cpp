// gpu/host_function.hpp: the owned callable of stream::launch_host_func, its trampolines (called
// here directly, as CUDA would call them), the capture's user object, and the exception report.
#include <gpu/capture.hpp>
#include <gpu/graph.hpp>
#include <gpu/host_function.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace {

// Counts its calls and says when it is destroyed (the callable's copies share the counters).
struct probe {
    std::shared_ptr<int> calls = std::make_shared<int>(0);
    std::shared_ptr<bool> destroyed = std::make_shared<bool>(false);

    struct marker {
        std::shared_ptr<bool> flag;
        ~marker()
        {
            if (flag) {
                *flag = true;
            }
        }
    };

    // A callable that counts and, through the marker it holds, reports its destruction.
    auto callable() const
    {
        // Made in place: a temporary marker's destructor would raise the flag now.
        std::shared_ptr<marker> mark(new marker{destroyed});
        return [count = calls, mark] { ++*count; };
    }
};

} // namespace

TEST_CASE("a host function outside a capture runs once, then is destroyed", "[host_function]")
{
    const probe p;
    std::unique_ptr<gpu::detail::host_callback> callback =
        gpu::detail::make_host_callback(p.callable());
    CHECK(*p.calls == 0);
    CHECK_FALSE(*p.destroyed);
    gpu::detail::run_host_callback_once(callback.release()); // what CUDA calls
    CHECK(*p.calls == 1);
    CHECK(*p.destroyed);
}

TEST_CASE("a captured host function runs at every replay and lives until its keeper goes",
          "[host_function]")
{
    const probe p;
    std::unique_ptr<gpu::detail::host_callback> callback =
        gpu::detail::make_host_callback(p.callable());
    void* kept = callback.release();
    for (int replay = 1; replay <= 3; ++replay) {
        gpu::detail::run_host_callback_kept(kept); // one graph replay each
        CHECK(*p.calls == replay);
        CHECK_FALSE(*p.destroyed);
    }
    gpu::detail::destroy_host_callback(kept); // the user object's destructor
    CHECK(*p.destroyed);
    CHECK(*p.calls == 3);
}

TEST_CASE("an exception escaping a host function is caught, counted and never rethrown",
          "[host_function]")
{
    const std::size_t before = gpu::host_function_exceptions();
    const probe p;
    auto callable = [inner = p.callable()] {
        inner();
        throw std::runtime_error("the callback failed on purpose");
    };
    CHECK_NOTHROW(gpu::detail::run_host_callback_once(
        gpu::detail::make_host_callback(std::move(callable)).release()));
    CHECK(gpu::host_function_exceptions() == before + 1);
    CHECK(*p.calls == 1);
    CHECK(*p.destroyed); // destroyed after its failed run: nothing leaks

    // Not derived from std::exception: still caught at the C boundary.
    std::unique_ptr<gpu::detail::host_callback> odd =
        gpu::detail::make_host_callback([] { throw 42; });
    void* kept = odd.release();
    CHECK_NOTHROW(gpu::detail::run_host_callback_kept(kept));
    CHECK_NOTHROW(gpu::detail::run_host_callback_kept(kept));
    CHECK(gpu::host_function_exceptions() == before + 3);
    gpu::detail::destroy_host_callback(kept);
}

TEST_CASE("a host function takes no arguments, and the callable is moved, not copied",
          "[host_function]")
{
    STATIC_REQUIRE(
        std::is_nothrow_invocable_v<decltype(&gpu::detail::run_host_callback_once), void*>);
    auto unique = std::make_unique<int>(7);
    int seen = 0;
    auto move_only = [value = std::move(unique), &seen] { seen = *value; };
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<decltype(move_only)>);
    gpu::detail::run_host_callback_once(
        gpu::detail::make_host_callback(std::move(move_only)).release());
    CHECK(seen == 7);
}

TEST_CASE("launching a host function without CUDA throws and destroys the callable",
          "[host_function]")
{
    if (gpu::is_available()) {
        SUCCEED("CUDA is available here; launching is covered by the [gpu] tests");
        return;
    }
    const probe p;
    CHECK_THROWS_AS(gpu::legacy_default_stream.launch_host_func(p.callable()), gpu::cuda_error);
    CHECK(*p.calls == 0);
    CHECK(*p.destroyed);
}

TEST_CASE("a moved-from stream refuses launch_host_func before CUDA", "[host_function]")
{
    const auto empty = gpu::stream::from_native_handle(nullptr);
    const probe p;
    CHECK_THROWS_AS(empty.launch_host_func(p.callable()), std::logic_error);
    CHECK(*p.calls == 0);
    CHECK(*p.destroyed);
}

TEST_CASE("a host function runs on the stream, in order, and is destroyed after",
          "[host_function][gpu]")
{
    gpu::stream s;
    const probe p;
    std::atomic<int> order{0};
    int first = -1;
    int second = -1;
    s.launch_host_func([&] { first = order++; });
    s.launch_host_func(p.callable());
    s.launch_host_func([&] { second = order++; });
    s.synchronize();
    CHECK(first == 0);
    CHECK(second == 1);
    CHECK(*p.calls == 1);
    CHECK(*p.destroyed);
}

TEST_CASE("an exception in a launched host function is reported, and the stream goes on",
          "[host_function][gpu]")
{
    gpu::stream s;
    const std::size_t before = gpu::host_function_exceptions();
    bool after = false;
    s.launch_host_func([] { throw std::runtime_error("thrown on CUDA's thread on purpose"); });
    s.launch_host_func([&] { after = true; });
    s.synchronize();
    CHECK(gpu::host_function_exceptions() == before + 1);
    CHECK(after);
}

TEST_CASE("a captured host function runs at every replay and is kept by the graph",
          "[host_function][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    const probe p;
    gpu::graph g =
        gpu::capture(s, [&](gpu::stream_ref captured) { captured.launch_host_func(p.callable()); });
    CHECK(*p.calls == 0);
    {
        gpu::graph_exec exec(g);
        for (int replay = 1; replay <= 3; ++replay) {
            exec.launch(s);
            s.synchronize();
            CHECK(*p.calls == replay);
            CHECK_FALSE(*p.destroyed);
        }
    }
    CHECK_FALSE(*p.destroyed); // the graph still holds it
}
