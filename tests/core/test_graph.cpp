// gpu/graph.hpp: graph and graph_exec as owners (empty, moved from, released), instantiation
// flags, the words of a refused update; on a GPU, replay, upload, update in place and by a new
// instance, and the DOT dump. Capturing is tested in test_capture.cpp.
#include <gpu/capture.hpp>
#include <gpu/graph.hpp>
#include <gpu/memory.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"
#include "graph_kernels.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;

namespace {

constexpr std::size_t element_count = 1000;

// A graph of `kernels` launches of x += y on s.
gpu::graph capture_adds(gpu::stream_ref s, float* x, const float* y, int kernels)
{
    return gpu::capture(s, [&](gpu::stream_ref captured) {
        for (int i = 0; i < kernels; ++i) {
            GPU_CUDA_CHECK(gpu::test::add_into(x, y, element_count, captured.get()));
        }
    });
}

// Every element equals `value`.
void check_all(const gpu::device_buffer<float>& buffer, float value)
{
    const std::vector<float> host = buffer.to_host();
    std::size_t wrong = 0;
    for (const float x : host) {
        wrong += x == value ? 0 : 1;
    }
    INFO("expected every element to be " << value << ", first is " << host.front());
    CHECK(wrong == 0);
}

} // namespace

TEST_CASE("graph and graph_exec are move-only owners", "[graph]")
{
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<gpu::graph>);
    STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<gpu::graph>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<gpu::graph>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<gpu::graph>);
    STATIC_REQUIRE_FALSE(std::is_copy_constructible_v<gpu::graph_exec>);
    STATIC_REQUIRE_FALSE(std::is_copy_assignable_v<gpu::graph_exec>);
    STATIC_REQUIRE(std::is_nothrow_move_constructible_v<gpu::graph_exec>);
    STATIC_REQUIRE(std::is_nothrow_move_assignable_v<gpu::graph_exec>);
    // Instantiating is explicit: a graph never turns into an instance silently.
    STATIC_REQUIRE_FALSE(std::is_convertible_v<const gpu::graph&, gpu::graph_exec>);
}

TEST_CASE("an empty graph refuses every operation with logic_error, before any CUDA call",
          "[graph]")
{
    const gpu::graph empty;
    CHECK_FALSE(empty);
    CHECK(empty.get() == nullptr);
    CHECK_THROWS_WITH(empty.node_count(), ContainsSubstring("gpu::graph::node_count") &&
                                              ContainsSubstring("moved from or released"));
    CHECK_THROWS_AS(empty.write_dot("never-written.dot"), std::logic_error);
    CHECK_THROWS_WITH(gpu::graph_exec(empty),
                      ContainsSubstring("gpu::graph_exec (instantiating a graph)") &&
                          ContainsSubstring("holds no CUDA graph"));
    gpu::graph adopted = gpu::graph::from_native_handle(nullptr);
    CHECK_FALSE(adopted);
    CHECK(adopted.release() == nullptr);
}

TEST_CASE("an empty graph_exec refuses every operation with logic_error, before any CUDA call",
          "[graph]")
{
    gpu::graph_exec empty;
    CHECK_FALSE(empty);
    CHECK(empty.get() == nullptr);
    const gpu::stream_ref per_thread(cudaStreamPerThread);
    CHECK_THROWS_WITH(empty.launch(per_thread), ContainsSubstring("gpu::graph_exec::launch") &&
                                                    ContainsSubstring("moved from or released"));
    CHECK_THROWS_AS(empty.upload(per_thread), std::logic_error);
    CHECK_THROWS_AS(empty.flags(), std::logic_error);
    const gpu::graph none;
    CHECK_THROWS_WITH(empty.update(none), ContainsSubstring("gpu::graph_exec::update"));
    CHECK_THROWS_AS(gpu::graph_exec::from_native_handle(nullptr).launch(per_thread),
                    std::logic_error);
}

TEST_CASE("moving an empty owner leaves both empty and usable for assignment", "[graph]")
{
    gpu::graph a;
    gpu::graph b(std::move(a));
    CHECK_FALSE(b);
    a = std::move(b); // NOLINT(bugprone-use-after-move): assigning to a moved-from owner is allowed
    CHECK_FALSE(a);
    gpu::graph_exec e;
    gpu::graph_exec f(std::move(e));
    CHECK_FALSE(f);
    CHECK_THROWS_AS(e.launch(gpu::stream_ref(cudaStreamPerThread)),
                    std::logic_error); // NOLINT(bugprone-use-after-move)
}

TEST_CASE("instantiation flags are CUDA's and combine", "[graph]")
{
    CHECK(static_cast<unsigned long long>(gpu::graph_instantiate_flags::none) == 0);
    CHECK(static_cast<unsigned long long>(gpu::graph_instantiate_flags::auto_free_on_launch |
                                          gpu::graph_instantiate_flags::use_node_priority) ==
          (cudaGraphInstantiateFlagAutoFreeOnLaunch | cudaGraphInstantiateFlagUseNodePriority));
}

