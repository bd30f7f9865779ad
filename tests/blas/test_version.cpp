// gpu/blas/version.hpp: cuBLAS versions, readable without a GPU.
#include <gpu/blas/version.hpp>

#include "catch.hpp"

#include <cublas_api.h>

TEST_CASE("the cuBLAS versions are read without a GPU and are compatible", "[blas]")
{
    const gpu::blas::version_info info = gpu::blas::version();
    CHECK(info.compiled ==
          gpu::semantic_version{CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH});
    CHECK(info.loaded.major == CUBLAS_VER_MAJOR);
    CHECK(info.compatible());
}

TEST_CASE("cuBLAS compatibility needs the same major and a minor no older", "[blas]")
{
    CHECK(gpu::blas::version_info{{13, 1, 0}, {13, 2, 0}}.compatible());
    CHECK_FALSE(gpu::blas::version_info{{13, 1, 0}, {13, 0, 9}}.compatible());
    CHECK_FALSE(gpu::blas::version_info{{13, 1, 0}, {12, 9, 0}}.compatible());
}
