/// @file convolution.hpp
/// @brief `gpu::dnn::convolution`: a forward convolution planned once (algorithm chosen under an
/// explicit policy and workspace budget, plans cached) and run many times; `explain()` says
/// which algorithm runs and why.
///
/// @code
/// gpu::dnn::handle h(stream);
/// const auto options = gpu::dnn::convolution_options::from_profile(gpu::profile::production());
/// gpu::dnn::convolution conv(h, {.input = {32, 3, 224, 224}, .filter = {64, 3, 3, 3},
///                                .geometry = {.padding = {1, 1}}},
///                            options);
/// conv.forward(h, x, w, y);                 // device_buffer<float>s, on h's stream
/// std::puts(conv.explain().to_string().c_str());
/// @endcode
///
/// The problem, the options, the explanation and the plan cache are shared with the backward
/// passes (`<gpu/dnn/convolution_planning.hpp>`, `<gpu/dnn/convolution_backward.hpp>`). See
/// docs/convolution.md for layouts, policies, the workspace budget, determinism and how they map
/// to PyTorch's `cudnn.benchmark`, `cudnn.deterministic` and `allow_tf32`.
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/dnn/activation_descriptor.hpp>
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

/// @brief A forward convolution planned once for one problem, then run many times. Move-only.
///
/// Planning validates the problem (bad shapes throw `std::invalid_argument` before anything is
/// allocated), builds the descriptors, and chooses the algorithm under the options' policy and
/// workspace budget, or takes the choice from the process-wide plan cache without searching.
/// cuDNN's heuristic ranks algorithms without running them, and some it ranks it then refuses
/// at run time; so under the `heuristic` and `deterministic` policies a plan runs its choice
/// once at planning, on scratch data, and takes the next candidate when cuDNN refuses it (as
/// PyTorch's `try_all` does), with the status in `explain()`: a forward never meets a refusal
/// that planning could have seen. (The `exhaustive` search has run every candidate already.)
/// A plan with a bias epilogue likewise runs the fused call once, because it may refuse an
/// algorithm that cuDNN ranked for the plain convolution. When the fused call refuses every
/// candidate, the plan runs the plain convolution and the epilogue unfused
/// (`epilogue_execution::unfused`: `cudnnAddTensor`, then `cudnnActivationForward`), and
/// `explain()` says that and why. Trials run on the handle's stream and synchronise it; a
/// sticky CUDA error during a trial is thrown, never taken for a refusal.
/// The workspace is a stream-ordered `device_buffer` on the handle's stream; when a forward
/// runs on another stream, the workspace moves there (freed on the old stream, allocated on
/// the new one).
///
/// A plan is not for concurrent use: its workspace is shared by its forwards. To run the same
/// problem on several streams at once, make one plan per stream (the second comes from the
/// cache).
class convolution {
public:
    /// @brief Plans @p problem. The search and the trials run on scratch tensors that planning
    /// allocates on the handle's stream and frees (input and filter filled with seeded non-zero
    /// values, the output zeroed); give real buffers with the other constructor.
    /// @param h the cuDNN handle; its stream orders the search and the workspace
    /// @param problem shapes, types, layout, epilogue
    /// @param options policy, budget, TF32, determinism, checks
    /// @throws std::invalid_argument for a bad problem (values named)
    /// @throws std::logic_error for an empty (moved-from) handle
    /// @throws no_algorithm_error when no algorithm fits the policy and budget
    /// @throws gpu::dnn::dnn_error, gpu::cuda_error, gpu::out_of_memory from cuDNN and CUDA
    convolution(handle& h, const convolution_problem& problem,
                const convolution_options& options = {});

    /// @brief Plans @p problem, timing the algorithms (if the search is `exhaustive`) and trying
    /// the choice on these buffers, as `cudnn.benchmark` does; @p y is overwritten.
    /// @throws std::invalid_argument also when a buffer's size or element type does not match
    template <class T>
    convolution(handle& h, const convolution_problem& problem, const convolution_options& options,
                const device_buffer<T>& x, const device_buffer<T>& w, device_buffer<T>& y)
    {
        check_buffers(counts_of(problem), problem, detail::element_info_of<T>(), x.size(), w.size(),
                      std::nullopt, y.size(), false);
        plan(h, problem, options, x.data(), w.data(), y.data());
    }

    /// @brief y = conv(x, w), on @p h's stream. For the epilogue `none`.
    /// @tparam T `float` for fp32, a 2-byte type (`__half`, `__nv_bfloat16`) for fp16/bf16
    /// @throws std::invalid_argument when a size or the element type does not match the problem,
    /// or the plan has a bias epilogue
    /// @throws std::logic_error when the plan or the handle is empty (moved from)
    /// @throws gpu::numerics_error when `check_numerics` finds NaN or Inf in @p y
    template <class T>
    void forward(handle& h, const device_buffer<T>& x, const device_buffer<T>& w,
                 device_buffer<T>& y)
    {
        check_buffers(counts_, problem_, detail::element_info_of<T>(), x.size(), w.size(),
                      std::nullopt, y.size(), true);
        run(h, x.data(), w.data(), nullptr, y.data());
    }

