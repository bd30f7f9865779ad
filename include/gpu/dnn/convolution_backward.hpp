/// @file convolution_backward.hpp
/// @brief The backward passes of a convolution, planned like the forward:
/// `convolution_backward_data` (dx from w and dy), `convolution_backward_filter` (dw from x and
/// dy), each with its algorithm chosen under the same options (policy, workspace budget, TF32,
/// determinism), cached in the same plan cache and explained by `explain()`; and
/// `convolution_backward_bias` (db from dy).
///
/// @code
/// gpu::dnn::handle h(stream);
/// const gpu::dnn::convolution_problem problem{.input = {32, 3, 224, 224}, .filter = {64, 3, 3, 3},
///                                             .geometry = {.padding = {1, 1}}};
/// const auto options = gpu::dnn::convolution_options::from_profile(gpu::profile::production());
/// gpu::dnn::convolution forward(h, problem, options);
/// gpu::dnn::convolution_backward_data data(h, problem, options);
/// gpu::dnn::convolution_backward_filter filter(h, problem, options);
/// forward.forward(h, x, w, y);
/// // ... dy, the gradient of the loss with respect to y ...
/// data.backward_data(h, w, dy, dx);
/// filter.backward_filter(h, x, dy, dw);
/// gpu::dnn::convolution_backward_bias(h, problem, dy, db);
/// @endcode
///
/// PyTorch's `torch.backends.cudnn.benchmark` and `deterministic` apply to the backward passes
/// of `Conv2d` as to the forward; `convolution_options` does the same here. See
/// docs/convolution.md ("Backward passes").
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/dnn/convolution_descriptor.hpp>
#include <gpu/dnn/convolution_planning.hpp> // problem, options, explanation, cache
#include <gpu/dnn/filter_descriptor.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/dnn/tensor_descriptor.hpp>
#include <gpu/dnn/types.hpp>
#include <gpu/numerics.hpp> // what check_numerics throws

#include <cudnn_cnn.h>

#include <cstddef>
#include <optional>

namespace gpu::dnn {

namespace detail {

/// @brief The element counts of a problem's input, filter and output, which are also those of
/// dx, dw and dy.
struct convolution_counts {
    std::size_t input = 0;  ///< x and dx
    std::size_t filter = 0; ///< w and dw
    std::size_t output = 0; ///< y and dy
};

/// @brief The state and the work of a backward plan, written once for both backward passes;
/// `convolution_backward_data` and `convolution_backward_filter` wrap it (use those).
///
/// The pass reads two tensors and writes one: backward data reads w (first_input) and dy
/// (second_input) and writes dx (result); backward filter reads x and dy and writes dw.
/// @tparam Algorithm `backward_data_algorithm` or `backward_filter_algorithm`
template <class Algorithm>
class backward_plan {
public:
    /// @brief An empty plan, as a moved-from one.
    backward_plan() = default;
    /// @brief Plans the pass: the problem checked first (std::invalid_argument, also for an
    /// epilogue), then the handle (std::logic_error), then the search or the cache. Null
    /// pointers mean scratch tensors; otherwise the search and the trials run on these.
    backward_plan(handle& h, const convolution_problem& problem, const convolution_options& options,
                  const void* first_input, const void* second_input, void* result);

    /// @brief Checks buffers given for planning: the problem, then their element type and sizes.
    /// @throws std::invalid_argument naming the values
    static void check_planning_buffers(const convolution_problem& problem, element_info element,
                                       std::size_t first_input, std::size_t second_input,
                                       std::size_t result);
    /// @brief Checks buffers given for a run: std::logic_error when the plan is empty, then
    /// std::invalid_argument for an element type or a size that does not match the plan.
    void check_running_buffers(element_info element, std::size_t first_input,
                               std::size_t second_input, std::size_t result) const;
    /// @brief Runs the pass on @p h's stream (see the public classes).
    void run(handle& h, const void* first_input, const void* second_input, void* result,
             gradient_update update);

