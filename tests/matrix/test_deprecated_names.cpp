// The old homes <gpu/blas/matrix.hpp> and <gpu/blas/gemm_plan.hpp>: they forward to
// gpu/matrix/, and the gpu::blas names of the views and the plan still compile, deprecated,
// for one release.
#include <gpu/blas/gemm_plan.hpp>
#include <gpu/blas/matrix.hpp>

#include "catch.hpp"

#include <cstdint>
#include <stdexcept>
#include <type_traits>
#include <utility>
#include <vector>

using Catch::Matchers::ContainsSubstring;

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

static_assert(std::is_same_v<gpu::blas::matrix_view<float>, gpu::matrix::matrix_view<float>>);
static_assert(std::is_same_v<gpu::blas::layout, gpu::matrix::layout>);
static_assert(std::is_same_v<gpu::blas::operation, gpu::matrix::operation>);
static_assert(std::is_same_v<gpu::blas::strided_batch, gpu::matrix::strided_batch>);
static_assert(std::is_same_v<gpu::blas::gemm_plan, gpu::matrix::gemm_plan>);

TEST_CASE("the gpu::blas names of the matrix views build the same views as gpu::matrix", "[matrix]")
{
    std::vector<float> storage(12);
    const auto by_pointer = gpu::blas::row_major(storage.data(), 3, 4);
    CHECK(by_pointer.to_string() == gpu::matrix::row_major(storage.data(), 3, 4).to_string());
    const auto by_container = gpu::blas::column_major(storage, 3, 4);
    CHECK(by_container.to_string() == "3x4 column-major (ld 3)");
    CHECK(gpu::blas::to_string(gpu::blas::layout::row_major) == "row-major");
    // The checked factories still check, and name the function to call from now on.
    CHECK_THROWS_WITH(gpu::blas::row_major(storage, 4, 4),
                      ContainsSubstring("gpu::matrix::row_major: a 4x4 row-major"));
}

TEST_CASE("the gpu::blas names of the GEMM plan plan as gpu::matrix does", "[matrix]")
{
    std::vector<float> a(6);
    std::vector<float> b(6);
    std::vector<float> c(4);
    const gpu::blas::gemm_plan old_name = gpu::blas::plan_gemm(
        gpu::matrix::row_major(std::as_const(a), 2, 3),
        gpu::matrix::row_major(std::as_const(b), 3, 2), gpu::matrix::row_major(c, 2, 2));
    CHECK(old_name == gpu::matrix::plan_gemm(gpu::matrix::row_major(std::as_const(a), 2, 3),
                                             gpu::matrix::row_major(std::as_const(b), 3, 2),
                                             gpu::matrix::row_major(c, 2, 2)));
    CHECK(old_name.swapped);
    CHECK(gpu::blas::to_char(gpu::blas::operation::transpose) == 'T');
}

#pragma GCC diagnostic pop
