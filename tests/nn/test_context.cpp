// gpu/nn/context.hpp: a context refers to the handles and the store it was given.
#include <gpu/nn/context.hpp>

#include "catch.hpp"
#include "nn_test_support.hpp"

#include <type_traits>

namespace nn = gpu::nn;

static_assert(std::is_copy_constructible_v<nn::context>);
static_assert(!std::is_default_constructible_v<nn::context>);

TEST_CASE("a context refers to its stream, handles and store, and carries the training and "
          "inference flags",
          "[nn]")
{
    nn::parameters store(nn::mixed_precision::bf16());
    gpu::test::host_context host(store);
    nn::context& ctx = host.ctx;
    CHECK(ctx.stream() == gpu::legacy_default_stream);
    CHECK(&ctx.blas() == &host.blas);
    CHECK(&ctx.lt() == &host.lt);
    CHECK(&ctx.dnn() == &host.dnn);
    CHECK(&ctx.params() == &store);
    CHECK(ctx.precision() == nn::mixed_precision::bf16());
    CHECK(ctx.training());
    CHECK_FALSE(ctx.inference_mode());
    ctx.set_inference_mode(true);
    CHECK(ctx.inference_mode());
    ctx.set_training(false);
    CHECK_FALSE(ctx.training());
    const nn::context copy = ctx;
    CHECK(&copy.params() == &store);
    CHECK_FALSE(copy.training());
    CHECK(copy.inference_mode());
}