    convolution_problem problem{};                          ///< what it was planned for
    convolution_counts counts{};                            ///< the problem's element counts
    convolution_options options{};                          ///< how
    basic_convolution_explanation<Algorithm> explanation{}; ///< what it chose and why
    tensor_descriptor input = tensor_descriptor::from_native_handle(nullptr);  ///< x or dx
    filter_descriptor filter = filter_descriptor::from_native_handle(nullptr); ///< w or dw
    tensor_descriptor output = tensor_descriptor::from_native_handle(nullptr); ///< dy
    convolution_descriptor convolution =
        convolution_descriptor::from_native_handle(nullptr); ///< the geometry and math
    device_buffer<std::byte> workspace{}; ///< the chosen algorithm's, on the handle's stream
};

// Compiled once, in the dnn wrapper's library.
extern template class backward_plan<backward_data_algorithm>;
extern template class backward_plan<backward_filter_algorithm>;

} // namespace detail

/// @brief The gradient of a convolution's input, dx, from the filter w and the gradient of the
/// output dy, planned once for one problem and run many times (`cudnnConvolutionBackwardData`).
/// Move-only.
///
/// Planning is the forward's: the problem is checked on the host first (bad shapes, and an
/// epilogue other than `none`, throw `std::invalid_argument` before anything is allocated, even
/// with an empty handle), the descriptors are built, and the algorithm is chosen under the
/// options' policy and workspace budget (cuDNN's ranking, or every algorithm timed under
/// `exhaustive`; only algorithms cuDNN marks deterministic under `deterministic`), or taken
/// from the process-wide plan cache, whose key includes the pass. Under `heuristic` and
/// `deterministic` the choice runs once at planning on scratch data, and the next candidate is
/// taken when cuDNN refuses it. Trials run on the handle's stream and synchronise it. The
/// workspace is a stream-ordered `device_buffer` on the handle's stream; it follows the handle
/// to another stream as the forward's does.
///
/// A run is capturable in a CUDA graph when neither `synchronous_checks` nor `check_numerics`
/// is set and the handle stays on one stream: one cuDNN call on the handle's stream, no
/// allocation, no synchronisation. A plan is not for concurrent use (one workspace).
class convolution_backward_data {
public:
    /// @brief Plans the backward data pass of @p problem on scratch tensors that planning
    /// allocates on the handle's stream and frees (w and dy seeded and non-zero, dx zeroed).
    /// @param h the cuDNN handle; its stream orders the search and the workspace
    /// @param problem the forward problem whose input gradient this computes; epilogue `none`
    /// @param options policy, budget, TF32, determinism, checks
    /// @throws std::invalid_argument for a bad problem or an epilogue (values named)
    /// @throws std::logic_error for an empty (moved-from) handle
    /// @throws no_algorithm_error when no algorithm fits the policy and budget
    /// @throws gpu::dnn::dnn_error, gpu::cuda_error, gpu::out_of_memory from cuDNN and CUDA
    convolution_backward_data(handle& h, const convolution_problem& problem,
                              const convolution_options& options = {})
        : plan_(h, problem, options, nullptr, nullptr, nullptr)
    {}

    /// @brief Plans on these buffers (the exhaustive search times on them, as `cudnn.benchmark`
    /// does on the real tensors); @p dx is overwritten when the plan is searched for, not when it
    /// comes from the plan cache.
    /// @throws std::invalid_argument also when a buffer's size or element type does not match
    template <class T>
    convolution_backward_data(handle& h, const convolution_problem& problem,
                              const convolution_options& options, const device_buffer<T>& w,
                              const device_buffer<T>& dy, device_buffer<T>& dx)
    {
        plan_type::check_planning_buffers(problem, detail::element_info_of<T>(), w.size(),
                                          dy.size(), dx.size());
        plan_ = plan_type(h, problem, options, w.data(), dy.data(), dx.data());
    }

    /// @brief dx = the gradient of the input for the output gradient @p dy and the filter @p w
    /// (PyTorch's `grad_input` of `Conv2d`), on @p h's stream; with
    /// `gradient_update::accumulate`, dx += that gradient.
    /// @tparam T `float` for fp32, a 2-byte type (`__half`, `__nv_bfloat16`) for fp16/bf16
    /// @throws std::invalid_argument when a size or the element type does not match the problem
    /// @throws std::logic_error when the plan or the handle is empty (moved from)
    /// @throws gpu::numerics_error when `check_numerics` finds NaN or Inf in @p dx
    template <class T>
    void backward_data(handle& h, const device_buffer<T>& w, const device_buffer<T>& dy,
                       device_buffer<T>& dx, gradient_update update = gradient_update::overwrite)
    {
        plan_.check_running_buffers(detail::element_info_of<T>(), w.size(), dy.size(), dx.size());
        plan_.run(h, w.data(), dy.data(), dx.data(), update);
    }

