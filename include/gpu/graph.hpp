/// @file graph.hpp
/// @brief CUDA graphs: the captured `graph`, its executable instance `graph_exec`, launching,
/// and updating an instance in place from a graph captured again.
///
/// A training step or an inference request is worth capturing once and replaying: the host
/// then queues one launch instead of hundreds of kernels and library calls, what
/// `torch.compile(mode="reduce-overhead")` and `torch.cuda.CUDAGraph` do. Capture is in
/// `<gpu/capture.hpp>` (`gpu::capture_scope`, `gpu::capture`), which includes this header:
///
/// @code
/// gpu::graph step = gpu::capture(stream, [&](gpu::stream_ref s) { forward_backward_step(s); });
/// gpu::graph_exec exec(step);          // instantiate once
/// for (int i = 0; i < steps; ++i) {
///     exec.launch(stream);             // replay: same kernels, same addresses
/// }
/// @endcode
///
/// A graph replays the work with the arguments it was captured with: the same device
/// addresses, the same host scalars. State that changes from step to step lives in device
/// memory that the captured kernels read. Graph objects are not thread-safe (CUDA's rule): use
/// one `graph` or `graph_exec` from one thread at a time.
#pragma once

#include <gpu/detail/unique_handle.hpp>
#include <gpu/error.hpp>
#include <gpu/stream.hpp>

#include <cuda_runtime_api.h>

#include <cstddef>
#include <source_location>
#include <string>
#include <string_view>

namespace gpu {

namespace detail {
/// @brief Destroys a CUDA graph; failures are reported, never thrown.
struct graph_deleter {
    void operator()(cudaGraph_t handle) const noexcept
    {
        detail::report_destroy_failure("cudaGraphDestroy", cudaGraphDestroy(handle));
    }
};

/// @brief Destroys an executable graph; failures are reported, never thrown. CUDA frees an
/// instance that is still running once its launch completes.
struct graph_exec_deleter {
    void operator()(cudaGraphExec_t handle) const noexcept
    {
        detail::report_destroy_failure("cudaGraphExecDestroy", cudaGraphExecDestroy(handle));
    }
};
} // namespace detail

/// @brief An owning CUDA graph (`cudaGraph_t`): work recorded once, usually by a capture
/// (`gpu::capture_scope::end`, `gpu::capture`), to instantiate as a `graph_exec`. Move-only.
///
/// A graph is a description: nothing in it runs until an instance of it is launched, and it
/// can be destroyed once instantiated (the instance keeps what it needs).
class graph {
public:
    /// @brief Holds no graph, as after a move: a place to assign a captured graph to later.
    /// Every operation but assignment, `get()`, `release()` and `operator bool` then throws
    /// `std::logic_error`.
    graph() noexcept = default;

    /// @brief Adopts a graph created elsewhere (`cudaGraphCreate`, `cudaStreamEndCapture`); it
    /// will be destroyed with this object. A null handle gives an empty graph.
    [[nodiscard]] static graph from_native_handle(cudaGraph_t handle) noexcept
    {
        graph adopted;
        adopted.handle_.reset(handle);
        return adopted;
    }

    /// @brief The number of nodes at the top level of the graph (`cudaGraphGetNodes`): kernels,
    /// copies, memsets, allocations, frees, event records and waits, child graphs.
    /// @throws std::logic_error on an empty or moved-from graph
    /// @throws gpu::cuda_error when CUDA fails
    [[nodiscard]] std::size_t node_count() const
    {
        std::size_t count = 0;
        GPU_CUDA_CHECK(cudaGraphGetNodes(native("gpu::graph::node_count"), nullptr, &count));
        return count;
    }

    /// @brief Writes the graph as a Graphviz DOT file with every node's parameters
    /// (`cudaGraphDebugDotPrint`, verbose): what a capture recorded, for debugging.
    /// @param path the file to write (replaced when it exists)
    /// @throws std::logic_error on an empty or moved-from graph
    /// @throws gpu::cuda_error when CUDA fails or the file cannot be written
    void write_dot(const std::string& path) const
    {
        GPU_CUDA_CHECK(cudaGraphDebugDotPrint(native("gpu::graph::write_dot"), path.c_str(),
                                              cudaGraphDebugDotFlagsVerbose));
    }

    /// @brief The raw handle, still owned (null when empty).
    [[nodiscard]] cudaGraph_t get() const noexcept { return handle_.get(); }

    /// @brief Whether a graph is owned (false when default-constructed, after a move or
    /// `release`).
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

