/// @file context.hpp
/// @brief `gpu::nn::context`: what every layer call gets: the stream, the library handles
/// (cuBLAS, cuBLASLt, cuDNN), the parameter store, the training flag and how convolutions are
/// planned.
///
/// @code
/// gpu::stream stream(gpu::stream_flags::non_blocking);
/// gpu::blas::handle blas(stream);
/// gpu::blas::lt_handle lt(stream);
/// gpu::dnn::handle dnn(stream);
/// gpu::nn::parameters store(gpu::nn::mixed_precision::bf16());
/// // ... layers register in `store`, then store.allocate(stream) ...
/// gpu::nn::context ctx(stream, blas, lt, dnn, store);
/// ctx.set_training(false);      // model.eval()
/// ctx.set_inference_mode(true); // torch.inference_mode(): plan forward only
/// // torch.backends.cudnn.benchmark = True, and the rest of a profile's switches:
/// ctx.set_convolution_options(
///     gpu::dnn::convolution_options::from_profile(gpu::profile::production()));
/// @endcode
#pragma once

#include <gpu/blas/handle.hpp>
#include <gpu/blas/lt.hpp>
#include <gpu/dnn/convolution_planning.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/nn/mixed_precision.hpp>
#include <gpu/nn/parameters.hpp>
#include <gpu/stream.hpp>

namespace gpu::nn {

/// @brief The stream, handles and parameters a layer works with; refers to them, owns none.
///
/// Every layer call runs on `stream()`: a layer binds the handle it uses to it before its
/// library call (cheap when already bound), so make the handles on the same stream and they are
/// never rebound. Handles are one per host thread: so is a context. The referenced objects must
/// outlive it. Copyable (it is a set of references).
class context {
public:
    /// @brief Refers to the stream, handles and store every layer call will use.
    /// @param stream where every layer call runs
    /// @param blas a cuBLAS handle (plain GEMMs)
    /// @param lt a cuBLASLt handle (linear layers)
    /// @param dnn a cuDNN handle (convolutions, pooling, activations, dropout)
    /// @param params the store the layers registered their parameters in
    context(stream_ref stream, blas::handle& blas, blas::lt_handle& lt, dnn::handle& dnn,
            parameters& params) noexcept
        : stream_(stream), blas_(&blas), lt_(&lt), dnn_(&dnn), params_(&params)
    {}

    /// @brief Where every layer call runs.
    [[nodiscard]] stream_ref stream() const noexcept { return stream_; }
    /// @brief The cuBLAS handle.
    [[nodiscard]] blas::handle& blas() const noexcept { return *blas_; }
    /// @brief The cuBLASLt handle.
    [[nodiscard]] blas::lt_handle& lt() const noexcept { return *lt_; }
    /// @brief The cuDNN handle.
    [[nodiscard]] dnn::handle& dnn() const noexcept { return *dnn_; }
    /// @brief The parameter store.
    [[nodiscard]] parameters& params() const noexcept { return *params_; }
    /// @brief The store's mixed-precision policy.
    [[nodiscard]] mixed_precision precision() const noexcept { return params_->precision(); }

    /// @brief Whether layers train (dropout drops; PyTorch's `model.train()`), or evaluate
    /// (`model.eval()`). True at first.
    [[nodiscard]] bool training() const noexcept { return training_; }
    /// @brief Switches between training and evaluation.
    void set_training(bool training) noexcept { training_ = training; }

    /// @brief Whether layers planned from now on are planned for inference only (PyTorch's
    /// `torch.inference_mode()`): the forward alone, with none of what a backward needs (the
    /// backward convolution plans and their algorithm searches, gradient scratch buffers). A
    /// layer keeps what it was planned with until it is planned again, and its `backward` then
    /// throws `std::logic_error`. False at first. Independent of `training()`: an inference
    /// server sets both (`set_training(false)`, so that dropout passes its input through).
    [[nodiscard]] bool inference_mode() const noexcept { return inference_mode_; }
    /// @brief Turns inference-only planning on or off for the plans made from now on.
    void set_inference_mode(bool inference) noexcept { inference_mode_ = inference; }

    /// @brief How `conv2d` layers choose their cuDNN algorithms when planned (all three passes):
    /// `search` exhaustive is PyTorch's `cudnn.benchmark = True`, `deterministic` its
    /// `cudnn.deterministic` (which also makes `max_pool2d`'s backward deterministic),
    /// `allow_tf32` its `cudnn.allow_tf32`. The default is cuDNN's heuristic, no TF32.
    /// `synchronous_checks` and `check_numerics` synchronise after each pass, which a CUDA graph
    /// capture refuses: leave them off in a step meant to be captured.
    [[nodiscard]] const dnn::convolution_options& convolution_options() const noexcept
    {
        return convolution_;
    }
    /// @brief Sets how layers planned from now on choose their algorithms (planned layers keep
    /// their choice until planned again); e.g. `dnn::convolution_options::from_profile(p)`.
    void set_convolution_options(const dnn::convolution_options& options)
    {
        convolution_ = options;
    }

private:
    stream_ref stream_;
    blas::handle* blas_;
    blas::lt_handle* lt_;
    dnn::handle* dnn_;
    parameters* params_;
    bool training_ = true;
    bool inference_mode_ = false;
    dnn::convolution_options convolution_{};
};

} // namespace gpu::nn