    /// @brief The backward data pass on raw device pointers (memory cudagap does not own): no
    /// size checks are possible.
    /// @throws std::invalid_argument for a null pointer or an unnamed @p update
    /// @throws std::logic_error when the plan or the handle is empty
    void backward_data_raw(handle& h, const void* w, const void* dy, void* dx,
                           gradient_update update = gradient_update::overwrite)
    {
        plan_.run(h, w, dy, dx, update);
    }

    /// @brief Why this plan runs its algorithm.
    [[nodiscard]] const backward_data_explanation& explain() const noexcept
    {
        return plan_.explanation;
    }
    /// @brief The problem it was planned for.
    [[nodiscard]] const convolution_problem& problem() const noexcept { return plan_.problem; }
    /// @brief The options it was planned with.
    [[nodiscard]] const convolution_options& options() const noexcept { return plan_.options; }
    /// @brief The chosen algorithm.
    [[nodiscard]] backward_data_algorithm algorithm() const noexcept
    {
        return plan_.explanation.algorithm;
    }
    /// @brief The chosen algorithm as cuDNN's value, for raw cuDNN calls.
    [[nodiscard]] cudnnConvolutionBwdDataAlgo_t native_algorithm() const noexcept
    {
        return static_cast<cudnnConvolutionBwdDataAlgo_t>(plan_.explanation.algorithm);
    }
    /// @brief The workspace the chosen algorithm is given, in bytes.
    [[nodiscard]] std::size_t workspace_bytes() const noexcept
    {
        return plan_.explanation.workspace_bytes;
    }
    /// @brief The workspace buffer (empty when the algorithm needs none).
    [[nodiscard]] const device_buffer<std::byte>& workspace() const noexcept
    {
        return plan_.workspace;
    }
    /// @brief The descriptor of dx (the input's shape).
    [[nodiscard]] const tensor_descriptor& input_gradient_descriptor() const noexcept
    {
        return plan_.input;
    }
    /// @brief The filter's descriptor.
    [[nodiscard]] const filter_descriptor& weights_descriptor() const noexcept
    {
        return plan_.filter;
    }
    /// @brief The descriptor of dy (the output's shape).
    [[nodiscard]] const tensor_descriptor& output_gradient_descriptor() const noexcept
    {
        return plan_.output;
    }
    /// @brief The convolution descriptor, set to the chosen algorithm's math type.
    [[nodiscard]] const convolution_descriptor& descriptor() const noexcept
    {
        return plan_.convolution;
    }

    /// @brief Moving leaves the source without descriptors; it may only be destroyed or
    /// assigned.
    /// @post `other.input_gradient_descriptor().get() == nullptr`
    convolution_backward_data(convolution_backward_data&& other) noexcept = default;
    /// @brief Releases this plan and takes @p other's.
    /// @post `other.input_gradient_descriptor().get() == nullptr`
    convolution_backward_data& operator=(convolution_backward_data&& other) noexcept = default;
    convolution_backward_data(const convolution_backward_data&) = delete;
    convolution_backward_data& operator=(const convolution_backward_data&) = delete;
    /// @brief Frees the workspace on its stream and destroys the descriptors.
    ~convolution_backward_data() = default;

private:
    using plan_type = detail::backward_plan<backward_data_algorithm>;
    plan_type plan_;
};

/// @brief The gradient of a convolution's filter, dw, from the input x and the gradient of the
/// output dy, planned once for one problem and run many times (`cudnnConvolutionBackwardFilter`).
/// Move-only.
///
/// Planned, cached, explained and run as `convolution_backward_data` (see there). dw has the
/// problem's element type: an FP16 problem writes an FP16 dw (cuDNN accumulates in FP32 and
/// rounds once); keep FP32 master gradients by converting or accumulating outside. The
/// deterministic policy matters most here: cuDNN's filter algorithms `algo_0` and `algo_3` sum
/// with atomics and are not deterministic.
class convolution_backward_filter {
public:
    /// @brief Plans the backward filter pass of @p problem on scratch tensors (x and dy seeded
    /// and non-zero, dw zeroed) that planning allocates on the handle's stream and frees.
    /// @param h the cuDNN handle; its stream orders the search and the workspace
    /// @param problem the forward problem whose filter gradient this computes; epilogue `none`
    /// @param options policy, budget, TF32, determinism, checks
    /// @throws std::invalid_argument for a bad problem or an epilogue (values named)
    /// @throws std::logic_error for an empty (moved-from) handle
    /// @throws no_algorithm_error when no algorithm fits the policy and budget
    /// @throws gpu::dnn::dnn_error, gpu::cuda_error, gpu::out_of_memory from cuDNN and CUDA
    convolution_backward_filter(handle& h, const convolution_problem& problem,
                                const convolution_options& options = {})
        : plan_(h, problem, options, nullptr, nullptr, nullptr)
    {}

