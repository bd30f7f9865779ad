// gpu/dnn/version.hpp: cuDNN versions, readable without a GPU.
#include <gpu/dnn/version.hpp>

#include "catch.hpp"

#include <cudnn_version.h>

TEST_CASE("the cuDNN versions are read without a GPU and are compatible", "[dnn]")
{
    const gpu::dnn::version_info info = gpu::dnn::version();
    CHECK(info.compiled == gpu::semantic_version{CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL});
    CHECK(info.loaded.major == CUDNN_MAJOR);
    CHECK(info.compatible());
    CHECK(info.loaded_for_cuda.major >= 12);
}

TEST_CASE("cuDNN compatibility needs the same major and a minor no older", "[dnn]")
{
    CHECK(gpu::dnn::version_info{{9, 1, 0}, {9, 19, 0}, {13, 0}}.compatible());
    CHECK_FALSE(gpu::dnn::version_info{{9, 19, 0}, {9, 1, 0}, {13, 0}}.compatible());
    CHECK_FALSE(gpu::dnn::version_info{{9, 19, 0}, {8, 9, 7}, {12, 0}}.compatible());
}
