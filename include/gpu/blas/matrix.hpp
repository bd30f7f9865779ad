/// @file matrix.hpp
/// @brief The old home of the matrix views: they are now `<gpu/matrix/matrix.hpp>`, in
/// `gpu::matrix`, the namespace of the component (`cudagap::matrix`) that owns them.
///
/// This header forwards there and keeps the `gpu::blas` names for one release, deprecated so
/// that a build says which name to write instead. It is to be removed in the release after.
#pragma once

#include <gpu/matrix/matrix.hpp>

#include <cstdint>
#include <utility>

namespace gpu::blas {

/// @deprecated use `gpu::matrix::layout`
using layout [[deprecated("use gpu::matrix::layout (<gpu/matrix/matrix.hpp>)")]] =
    gpu::matrix::layout;

/// @deprecated use `gpu::matrix::matrix_view`
template <class T>
using matrix_view [[deprecated("use gpu::matrix::matrix_view (<gpu/matrix/matrix.hpp>)")]] =
    gpu::matrix::matrix_view<T>;

// A using-declaration, not a deprecated wrapper: a wrapper in gpu::blas and the function that
// argument-dependent lookup finds in gpu::matrix would make every unqualified call ambiguous.
using gpu::matrix::to_string;

/// @deprecated use `gpu::matrix::row_major`, which takes the same arguments
template <class... Args>
[[deprecated("use gpu::matrix::row_major (<gpu/matrix/matrix.hpp>)")]] [[nodiscard]] constexpr auto
row_major(Args&&... args) -> decltype(gpu::matrix::row_major(std::forward<Args>(args)...))
{
    return gpu::matrix::row_major(std::forward<Args>(args)...);
}

/// @deprecated use `gpu::matrix::column_major`, which takes the same arguments
template <class... Args>
[[deprecated(
    "use gpu::matrix::column_major (<gpu/matrix/matrix.hpp>)")]] [[nodiscard]] constexpr auto
column_major(Args&&... args) -> decltype(gpu::matrix::column_major(std::forward<Args>(args)...))
{
    return gpu::matrix::column_major(std::forward<Args>(args)...);
}

} // namespace gpu::blas