    /// @brief Plans on these buffers; @p dw is overwritten when the plan is searched for, not
    /// when it comes from the plan cache.
    /// @throws std::invalid_argument also when a buffer's size or element type does not match
    template <class T>
    convolution_backward_filter(handle& h, const convolution_problem& problem,
                                const convolution_options& options, const device_buffer<T>& x,
                                const device_buffer<T>& dy, device_buffer<T>& dw)
    {
        plan_type::check_planning_buffers(problem, detail::element_info_of<T>(), x.size(),
                                          dy.size(), dw.size());
        plan_ = plan_type(h, problem, options, x.data(), dy.data(), dw.data());
    }

    /// @brief dw = the gradient of the filter for the input @p x and the output gradient @p dy
    /// (PyTorch's `grad_weight`), on @p h's stream; with `gradient_update::accumulate`,
    /// dw += that gradient (gradient accumulation).
    /// @tparam T `float` for fp32, a 2-byte type (`__half`, `__nv_bfloat16`) for fp16/bf16
    /// @throws std::invalid_argument when a size or the element type does not match the problem
    /// @throws std::logic_error when the plan or the handle is empty (moved from)
    /// @throws gpu::numerics_error when `check_numerics` finds NaN or Inf in @p dw
    template <class T>
    void backward_filter(handle& h, const device_buffer<T>& x, const device_buffer<T>& dy,
                         device_buffer<T>& dw, gradient_update update = gradient_update::overwrite)
    {
        plan_.check_running_buffers(detail::element_info_of<T>(), x.size(), dy.size(), dw.size());
        plan_.run(h, x.data(), dy.data(), dw.data(), update);
    }

    /// @brief The backward filter pass on raw device pointers: no size checks are possible.
    /// @throws std::invalid_argument for a null pointer or an unnamed @p update
    /// @throws std::logic_error when the plan or the handle is empty
    void backward_filter_raw(handle& h, const void* x, const void* dy, void* dw,
                             gradient_update update = gradient_update::overwrite)
    {
        plan_.run(h, x, dy, dw, update);
    }

    /// @brief Why this plan runs its algorithm.
    [[nodiscard]] const backward_filter_explanation& explain() const noexcept
    {
        return plan_.explanation;
    }
    /// @brief The problem it was planned for.
    [[nodiscard]] const convolution_problem& problem() const noexcept { return plan_.problem; }
    /// @brief The options it was planned with.
    [[nodiscard]] const convolution_options& options() const noexcept { return plan_.options; }
    /// @brief The chosen algorithm.
    [[nodiscard]] backward_filter_algorithm algorithm() const noexcept
    {
        return plan_.explanation.algorithm;
    }
    /// @brief The chosen algorithm as cuDNN's value, for raw cuDNN calls.
    [[nodiscard]] cudnnConvolutionBwdFilterAlgo_t native_algorithm() const noexcept
    {
        return static_cast<cudnnConvolutionBwdFilterAlgo_t>(plan_.explanation.algorithm);
    }
    /// @brief The workspace the chosen algorithm is given, in bytes.
    [[nodiscard]] std::size_t workspace_bytes() const noexcept
    {
        return plan_.explanation.workspace_bytes;
    }
    /// @brief The workspace buffer (empty when the algorithm needs none).
    [[nodiscard]] const device_buffer<std::byte>& workspace() const noexcept
    {
        return plan_.workspace;
    }
    /// @brief The input's descriptor.
    [[nodiscard]] const tensor_descriptor& input_descriptor() const noexcept { return plan_.input; }
    /// @brief The descriptor of dw (the filter's shape).
    [[nodiscard]] const filter_descriptor& weights_gradient_descriptor() const noexcept
    {
        return plan_.filter;
    }
    /// @brief The descriptor of dy (the output's shape).
    [[nodiscard]] const tensor_descriptor& output_gradient_descriptor() const noexcept
    {
        return plan_.output;
    }
    /// @brief The convolution descriptor, set to the chosen algorithm's math type.
    [[nodiscard]] const convolution_descriptor& descriptor() const noexcept
    {
        return plan_.convolution;
    }