    /// @brief Gives up ownership; the caller must destroy the graph (`cudaGraphDestroy`).
    /// @post this object is empty: `get() == nullptr`, and every operation throws
    /// `std::logic_error`.
    [[nodiscard]] cudaGraph_t release() noexcept { return handle_.release(); }

    /// @brief Moving leaves the source without a graph.
    /// @post `other.get() == nullptr`; using `other` throws `std::logic_error`
    graph(graph&& other) noexcept = default;
    /// @brief Destroys the owned graph and takes @p other's.
    /// @post `other.get() == nullptr`, as after the move constructor
    graph& operator=(graph&& other) noexcept = default;
    graph(const graph&) = delete;
    graph& operator=(const graph&) = delete;
    /// @brief Destroys the graph (instances made from it stay valid).
    ~graph() = default;

private:
    friend class graph_exec;

    // The handle, or the std::logic_error naming the operation on an empty graph (CUDA would
    // reject a null graph only inside the call, with a less clear error).
    [[nodiscard]] cudaGraph_t native(const char* operation) const
    {
        if (!handle_) {
            throw_empty(operation);
        }
        return handle_.get();
    }
    [[noreturn]] static void throw_empty(const char* operation);

    detail::unique_handle<cudaGraph_t, detail::graph_deleter> handle_;
};

/// @brief How `graph_exec` instantiates a graph; combine with `|`.
enum class graph_instantiate_flags : unsigned long long {
    none = 0, ///< CUDA's defaults
    /// Frees what the graph allocated and did not free (a `device_buffer` made during the
    /// capture that outlived it) before each relaunch, instead of failing the relaunch with
    /// `cudaErrorInvalidValue`.
    auto_free_on_launch = cudaGraphInstantiateFlagAutoFreeOnLaunch,
    /// Runs the nodes with the priorities they were captured with (a stream's priority)
    /// instead of the priority of the stream the graph is launched on.
    use_node_priority = cudaGraphInstantiateFlagUseNodePriority,
};

/// @brief Combines instantiation flags.
[[nodiscard]] constexpr graph_instantiate_flags operator|(graph_instantiate_flags a,
                                                          graph_instantiate_flags b) noexcept
{
    return static_cast<graph_instantiate_flags>(static_cast<unsigned long long>(a) |
                                                static_cast<unsigned long long>(b));
}

/// @brief What `graph_exec::update` did.
enum class graph_update_kind {
    in_place,       ///< `cudaGraphExecUpdate` applied the new graph's parameters to the instance
    reinstantiated, ///< the new graph differed too much; the instance was made again from it
};

/// @brief The outcome of `graph_exec::update`: what was done, and why an update in place was
/// refused.
struct graph_update_result {
    graph_update_kind kind = graph_update_kind::in_place; ///< what was done
    /// Why CUDA refused the update in place, e.g. `the topology changed (a node was added or
    /// removed, or its dependencies differ)`; empty when it was applied in place.
    std::string_view reason = {};

    /// @brief Whether the instance was updated in place (no new instantiation).
    [[nodiscard]] constexpr bool in_place() const noexcept
    {
        return kind == graph_update_kind::in_place;
    }
};

namespace detail {
/// @brief Why `cudaGraphExecUpdate` refused an update, in words, e.g. `the topology changed
/// (...)` for `cudaGraphExecUpdateErrorTopologyChanged`; what `graph_update_result::reason`
/// holds. Never empty.
[[nodiscard]] std::string_view graph_update_reason(cudaGraphExecUpdateResult result) noexcept;
} // namespace detail

/// @brief An owning executable graph (`cudaGraphExec_t`): a `graph` instantiated for launching.
/// Move-only.
///
/// Instantiating costs about as much as the work it saves over many launches: make the
/// instance once, launch it many times. Only one launch of an instance runs at a time; CUDA
/// orders a launch after the previous launch of the same instance, on any stream.
class graph_exec {
public:
    /// @brief Holds no instance, as after a move: a place to assign one to later. Every
    /// operation but assignment, `get()`, `release()` and `operator bool` then throws
    /// `std::logic_error`.
    graph_exec() noexcept = default;

    /// @brief Instantiates @p from (`cudaGraphInstantiateWithFlags`). @p from may then be
    /// destroyed or captured into again.
    /// @param from the graph to instantiate
    /// @param flags how to instantiate; `auto_free_on_launch` when the graph allocates memory
    /// that it does not free
    /// @param where the caller's source location, for errors
    /// @throws std::logic_error when @p from is empty or moved from
    /// @throws gpu::cuda_error when CUDA cannot instantiate the graph (a graph with memory
    /// nodes may have one instance at a time)
    explicit graph_exec(const graph& from,
                        graph_instantiate_flags flags = graph_instantiate_flags::none,
                        std::source_location where = std::source_location::current());

