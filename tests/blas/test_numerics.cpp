// gpu/blas/numerics.hpp: the typed overloads of the core's NaN/Inf check; the shared report
// type and argument checks without a GPU; on a GPU, NaN and Inf are counted in every element
// type, matrix padding is not read, and the first offending offset is found.
#include <gpu/blas/numerics.hpp>

#include "catch.hpp"

#include <gpu/memory.hpp>
#include <gpu/numerics.hpp>
#include <gpu/stream.hpp>

#include "finite_check_gate.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::StartsWith;
namespace blas = gpu::blas;

TEST_CASE("check_finite reports in the shared core type that numerics_error carries", "[blas]")
{
    // The blas wrapper has no report or error of its own: what it counts is what the core words.
    STATIC_REQUIRE(std::is_same_v<decltype(blas::check_finite(static_cast<const float*>(nullptr), 0,
                                                              gpu::legacy_default_stream)),
                                  gpu::non_finite_report>);
    const gpu::non_finite_report bad{
        .elements = 1000000, .nan_count = 3, .inf_count = 1, .first_index = 42};
    const gpu::numerics_error e("gpu::blas::gemm (FP16 inputs)", bad, 0);
    CHECK_THAT(
        std::string(e.what()),
        StartsWith("gpu::blas::gemm (FP16 inputs): non-finite output (4): 3 NaN and 1 Inf in "
                   "1000000 elements, the first at index 42") &&
            ContainsSubstring("65504") && ContainsSubstring("gpu::check_finite"));
}

namespace {
// Whether blas::check_finite can be called with these arguments.
template <class... Args>
concept check_finite_callable = requires(Args... args)
{
    blas::check_finite(args...);
};
} // namespace

TEST_CASE("pointers and views carry no stream, so checking them takes one explicitly", "[blas]")
{
    STATIC_REQUIRE_FALSE(check_finite_callable<const float*, std::size_t>);
    STATIC_REQUIRE_FALSE(check_finite_callable<gpu::matrix::matrix_view<const float>>);
    STATIC_REQUIRE(check_finite_callable<const float*, std::size_t, gpu::stream_ref>);
    STATIC_REQUIRE(check_finite_callable<gpu::matrix::matrix_view<const float>, gpu::stream_ref>);
    STATIC_REQUIRE(check_finite_callable<const gpu::device_buffer<float>&>); // the buffer's stream
}

TEST_CASE("check_finite rejects bad views and null data before touching the GPU", "[blas]")
{
    CHECK_THROWS_WITH(
        blas::check_finite(
            gpu::matrix::matrix_view<const float>(nullptr, 3, 4, 2, gpu::matrix::layout::row_major),
            gpu::legacy_default_stream),
        ContainsSubstring("gpu::blas::check_finite: invalid matrix 3x4 row-major (ld 2)"));
    CHECK_THROWS_WITH(
        blas::check_finite(static_cast<const float*>(nullptr), 10, gpu::legacy_default_stream),
        ContainsSubstring("null data for 10 elements"));
    // 2^40 x 2^40 elements: the count overflowed to 0 and the matrix was reported all finite.
    const std::int64_t big = std::int64_t{1} << 40;
    CHECK_THROWS_WITH(blas::check_finite(gpu::matrix::matrix_view<const float>(nullptr, big, big),
                                         gpu::legacy_default_stream),
                      ContainsSubstring("more than 64 bits can count"));
    const auto empty =
        blas::check_finite(static_cast<const double*>(nullptr), 0, gpu::legacy_default_stream);
    CHECK(empty.all_finite());
    CHECK(empty.elements == 0u);
    CHECK_FALSE(empty.first_index.has_value());
}

namespace {
template <class T>
void check_counts()
{
    std::vector<T> host(10000, T(1.0F));
    host[17] = T(std::numeric_limits<float>::quiet_NaN());
    host[4000] = T(std::numeric_limits<float>::infinity());
    host[9999] = T(-std::numeric_limits<float>::infinity());
    host[5000] = T(std::numeric_limits<float>::quiet_NaN());
    const auto buffer = gpu::device_buffer<T>::from_host(host, gpu::legacy_default_stream);
    const gpu::non_finite_report report = blas::check_finite(buffer);
    CHECK(report.elements == 10000u);
    CHECK(report.nan_count == 2u);
    CHECK(report.inf_count == 2u);
    CHECK(report.first_index == std::optional<std::size_t>(17));
}
} // namespace

TEST_CASE("check_finite counts NaN and Inf in every element type", "[blas][gpu]")
{
    check_counts<float>();
    check_counts<double>();
    check_counts<__half>();
    check_counts<__nv_bfloat16>();
}

TEST_CASE("check_finite on a matrix reads its elements, not its padding", "[blas][gpu]")
{
    // 3 rows of 4 elements, rows 6 apart: the two padding elements of each row hold NaN.
    std::vector<float> host(18, std::numeric_limits<float>::quiet_NaN());
    for (int row = 0; row < 3; ++row) {
        for (int col = 0; col < 4; ++col) {
            host[static_cast<std::size_t>(row * 6 + col)] = 1.0F;
        }
    }
    auto buffer = gpu::device_buffer<float>::from_host(host, gpu::legacy_default_stream);
    const gpu::matrix::matrix_view<const float> matrix(buffer.data(), 3, 4, 6,
                                                       gpu::matrix::layout::row_major);
    CHECK(blas::check_finite(matrix, buffer.stream()).all_finite());
    CHECK(blas::check_finite(matrix, buffer.stream()).elements == 12u);
    CHECK(blas::check_finite(buffer).nan_count == 6u);
    host[13] = std::numeric_limits<float>::infinity(); // row 2, column 1
    buffer.copy_from_host(host);
    const auto report = blas::check_finite(matrix, buffer.stream());
    CHECK(report.inf_count == 1u);
    CHECK(report.first_index == std::optional<std::size_t>(13));
    // The same memory as a column-major 4x3 matrix (its transpose) gives the same answer.
    CHECK(blas::check_finite(matrix.transposed(), buffer.stream()).first_index ==
          std::optional<std::size_t>(13));
}

TEST_CASE("check_finite of a buffer waits for the buffer's stream, not the legacy one",
          "[blas][gpu][gate]")
{
    // The buffer lives on the held stream: the overload without a stream must use it.
    gpu::test::check_waits_for_its_stream(
        [](const gpu::device_buffer<float>& buffer, gpu::stream_ref) {
            return blas::check_finite(buffer);
        });
}
