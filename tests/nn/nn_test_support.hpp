// Helpers of the nn tests: a context made of empty handles, which needs no GPU (every layer
// checks its arguments before it touches a handle).
#pragma once

#include <gpu/blas/handle.hpp>
#include <gpu/blas/lt.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/nn/context.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/stream.hpp>

#include <cstdint>

namespace gpu::test {

/// A made-up device address for host-only tests: a layer checks shapes before it dereferences.
inline void* fake_device_address(std::uintptr_t address)
{
    return reinterpret_cast<void*>(address);
}

/// Empty handles on the legacy default stream and a context over them and @p store.
struct host_context {
    gpu::blas::handle blas =
        gpu::blas::handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    gpu::blas::lt_handle lt =
        gpu::blas::lt_handle::from_native_handle(nullptr, gpu::legacy_default_stream);
    gpu::dnn::handle dnn = gpu::dnn::handle::from_native_handle(nullptr);
    gpu::nn::context ctx;

    explicit host_context(gpu::nn::parameters& store)
        : ctx(gpu::legacy_default_stream, blas, lt, dnn, store)
    {}
};

/// Real handles on @p stream and a context over them and @p store (needs a GPU).
struct device_context {
    gpu::blas::handle blas;
    gpu::blas::lt_handle lt;
    gpu::dnn::handle dnn;
    gpu::nn::context ctx;

    device_context(gpu::stream_ref stream, gpu::nn::parameters& store)
        : blas(stream), lt(stream), dnn(stream), ctx(stream, blas, lt, dnn, store)
    {}
};

} // namespace gpu::test
