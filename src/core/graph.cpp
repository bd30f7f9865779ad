// The out-of-line part of graphs: instantiation, the update in place with its fall-back to a new
// instance, and the errors for empty owners. Launch, upload and the queries are one checked
// call each, inline in graph.hpp.
#include <gpu/graph.hpp>
#include <gpu/detail/unique_handle.hpp>

#include <stdexcept>
#include <string>

namespace gpu {

namespace {

cudaGraphExec_t instantiate(cudaGraph_t from, unsigned long long flags, const char* api,
                            std::source_location where)
{
    cudaGraphExec_t made = nullptr;
    const cudaError_t status = cudaGraphInstantiateWithFlags(&made, from, flags);
    if (status != cudaSuccess) {
        detail::throw_error(status, api, where);
    }
    return made;
}

} // namespace

namespace detail {

std::string_view graph_update_reason(cudaGraphExecUpdateResult result) noexcept
{
    switch (result) {
    case cudaGraphExecUpdateErrorTopologyChanged:
        return "the topology changed (a node was added or removed, or its dependencies differ)";
    case cudaGraphExecUpdateErrorNodeTypeChanged:
        return "a node's type changed (e.g. a copy where a kernel was)";
    case cudaGraphExecUpdateErrorFunctionChanged:
    case cudaGraphExecUpdateErrorUnsupportedFunctionChange:
        return "a kernel node runs another function, in a way an update cannot apply";
    case cudaGraphExecUpdateErrorParametersChanged:
        return "a node's parameters changed in a way an update cannot apply (e.g. a copy "
               "between other kinds of memory)";
    case cudaGraphExecUpdateErrorAttributesChanged:
        return "a node's attributes changed in a way an update cannot apply";
    case cudaGraphExecUpdateErrorNotSupported:
        return "a node cannot be updated in place (e.g. a memory allocation or free node)";
    case cudaGraphExecUpdateSuccess:
    case cudaGraphExecUpdateError: break;
    }
    return "CUDA refused the update for another reason";
}

} // namespace detail

void graph::throw_empty(const char* operation)
{
    // Default-constructed is empty too, as moved from.
    gpu::detail::throw_empty_owner(operation, "gpu::graph", "CUDA graph");
}

void graph_exec::throw_empty(const char* operation)
{
    gpu::detail::throw_empty_owner(operation, "gpu::graph_exec", "executable CUDA graph");
}

graph_exec::graph_exec(const graph& from, graph_instantiate_flags flags, std::source_location where)
{
    const cudaGraph_t source = from.native("gpu::graph_exec (instantiating a graph)");
    handle_.reset(instantiate(source, static_cast<unsigned long long>(flags),
                              "gpu::graph_exec: cudaGraphInstantiateWithFlags", where));
}

graph_update_result graph_exec::update(const graph& from, std::source_location where)
{
    const cudaGraphExec_t exec = native("gpu::graph_exec::update");
    const cudaGraph_t source = from.native("gpu::graph_exec::update (the new graph)");
    cudaGraphExecUpdateResultInfo info{};
    const cudaError_t status = cudaGraphExecUpdate(exec, source, &info);
    if (status == cudaSuccess) {
        return {graph_update_kind::in_place, {}};
    }
    if (status != cudaErrorGraphExecUpdateFailure) {
        detail::throw_error(status, "gpu::graph_exec::update: cudaGraphExecUpdate", where);
    }
    // The failed update is recorded as the runtime's last error; clear it, it has been handled.
    static_cast<void>(cudaGetLastError());
    unsigned long long flags = 0;
    const cudaError_t read = cudaGraphExecGetFlags(exec, &flags);
    if (read != cudaSuccess) {
        detail::throw_error(read, "gpu::graph_exec::update: cudaGraphExecGetFlags", where);
    }
    // cudaGraphInstantiateFlagUpload belongs to cudaGraphInstantiateWithParams only (an adopted
    // instance may carry it); the upload happens at the first launch instead.
    flags &= ~static_cast<unsigned long long>(cudaGraphInstantiateFlagUpload);
    // Instantiate first: if it fails, this instance is unchanged (and still runs the old work).
    handle_.reset(
        instantiate(source, flags,
                    "gpu::graph_exec::update (instantiating again after cudaGraphExecUpdate "
                    "refused): cudaGraphInstantiateWithFlags",
                    where));
    return {graph_update_kind::reinstantiated, detail::graph_update_reason(info.result)};
}

} // namespace gpu
