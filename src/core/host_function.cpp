// Host functions on a stream: the trampolines CUDA calls, the user object that keeps a captured
// callable alive for every replay, and the report of exceptions that escape a callable.
#include <gpu/error.hpp>
#include <gpu/host_function.hpp>

#include <atomic>
#include <cstdio>
#include <exception>

namespace gpu {

namespace {

std::atomic<std::size_t> escaped_exceptions{0};

// Prints the first escaped exception (later ones are counted only: a callable replayed by a graph
// thousands of times would otherwise flood stderr).
void report_escaped(const char* what) noexcept
{
    if (escaped_exceptions.fetch_add(1, std::memory_order_relaxed) != 0) {
        return;
    }
    std::fprintf(stderr,
                 "cudagap: a host function queued with gpu::stream::launch_host_func threw: %s "
                 "(caught on CUDA's thread, where it cannot reach the caller; later ones are "
                 "counted in gpu::host_function_exceptions(), not printed)\n",
                 what);
}

// Runs the callable; nothing crosses the C boundary back into CUDA.
void run_guarded(detail::host_callback& callback) noexcept
{
    try {
        callback.run();
    } catch (const std::exception& e) {
        report_escaped(e.what());
    } catch (...) {
        report_escaped("an exception not derived from std::exception");
    }
}

} // namespace

std::size_t host_function_exceptions() noexcept
{
    return escaped_exceptions.load(std::memory_order_relaxed);
}

namespace detail {

void run_host_callback_once(void* data) noexcept
{
    auto* callback = static_cast<host_callback*>(data);
    run_guarded(*callback);
    delete callback; // NOLINT(cppcoreguidelines-owning-memory): the queued call owned it
}

void run_host_callback_kept(void* data) noexcept
{
    run_guarded(*static_cast<host_callback*>(data));
}

void destroy_host_callback(void* data) noexcept
{
    delete static_cast<host_callback*>(data); // NOLINT(cppcoreguidelines-owning-memory)
}

namespace {

// Hands @p callback to the graph @p stream is capturing into, then queues its host node. The
// user object's one reference is moved to the graph, so the graph (and each executable graph
// made from it) keeps the callable for every replay and destroys it with the last of them.
void launch_captured(cudaStream_t stream, cudaGraph_t graph,
                     std::unique_ptr<host_callback> callback, std::source_location where)
{
    cudaUserObject_t keeper = nullptr;
    check(cudaUserObjectCreate(&keeper, callback.get(), destroy_host_callback, 1,
                               cudaUserObjectNoDestructorSync),
          "cudaUserObjectCreate (keeping a captured host function)", where);
    host_callback* kept = callback.release(); // the user object destroys it from now on
    const cudaError_t retained =
        cudaGraphRetainUserObject(graph, keeper, 1, cudaGraphUserObjectMove);
    if (retained != cudaSuccess) {
        // Our reference was not moved: dropping it destroys the callable.
        static_cast<void>(cudaUserObjectRelease(keeper, 1));
        check(retained, "cudaGraphRetainUserObject (keeping a captured host function)", where);
    }
    check(cudaLaunchHostFunc(stream, run_host_callback_kept, kept),
          "cudaLaunchHostFunc (inside a capture)", where);
}

} // namespace

void launch_host_callback(cudaStream_t stream, std::unique_ptr<host_callback> callback,
                          std::source_location where)
{
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    cudaGraph_t graph = nullptr;
    check(cudaStreamGetCaptureInfo(stream, &capture, nullptr, &graph, nullptr, nullptr, nullptr),
          "cudaStreamGetCaptureInfo (before cudaLaunchHostFunc)", where);
    if (capture == cudaStreamCaptureStatusActive) {
        launch_captured(stream, graph, std::move(callback), where);
        return;
    }
    // Not capturing (or an invalidated capture, which refuses the launch below): the queued
    // call owns the callable once CUDA has accepted it.
    check(cudaLaunchHostFunc(stream, run_host_callback_once, callback.get()), "cudaLaunchHostFunc",
          where);
    static_cast<void>(callback.release());
}

} // namespace detail
} // namespace gpu