TEST_CASE("a refused update says why in words", "[graph]")
{
    CHECK_THAT(
        std::string(gpu::detail::graph_update_reason(cudaGraphExecUpdateErrorTopologyChanged)),
        ContainsSubstring("topology changed"));
    CHECK_THAT(
        std::string(gpu::detail::graph_update_reason(cudaGraphExecUpdateErrorNodeTypeChanged)),
        ContainsSubstring("type changed"));
    CHECK_THAT(std::string(gpu::detail::graph_update_reason(cudaGraphExecUpdateErrorNotSupported)),
               ContainsSubstring("memory allocation"));
    for (const auto result :
         {cudaGraphExecUpdateError, cudaGraphExecUpdateErrorFunctionChanged,
          cudaGraphExecUpdateErrorParametersChanged,
          cudaGraphExecUpdateErrorUnsupportedFunctionChange,
          cudaGraphExecUpdateErrorAttributesChanged, static_cast<cudaGraphExecUpdateResult>(99)}) {
        CHECK_FALSE(gpu::detail::graph_update_reason(result).empty());
    }
    constexpr gpu::graph_update_result in_place;
    STATIC_REQUIRE(in_place.in_place());
    STATIC_REQUIRE(in_place.reason.empty());
    STATIC_REQUIRE_FALSE(
        gpu::graph_update_result{.kind = gpu::graph_update_kind::reinstantiated}.in_place());
}

TEST_CASE("the hint for a refused graph update points at graph_exec::update", "[graph]")
{
    CHECK_THAT(gpu::hint_for(cudaErrorGraphExecUpdateFailure),
               ContainsSubstring("instantiate it again") &&
                   ContainsSubstring("gpu::graph_exec::update"));
}

TEST_CASE("an instance replays its graph, uploaded or not", "[graph][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    auto x = gpu::device_buffer<float>::from_host(std::vector<float>(element_count, 0.0F), s);
    auto y = gpu::device_buffer<float>::from_host(std::vector<float>(element_count, 1.5F), s);
    const gpu::graph g = capture_adds(s, x.data(), y.data(), 2);
    CHECK(g.node_count() == 2);
    check_all(x, 0.0F); // captured, not run
    gpu::graph_exec exec(g);
    CHECK(exec.flags() == gpu::graph_instantiate_flags::none);
    exec.upload(s);
    for (int i = 0; i < 5; ++i) {
        exec.launch(s);
    }
    check_all(x, 15.0F); // 5 launches of 2 adds of 1.5

    // The graph may go: the instance keeps what it needs. Moving hands the instance over.
    gpu::graph_exec moved(std::move(exec));
    CHECK_FALSE(exec); // NOLINT(bugprone-use-after-move): the documented moved-from state
    CHECK_THROWS_AS(exec.launch(s), std::logic_error); // NOLINT(bugprone-use-after-move)
    moved.launch(s);
    check_all(x, 18.0F);
    gpu::graph_exec adopted = gpu::graph_exec::from_native_handle(moved.release());
    CHECK_FALSE(moved);
    adopted.launch(s);
    check_all(x, 21.0F);
}

TEST_CASE("update applies new addresses in place when the topology is the same", "[graph][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    auto x = gpu::device_buffer<float>::from_host(std::vector<float>(element_count, 0.0F), s);
    auto one = gpu::device_buffer<float>::from_host(std::vector<float>(element_count, 1.0F), s);
    auto two = gpu::device_buffer<float>::from_host(std::vector<float>(element_count, 2.0F), s);
    gpu::graph_exec exec(capture_adds(s, x.data(), one.data(), 1));
    exec.launch(s);
    check_all(x, 1.0F);
    const gpu::graph_update_result result = exec.update(capture_adds(s, x.data(), two.data(), 1));
    CHECK(result.kind == gpu::graph_update_kind::in_place);
    CHECK(result.reason.empty());
    exec.launch(s);
    check_all(x, 3.0F); // the new y
}

TEST_CASE("update instantiates again, with the same flags, when the topology changed",
          "[graph][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    auto x = gpu::device_buffer<float>::from_host(std::vector<float>(element_count, 0.0F), s);
    auto one = gpu::device_buffer<float>::from_host(std::vector<float>(element_count, 1.0F), s);
    gpu::graph_exec exec(capture_adds(s, x.data(), one.data(), 1),
                         gpu::graph_instantiate_flags::auto_free_on_launch);
    const cudaGraphExec_t before = exec.get();
    const gpu::graph_update_result result = exec.update(capture_adds(s, x.data(), one.data(), 3));
    CHECK(result.kind == gpu::graph_update_kind::reinstantiated);
    CHECK_FALSE(result.in_place());
    CHECK_THAT(std::string(result.reason), ContainsSubstring("topology"));
    CHECK(exec.get() != before);
    CHECK(exec.flags() == gpu::graph_instantiate_flags::auto_free_on_launch);
    exec.launch(s);
    check_all(x, 3.0F);                       // three adds: the new graph ran
    CHECK(cudaGetLastError() == cudaSuccess); // the refused update left no error behind
}

TEST_CASE("a graph is written as Graphviz DOT for debugging", "[graph][gpu]")
{
    gpu::stream s(gpu::stream_flags::non_blocking);
    auto x = gpu::device_buffer<float>::from_host(std::vector<float>(element_count, 0.0F), s);
    const gpu::graph g = capture_adds(s, x.data(), x.data(), 1);
    const std::string path = "cudagap_test_graph.dot";
    g.write_dot(path);
    std::ifstream file(path);
    std::string first;
    std::getline(file, first);
    CHECK_THAT(first, ContainsSubstring("digraph"));
    file.close();
    std::remove(path.c_str());
}