    /// @brief Adopts an executable graph created elsewhere; it will be destroyed with this
    /// object. A null handle gives an empty instance.
    [[nodiscard]] static graph_exec from_native_handle(cudaGraphExec_t handle) noexcept
    {
        graph_exec adopted;
        adopted.handle_.reset(handle);
        return adopted;
    }

    /// @brief Queues the graph's work on @p stream (`cudaGraphLaunch`): after the work already
    /// queued there, and after the previous launch of this instance. Does not block; can itself
    /// be captured into another graph.
    /// @throws std::logic_error on an empty or moved-from instance
    /// @throws gpu::cuda_error when CUDA refuses the launch (e.g. memory the graph allocated
    /// in its previous launch is still not freed, without `auto_free_on_launch`)
    void launch(stream_ref stream) const
    {
        GPU_CUDA_CHECK(cudaGraphLaunch(native("gpu::graph_exec::launch"), stream.get()));
    }

    /// @brief Prepares the instance on the device on @p stream without running it
    /// (`cudaGraphUpload`), so that the first `launch` costs no more than the later ones;
    /// optional: the first launch uploads otherwise.
    /// @throws std::logic_error on an empty or moved-from instance
    /// @throws gpu::cuda_error when CUDA fails
    void upload(stream_ref stream) const
    {
        GPU_CUDA_CHECK(cudaGraphUpload(native("gpu::graph_exec::upload"), stream.get()));
    }

    /// @brief The flags this instance was made with (`cudaGraphExecGetFlags`).
    /// @throws std::logic_error on an empty or moved-from instance
    /// @throws gpu::cuda_error when CUDA fails
    [[nodiscard]] graph_instantiate_flags flags() const
    {
        unsigned long long value = 0;
        GPU_CUDA_CHECK(cudaGraphExecGetFlags(native("gpu::graph_exec::flags"), &value));
        return static_cast<graph_instantiate_flags>(value);
    }

    /// @brief Makes this instance run @p from from its next launch on: in place when only the
    /// nodes' parameters differ (`cudaGraphExecUpdate`: new addresses, sizes, kernel
    /// arguments, which is much cheaper than instantiating), else by instantiating @p from
    /// with this instance's flags and replacing the instance (the topology, a node's type or
    /// a kernel changed). Launches already queued run the old work.
    ///
    /// The usual use: capture the step again after its buffers moved (a new batch size, a
    /// reallocated workspace) and update the instance with it.
    /// @param from the graph to run from now on, usually the same work captured again
    /// @param where the caller's source location, for errors
    /// @return what was done, and why an update in place was refused
    /// @throws std::logic_error when this instance or @p from is empty or moved from
    /// @throws gpu::cuda_error when CUDA fails otherwise; the instance is then unchanged
    graph_update_result update(const graph& from,
                               std::source_location where = std::source_location::current());

    /// @brief The raw handle, still owned (null when empty).
    [[nodiscard]] cudaGraphExec_t get() const noexcept { return handle_.get(); }

    /// @brief Whether an instance is owned (false when default-constructed, after a move or
    /// `release`).
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

    /// @brief Gives up ownership; the caller must destroy the instance (`cudaGraphExecDestroy`).
    /// @post this object is empty: `get() == nullptr`, and every operation throws
    /// `std::logic_error`.
    [[nodiscard]] cudaGraphExec_t release() noexcept { return handle_.release(); }

    /// @brief Moving leaves the source without an instance.
    /// @post `other.get() == nullptr`; using `other` throws `std::logic_error`
    graph_exec(graph_exec&& other) noexcept = default;
    /// @brief Destroys the owned instance and takes @p other's.
    /// @post `other.get() == nullptr`, as after the move constructor
    graph_exec& operator=(graph_exec&& other) noexcept = default;
    graph_exec(const graph_exec&) = delete;
    graph_exec& operator=(const graph_exec&) = delete;
    /// @brief Destroys the instance (a launch still running completes first; CUDA defers the
    /// release).
    ~graph_exec() = default;

private:
    [[nodiscard]] cudaGraphExec_t native(const char* operation) const
    {
        if (!handle_) {
            throw_empty(operation);
        }
        return handle_.get();
    }
    [[noreturn]] static void throw_empty(const char* operation);

    detail::unique_handle<cudaGraphExec_t, detail::graph_exec_deleter> handle_;
};

} // namespace gpu
