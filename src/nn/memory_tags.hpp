// The ledger's tags of what the nn layer allocates (gpu::memory_ledger): the standard tags of
// the categories a model's memory falls in, named once here so that every allocation site and
// the tests agree.
#pragma once

#include <gpu/memory_tag.hpp>

namespace gpu::nn::detail {

/// @brief The FP32 master parameters of a `parameters` store.
inline constexpr memory_tag parameters_tag = memory_tag::standard(memory_category::parameters);
/// @brief Their gradients.
inline constexpr memory_tag gradients_tag = memory_tag::standard(memory_category::gradients);
/// @brief The FP16/BF16 working copy of mixed precision.
inline constexpr memory_tag working_copy_tag = memory_tag::standard(memory_category::working_copy);
/// @brief An optimizer's per-parameter state and step counters.
inline constexpr memory_tag optimizer_state_tag =
    memory_tag::standard(memory_category::optimizer_state);
/// @brief A layer's temporaries of one step (masks, gradient scratch, error flags).
inline constexpr memory_tag scratch_tag = memory_tag::standard(memory_category::scratch);
/// @brief A layer's outputs (`nn::tensor`'s default).
inline constexpr memory_tag activations_tag = memory_tag::standard(memory_category::activations);

/// @brief The tag of a `tensor` made now: the calling thread's `memory_tag_scope` when it names
/// one (a server's "bucket 64 activations", a capture's graph pool), else activations.
[[nodiscard]] memory_tag tensor_tag() noexcept;

} // namespace gpu::nn::detail
