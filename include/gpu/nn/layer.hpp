/// @file layer.hpp
/// @brief `gpu::nn::layer`: the interface every layer implements (linear, flatten, and conv2d,
/// relu, max_pool2d, dropout): plan once for a batch size, then forward and backward on
/// caller-owned buffers, capturable in a CUDA graph.
///
/// @code
/// const gpu::nn::tensor_spec out = fc.plan(ctx, x.spec());   // once per batch size
/// gpu::nn::tensor y(out, stream), dy(out, stream), dx(x.spec(), stream);
/// fc.forward(ctx, x.ref(), y.ref());
/// // ... the loss writes dy ...
/// fc.backward(ctx, dy.ref(), dx.ref());    // dx = dY·W; dW, db accumulate in the store
/// @endcode
///
/// The contract, the same for every layer:
/// - `plan(ctx, input)` checks the input's spec, makes what the layer needs per batch size
///   (scratch buffers, stream-ordered on `ctx.stream()`; algorithm choices) and returns the
///   output's spec. Call it before the first forward and again when the batch size changes;
///   never during a capture.
/// - `forward(ctx, input, output)` reads `input` and writes `output`, whose specs must be the
///   planned ones; the layer remembers what its backward needs (the input's address, or the
///   output's), so those buffers must keep their contents until `backward`.
/// - `backward(ctx, output_gradient, input_gradient)` writes the input gradient (overwritten,
///   like PyTorch's `grad_input`) and ADDS the parameter gradients to the store's FP32 gradient
///   buffer (PyTorch's `.grad` accumulation; `parameters::zero_grad` clears it). A null
///   `input_gradient.data` means it is not needed (the first layer), and no work is done for it.
/// - A layer whose output is a view of its input (`output_is_view()`, e.g. flatten) moves no
///   data: the caller passes the same address for input and output, and for both gradients.
/// - A plan made while the context is in inference mode (`context::set_inference_mode`,
///   PyTorch's `torch.inference_mode()`) is forward only: the layer makes nothing that only a
///   backward needs, and `backward` throws `std::logic_error` until it is planned again outside
///   it. Dropout still makes its generator states and its mask's memory: a forward that drops
///   (the context training) writes the mask whether or not a backward follows.
/// - While NVTX ranges are on (`<gpu/nvtx.hpp>`), each forward and backward is a range named
///   after the layer and the pass, `nn fc1 forward`, around the layer's own work (the GEMMs and
///   convolutions inside it are ranges of their own); a call refused by the checks opens none.
/// - Nothing synchronises the host or allocates outside `plan`: after one eager step, a whole
///   forward and backward can be captured in a CUDA graph and replayed (the buffers' addresses
///   then stay those of the capture).
///
/// Every check of specs, addresses and order is made here, before the layer's own code
/// (`do_forward` ...) runs: a bad argument is `std::invalid_argument` naming the layer and the
/// values, a call out of order (forward before plan, backward before forward) `std::logic_error`.
#pragma once

#include <gpu/nn/context.hpp>
#include <gpu/nn/tensor.hpp>

#include <optional>
#include <string>

namespace gpu::nn {

/// @brief The base of every layer: the checks and the order of calls, written once; a layer
/// implements `describe`, `do_plan`, `do_forward` and `do_backward`.
class layer {
public:
    /// @brief Destroys the layer (and its planned buffers, on their stream).
    virtual ~layer() = default;

    /// @brief E.g. `linear(784 -> 128, bias)`.
    [[nodiscard]] virtual std::string describe() const = 0;

    /// @brief What cudagap's NVTX ranges call the layer (`nn fc1 forward`, `nn relu backward`):
    /// the name it was made with (linear, conv2d: `fc1`), else `describe()`. Asked only while
    /// ranges are on (`gpu::nvtx::enabled()`).
    [[nodiscard]] virtual std::string name() const { return describe(); }

    /// @brief Whether the output is the input itself under another spec (no data moves).
    [[nodiscard]] virtual bool output_is_view() const noexcept { return false; }

    /// @brief Plans the layer for inputs of @p input's spec and returns the output's spec.
    /// @throws std::invalid_argument when the layer cannot take such an input (values named)
    /// @throws gpu::out_of_memory when its scratch buffers do not fit
    tensor_spec plan(context& ctx, const tensor_spec& input);

    /// @brief Runs the layer: reads @p input, writes @p output.
    /// @throws std::logic_error before `plan`
    /// @throws std::invalid_argument when a spec is not the planned one, an address is null,
    /// the context's store is not the one the layer registered in, or (for a view) the output
    /// is not the input's memory
    void forward(context& ctx, const tensor_ref& input, const tensor_ref& output);

    /// @brief Back-propagates: writes @p input_gradient (unless its data is null) from
    /// @p output_gradient and adds the parameter gradients to the store.
    /// @throws std::logic_error before a `forward` with the current plan, or when the current
    /// plan was made in inference mode
    /// @throws std::invalid_argument as `forward`
    void backward(context& ctx, const tensor_ref& output_gradient,
                  const tensor_ref& input_gradient);

    /// @brief The input spec of the current plan, if planned.
    [[nodiscard]] const std::optional<tensor_spec>& planned_input() const noexcept
    {
        return input_;
    }
    /// @brief The output spec of the current plan, if planned.
    [[nodiscard]] const std::optional<tensor_spec>& planned_output() const noexcept
    {
        return output_;
    }
    /// @brief Whether the current plan was made in inference mode (forward only); false when
    /// unplanned.
    [[nodiscard]] bool planned_for_inference() const noexcept
    {
        return input_.has_value() && forward_only_;
    }

protected:
    /// @brief A layer with no parameters.
    layer() noexcept = default;
    /// @brief A layer whose parameters are in @p store (the context's store is checked against it).
    explicit layer(parameters& store) noexcept : store_(&store) {}
    /// @brief Layers are not copied: their planned buffers and saved addresses are their own.
    layer(const layer&) = delete;
    /// @brief Not copied.
    layer& operator=(const layer&) = delete;
    /// @brief Moved with their plan.
    layer(layer&&) noexcept = default;
    /// @brief Moved with their plan.
    layer& operator=(layer&&) noexcept = default;

    /// @brief The store the layer registered its parameters in (null for a layer without
    /// parameters): what a layer that shares them (`conv2d::share`, `linear::share`) is made on.
    [[nodiscard]] parameters* registered_store() const noexcept { return store_; }

    /// @brief The layer's own planning: checks @p input (throwing `std::invalid_argument` with
    /// `describe()` and the values) and returns the output spec.
    virtual tensor_spec do_plan(context& ctx, const tensor_spec& input) = 0;
    /// @brief The layer's own forward; the base has checked both tensors against the plan.
    virtual void do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output) = 0;
    /// @brief The layer's own backward; the base has checked both tensors against the plan and
    /// that a forward ran. A null `input_gradient.data` asks for no input gradient.
    virtual void do_backward(context& ctx, const tensor_ref& output_gradient,
                             const tensor_ref& input_gradient) = 0;

private:
    void check_tensor(const char* function, const char* role, const tensor_ref& tensor,
                      const tensor_spec& planned, bool may_be_null) const;
    void check_store(const char* function, const context& ctx) const;

    parameters* store_ = nullptr;
    std::optional<tensor_spec> input_;
    std::optional<tensor_spec> output_;
    bool forwarded_ = false;
    bool forward_only_ = false; // planned in inference mode
};

} // namespace gpu::nn