    /// @brief Moving leaves the source without descriptors; it may only be destroyed or
    /// assigned.
    /// @post `other.input_descriptor().get() == nullptr`
    convolution_backward_filter(convolution_backward_filter&& other) noexcept = default;
    /// @brief Releases this plan and takes @p other's.
    /// @post `other.input_descriptor().get() == nullptr`
    convolution_backward_filter& operator=(convolution_backward_filter&& other) noexcept = default;
    convolution_backward_filter(const convolution_backward_filter&) = delete;
    convolution_backward_filter& operator=(const convolution_backward_filter&) = delete;
    /// @brief Frees the workspace on its stream and destroys the descriptors.
    ~convolution_backward_filter() = default;

private:
    using plan_type = detail::backward_plan<backward_filter_algorithm>;
    plan_type plan_;
};

namespace detail {

/// @brief The element type and the sizes of the buffers given to `convolution_backward_bias`.
struct bias_buffer_sizes {
    element_info element{}; ///< their element type
    std::size_t dy = 0;     ///< elements of dy
    std::size_t db = 0;     ///< elements of db
};

/// @brief The compiled part of `convolution_backward_bias` and `convolution_backward_bias_raw`:
/// checks the problem, then the handle, then the buffers' type and sizes (when @p sizes is
/// given), then the pointers, and runs. Call the public functions instead.
void run_backward_bias(handle& h, const convolution_problem& problem, const void* dy, void* db,
                       gradient_update update, const convolution_options& options,
                       std::optional<bias_buffer_sizes> sizes);

} // namespace detail

/// @brief db = the gradient of a convolution's bias: dy summed over the batch and the spatial
/// dimensions, one value per output channel (`cudnnConvolutionBackwardBias`; PyTorch's
/// `grad_bias`, `grad_output.sum({0, 2, 3})`), on @p h's stream. No plan is needed: there is
/// no algorithm to choose. Capturable in a CUDA graph (without the checks of @p options).
/// @param h the cuDNN handle
/// @param problem the forward problem; epilogue `none` (plan the forward's bias apart, or with
/// the `bias` epilogue in a separate forward problem)
/// @param dy the gradient of the output, `problem.output_elements()` elements
/// @param db the bias gradient, K (`problem.filter[0]`) elements of the problem's type
/// @param update overwrite @p db or add to it
/// @param options only `synchronous_checks` and `check_numerics` apply (to @p db)
/// @throws std::invalid_argument for a bad problem, an epilogue, a size or an element type that
/// does not match (values named)
/// @throws std::logic_error for an empty handle
/// @throws gpu::dnn::dnn_error from cuDNN, with its message
template <class T>
void convolution_backward_bias(handle& h, const convolution_problem& problem,
                               const device_buffer<T>& dy, device_buffer<T>& db,
                               gradient_update update = gradient_update::overwrite,
                               const convolution_options& options = {})
{
    detail::run_backward_bias(
        h, problem, dy.data(), db.data(), update, options,
        detail::bias_buffer_sizes{detail::element_info_of<T>(), dy.size(), db.size()});
}

/// @brief `convolution_backward_bias` on raw device pointers (memory cudagap does not own): no
/// size or type checks are possible.
/// @throws std::invalid_argument for a bad problem, an epilogue or a null pointer
/// @throws std::logic_error for an empty handle
inline void convolution_backward_bias_raw(handle& h, const convolution_problem& problem,
                                          const void* dy, void* db,
                                          gradient_update update = gradient_update::overwrite,
                                          const convolution_options& options = {})
{
    detail::run_backward_bias(h, problem, dy, db, update, options, std::nullopt);
}

} // namespace gpu::dnn