    /// @brief y = act(conv(x, w) + bias), on @p h's stream, with the plan's bias epilogue:
    /// fused (`cudnnConvolutionBiasActivationForward`), or unfused when the fused call refused
    /// every algorithm (see `explain().execution`); @p bias has one element per output channel.
    /// @throws std::invalid_argument as the other overload, or when the plan has no bias
    template <class T>
    void forward(handle& h, const device_buffer<T>& x, const device_buffer<T>& w,
                 const device_buffer<T>& bias, device_buffer<T>& y)
    {
        check_buffers(counts_, problem_, detail::element_info_of<T>(), x.size(), w.size(),
                      bias.size(), y.size(), true);
        run(h, x.data(), w.data(), bias.data(), y.data());
    }

    /// @brief The forward on raw device pointers (memory cudagap does not own, such as a
    /// framework's tensors): no size checks are possible; @p bias must be null exactly when the
    /// epilogue is `none`.
    /// @throws std::invalid_argument for a null pointer or a bias that does not fit the epilogue
    void forward_raw(handle& h, const void* x, const void* w, const void* bias, void* y);

    /// @brief Why this plan runs its algorithm.
    [[nodiscard]] const convolution_explanation& explain() const noexcept { return explanation_; }
    /// @brief The problem it was planned for.
    [[nodiscard]] const convolution_problem& problem() const noexcept { return problem_; }
    /// @brief The options it was planned with.
    [[nodiscard]] const convolution_options& options() const noexcept { return options_; }
    /// @brief The chosen algorithm.
    [[nodiscard]] convolution_algorithm algorithm() const noexcept
    {
        return explanation_.algorithm;
    }
    /// @brief The chosen algorithm as cuDNN's value, for raw cuDNN calls.
    [[nodiscard]] cudnnConvolutionFwdAlgo_t native_algorithm() const noexcept
    {
        return static_cast<cudnnConvolutionFwdAlgo_t>(explanation_.algorithm);
    }
    /// @brief The workspace the chosen algorithm needs, in bytes.
    [[nodiscard]] std::size_t workspace_bytes() const noexcept
    {
        return explanation_.workspace_bytes;
    }
    /// @brief The workspace buffer (empty when the algorithm needs none).
    [[nodiscard]] const device_buffer<std::byte>& workspace() const noexcept { return workspace_; }
    /// @brief The input's descriptor, for raw cuDNN calls.
    [[nodiscard]] const tensor_descriptor& input_descriptor() const noexcept { return input_; }
    /// @brief The filter's (weights') descriptor.
    [[nodiscard]] const filter_descriptor& weights_descriptor() const noexcept { return filter_; }
    /// @brief The output's descriptor.
    [[nodiscard]] const tensor_descriptor& output_descriptor() const noexcept { return output_; }
    /// @brief The convolution descriptor, set to the chosen algorithm's math type.
    [[nodiscard]] const convolution_descriptor& descriptor() const noexcept { return convolution_; }

    /// @brief Moving leaves the source without descriptors; it may only be destroyed or
    /// assigned.
    /// @post `other.input_descriptor().get() == nullptr`
    convolution(convolution&& other) noexcept = default;
    /// @brief Releases this plan and takes @p other's.
    /// @post `other.input_descriptor().get() == nullptr`
    convolution& operator=(convolution&& other) noexcept = default;
    convolution(const convolution&) = delete;
    convolution& operator=(const convolution&) = delete;
    /// @brief Frees the workspace on its stream and destroys the descriptors.
    ~convolution() = default;

private:
    struct element_counts {
        std::size_t input = 0;
        std::size_t filter = 0;
        std::size_t output = 0;
        std::size_t bias = 0;
    };
    static element_counts counts_of(const convolution_problem& problem);
    static void check_buffers(const element_counts& expected, const convolution_problem& problem,
                              detail::element_info element, std::size_t x, std::size_t w,
                              std::optional<std::size_t> bias, std::size_t y, bool running);
    void plan(handle& h, const convolution_problem& problem, const convolution_options& options,
              const void* x, const void* w, void* y);
    void run(handle& h, const void* x, const void* w, const void* bias, void* y);

    convolution_problem problem_;
    element_counts counts_;
    convolution_options options_;
    convolution_explanation explanation_;
    tensor_descriptor input_ = tensor_descriptor::from_native_handle(nullptr);
    filter_descriptor filter_ = filter_descriptor::from_native_handle(nullptr);
    tensor_descriptor output_ = tensor_descriptor::from_native_handle(nullptr);
    tensor_descriptor bias_ = tensor_descriptor::from_native_handle(nullptr);
    convolution_descriptor convolution_ = convolution_descriptor::from_native_handle(nullptr);
    activation_descriptor activation_ = activation_descriptor::from_native_handle(nullptr);
    device_buffer<std::byte> workspace_;
};

} // namespace gpu::dnn
