/// @file host_function.hpp
/// @brief Host functions queued on a stream (`stream::launch_host_func`): the owned callable, the
/// trampolines CUDA calls, and the count of exceptions that escaped one.
///
/// Who owns the callable:
/// - **on a stream that is not capturing**, the queued call owns it: the trampoline runs it once,
///   then destroys it, on CUDA's host-function thread. If queueing fails, nothing was queued and
///   the callable is destroyed before the error is thrown.
/// - **inside a capture**, the call becomes a host node of the graph, and an executable graph
///   runs that node at every replay: the same callable, many times. So it is not destroyed after
///   a run. It is held by a CUDA user object (`cudaUserObjectCreate`) whose only reference is
///   moved to the capturing graph (`cudaGraphRetainUserObject(..., cudaGraphUserObjectMove)`);
///   every executable graph instantiated from that graph holds a reference too. The callable
///   lives until the last of the graph and its executable graphs is destroyed, and CUDA then
///   destroys it on an internal thread, without synchronising with anything.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <memory>
#include <source_location>
#include <type_traits>
#include <utility>

namespace gpu {

/// @brief How many exceptions escaped host functions queued with `launch_host_func` in this
/// process so far. Such an exception cannot reach the code that queued the function (it runs
/// on CUDA's thread, behind a C interface): it is caught there, the first one is printed to
/// stderr with its `what()`, and every one is counted here, so that a test or a program can
/// check after synchronising.
[[nodiscard]] std::size_t host_function_exceptions() noexcept;

namespace detail {

/// @brief A callable as a queued host function owns it: type-erased, on the heap.
class host_callback {
public:
    host_callback() = default;
    host_callback(const host_callback&) = delete;
    host_callback& operator=(const host_callback&) = delete;
    /// @brief Destroys the callable (on CUDA's thread: its destructor must not call CUDA).
    virtual ~host_callback() = default;
    /// @brief Calls the callable.
    virtual void run() = 0;
};

/// @brief The `host_callback` of a callable of type @p F (a decayed copy or move of it).
template <class F>
class host_callable final : public host_callback {
public:
    /// @brief Keeps @p callable.
    explicit host_callable(F callable) : callable_(std::move(callable)) {}
    /// @brief Calls it.
    void run() override { callable_(); }

private:
    F callable_;
};

/// @brief @p callable on the heap, ready to be queued.
template <class F>
[[nodiscard]] std::unique_ptr<host_callback> make_host_callback(F&& callable)
{
    using stored = std::decay_t<F>;
    static_assert(std::is_invocable_v<stored&>, "a host function is called with no arguments");
    return std::make_unique<host_callable<stored>>(std::forward<F>(callable));
}

/// @brief What CUDA calls for a host function outside a capture: runs the `host_callback` at
/// @p data once, reports an escaping exception (see `host_function_exceptions`), then destroys
/// it. Never throws.
void run_host_callback_once(void* data) noexcept;

/// @brief What CUDA calls for a host node of a captured graph: runs the `host_callback` at
/// @p data and keeps it for the next replay; an escaping exception is reported. Never throws.
void run_host_callback_kept(void* data) noexcept;

/// @brief The destructor of the user object that keeps a captured callable: destroys the
/// `host_callback` at @p data. Never throws.
void destroy_host_callback(void* data) noexcept;

/// @brief Queues @p callback on @p stream (see the file's notes for who owns it after).
/// @throws gpu::cuda_error when CUDA refuses (the callback is then destroyed, or, when the
/// capturing graph already holds it, released with that graph)
void launch_host_callback(cudaStream_t stream, std::unique_ptr<host_callback> callback,
                          std::source_location where);

} // namespace detail
} // namespace gpu
