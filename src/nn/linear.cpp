// The linear layer: registration, planning, and its forward and backward on cuBLASLt.
#include "memory_tags.hpp"
#include <gpu/blas/lt.hpp>
#include <gpu/detail/enum_names.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/nn/accumulate.hpp>
#include <gpu/nn/linear.hpp>

#include "gradient_kernels.hpp"
#include "layer_support.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <limits>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace gpu::nn {

constexpr gpu::detail::enum_name<bias_gradient_method> bias_gradient_method_names[] = {
    {bias_gradient_method::automatic, "automatic"},
    {bias_gradient_method::epilogue, "epilogue"},
    {bias_gradient_method::reduction, "reduction"}};
std::string_view to_string(bias_gradient_method method) noexcept
{
    return gpu::detail::name_of(bias_gradient_method_names, method);
}

namespace {

// Calls `work(std::type_identity<T>{})` with the C++ type of a compute precision.
template <class Work>
void with_compute_type(element_type type, Work&& work)
{
    switch (type) {
    case element_type::fp16: work(std::type_identity<__half>{}); return;
    case element_type::bf16: work(std::type_identity<__nv_bfloat16>{}); return;
    default: work(std::type_identity<float>{}); return;
    }
}

int kernel_type(element_type type) noexcept
{
    return type == element_type::fp16   ? detail::kernels::fp16
           : type == element_type::bf16 ? detail::kernels::bf16
                                        : detail::kernels::fp32;
}

// The addresses and sizes one backward works on.
struct backward_pass {
    blas::lt_handle* lt = nullptr;
    stream_ref stream = legacy_default_stream;
    element_type type = element_type::fp32;
    std::int64_t rows = 0;
    std::int64_t in = 0;
    std::int64_t out = 0;
    const void* dz = nullptr;     // the gradient at the GEMM's output (after the ReLU, if any)
    void* dx = nullptr;           // null: not needed
    const void* x = nullptr;      // the forward's input
    const void* weight = nullptr; // the working copy of W
    float* weight_gradient = nullptr;
    float* bias_gradient = nullptr; // null: no bias
    float* bias_scratch = nullptr;  // the epilogue's output
};

// dW += dzᵀ·x with the bias gradient Σ_batch dz written beside it by cuBLASLt's epilogue, then
// added. False when cuBLASLt refused the epilogue at run time and the method may fall back.
template <class Gradient, class Input, class WeightGradient>
bool weight_and_bias_gradient_by_epilogue(const backward_pass& p, const Gradient& dz,
                                          const Input& x, const WeightGradient& dw,
                                          bool may_fall_back)
{
    try {
        blas::lt_matmul_bias_gradient(*p.lt, dz.transposed(), x, dw, p.bias_scratch, 1.0F);
    } catch (const blas::blas_error& error) {
        // The heuristic offered an algorithm, yet the call refused it (cuBLASLt does not document
        // BGRADB for every type combination): nothing was queued, so the reduction can take over.
        if (!may_fall_back || error.status() != CUBLAS_STATUS_NOT_SUPPORTED) {
            throw;
        }
        return false;
    }
    accumulate(p.bias_scratch, element_type::fp32, p.bias_gradient, static_cast<std::size_t>(p.out),
               p.stream);
    return true;
}

template <class T>
void backward_as(const backward_pass& p, bias_gradient_method& method, bool may_fall_back)
{
    blas::lt_handle& lt = *p.lt;
    const auto dz = gpu::matrix::row_major(static_cast<const T*>(p.dz), p.rows, p.out);
    const auto x = gpu::matrix::row_major(static_cast<const T*>(p.x), p.rows, p.in);
    const auto dw = gpu::matrix::row_major(p.weight_gradient, p.out, p.in);
    if (p.bias_gradient != nullptr && method == bias_gradient_method::automatic) {
        method = blas::lt_supports_bias_gradient(lt, dz.transposed(), x, dw, p.bias_scratch)
                     ? bias_gradient_method::epilogue
                     : bias_gradient_method::reduction;
    }
    // The parameter gradients first, the input gradient last: the input's buffer may be reused
    // for its own gradient, and dW reads the input.
    const bool by_epilogue = p.bias_gradient != nullptr &&
                             method == bias_gradient_method::epilogue &&
                             weight_and_bias_gradient_by_epilogue(p, dz, x, dw, may_fall_back);
    if (!by_epilogue) {
        if (p.bias_gradient != nullptr) {
            method = bias_gradient_method::reduction;
        }
        blas::lt_matmul(lt, dz.transposed(), x, dw, 1.0F, 1.0F); // dW += dzᵀ·x
        if (p.bias_gradient != nullptr) {
            accumulate_column_sums(p.dz, p.type, static_cast<std::size_t>(p.rows),
                                   static_cast<std::size_t>(p.out), p.bias_gradient, p.stream);
        }
    }
    if (p.dx != nullptr) { // dx = dz·W
        blas::lt_matmul(lt, dz,
                        gpu::matrix::row_major(static_cast<const T*>(p.weight), p.out, p.in),
                        gpu::matrix::row_major(static_cast<T*>(p.dx), p.rows, p.in));
    }
}

} // namespace

linear::linear(parameters& store, std::string name, std::int64_t in_features,
               std::int64_t out_features, const linear_options& options)
    : layer(store), name_(std::move(name)), in_(in_features), out_(out_features), options_(options),
      resolved_(options.bias_gradient)
{
    GPU_EXPECTS(in_features > 0 && out_features > 0, std::invalid_argument, "gpu::nn::linear ",
                name_, ": in_features ", in_features, " and out_features ", out_features,
                " must be positive");
    GPU_EXPECTS(!options.relu || options.bias, std::invalid_argument, "gpu::nn::linear ", name_,
                ": a fused ReLU needs the bias (cuBLASLt fuses bias and ReLU together)");
    GPU_EXPECTS(gpu::detail::is_named(bias_gradient_method_names, options.bias_gradient),
                std::invalid_argument, "gpu::nn::linear ", name_, ": bias_gradient ",
                static_cast<int>(options.bias_gradient), " is not a gpu::nn::bias_gradient_method");
    // Both names are checked before either is added, so a refusal registers nothing.
    GPU_EXPECTS(!options.bias || !store.find(name_ + ".bias"), std::invalid_argument,
                "gpu::nn::linear ", name_, ": the store already has a parameter named ", name_,
                ".bias");
    weight_ = store.add(name_ + ".weight", {out_features, in_features},
                        initialization::kaiming_uniform(in_features));
    if (options.bias) {
        bias_ =
            store.add(name_ + ".bias", {out_features}, initialization::fan_in_uniform(in_features));
    }
}

linear::linear(const linear& other, sharing)
    : layer(*other.registered_store()), name_(other.name_), in_(other.in_), out_(other.out_),
      options_(other.options_), weight_(other.weight_), bias_(other.bias_),
      resolved_(other.options_.bias_gradient)
{}

linear linear::share() const
{
    return linear(*this, sharing{});
}

std::string linear::describe() const
{
    return "linear " + name_ + "(" + std::to_string(in_) + " -> " + std::to_string(out_) +
           (options_.bias ? ", bias" : ", no bias") + (options_.relu ? ", relu" : "") + ")";
}

std::vector<std::int64_t> linear::output_shape(const std::vector<std::int64_t>& input) const
{
    GPU_EXPECTS(input.size() >= 2, std::invalid_argument, describe(), ": the input has ",
                input.size(), " dimensions; it needs [batch..., ", in_, "]");
    for (std::size_t i = 0; i < input.size(); ++i) {
        GPU_EXPECTS(input[i] > 0, std::invalid_argument, describe(), ": dimension ", i,
                    " of the input is ", input[i], "; every dimension must be positive");
    }
    GPU_EXPECTS(input.back() == in_, std::invalid_argument, describe(),
                ": the input's last dimension is ", input.back(), ", not in_features ", in_);
    std::vector<std::int64_t> output = input;
    output.back() = out_;
    return output;
}

tensor_spec linear::do_plan(context& ctx, const tensor_spec& input)
{
    const element_type compute =
        detail::require_compute_input(ctx, describe(), "a linear layer", input);
    GPU_EXPECTS(input.shape.size() <= 2 || input.layout == dnn::tensor_layout::nchw,
                std::invalid_argument, describe(), ": the input ", input.to_string(),
                " is channels-last, not row-major [batch..., in_features]");
    std::vector<std::int64_t> shape = output_shape(input.shape);
    std::int64_t rows = 1;
    for (std::size_t i = 0; i + 1 < input.shape.size(); ++i) {
        GPU_EXPECTS(rows <= std::numeric_limits<std::int32_t>::max() / input.shape[i],
                    std::invalid_argument, describe(), ": the batch of ", input.to_string(),
                    " has more than 2^31 - 1 rows");
        rows *= input.shape[i];
    }
    rows_ = rows;
    resolved_ = options_.bias_gradient;
    // Inference mode: neither the ReLU's gradient nor the bias gradient's scratch is needed.
    const bool backward = !ctx.inference_mode();
    const std::size_t gradient_bytes =
        options_.relu && backward ? static_cast<std::size_t>(rows) *
                                        static_cast<std::size_t>(out_) * element_size(compute)
                                  : 0;
    relu_gradient_ = device_buffer<std::byte>(gradient_bytes, ctx.stream(), detail::scratch_tag);
    const bool scratch =
        backward && bias_.has_value() && options_.bias_gradient != bias_gradient_method::reduction;
    bias_scratch_ = device_buffer<float>(scratch ? static_cast<std::size_t>(out_) : 0, ctx.stream(),
                                         detail::scratch_tag);
    return tensor_spec{std::move(shape), compute, dnn::tensor_layout::nchw};
}

void linear::do_forward(context& ctx, const tensor_ref& input, const tensor_ref& output)
{
    parameters& store = ctx.params();
    const parameter_view weight = store.view(weight_);
    const void* bias = bias_ ? store.view(*bias_).working : nullptr;
    blas::lt_handle& lt = ctx.lt();
    lt.set_stream(ctx.stream());
    with_compute_type(input.spec.type, [&]<class T>(std::type_identity<T>) {
        const auto x = gpu::matrix::row_major(static_cast<const T*>(input.data), rows_, in_);
        const auto w = gpu::matrix::row_major(static_cast<const T*>(weight.working), out_, in_);
        const auto y = gpu::matrix::row_major(static_cast<T*>(output.data), rows_, out_);
        if (bias != nullptr) { // y = x·Wᵀ + b (then the ReLU), in the epilogue
            blas::lt_matmul_bias(lt, x, w.transposed(), y, static_cast<const T*>(bias),
                                 options_.relu);
        } else {
            blas::lt_matmul(lt, x, w.transposed(), y);
        }
    });
    saved_input_ = input.data;
    saved_output_ = output.data;
}

void linear::do_backward(context& ctx, const tensor_ref& output_gradient,
                         const tensor_ref& input_gradient)
{
    parameters& store = ctx.params();
    const parameter_view weight = store.view(weight_);
    backward_pass pass;
    pass.lt = &ctx.lt();
    pass.lt->set_stream(ctx.stream());
    pass.stream = ctx.stream();
    pass.type = output_gradient.spec.type;
    pass.rows = rows_;
    pass.in = in_;
    pass.out = out_;
    pass.dz = output_gradient.data;
    pass.dx = input_gradient.data;
    pass.x = saved_input_;
    pass.weight = weight.working;
    pass.weight_gradient = weight.gradient;
    if (bias_) {
        pass.bias_gradient = store.view(*bias_).gradient;
        pass.bias_scratch = bias_scratch_.data();
    }
    if (options_.relu) { // dz = dy where y > 0, 0 elsewhere
        // The mask is read from the forward's output: a gradient written over it (an in-place
        // loss backward) would leave no mask to read.
        GPU_EXPECTS(output_gradient.data != saved_output_, std::invalid_argument,
                    "gpu::nn::linear(", name_,
                    ")::backward: the output gradient is the forward's output buffer, but the "
                    "fused ReLU reads its mask from that output; give the gradient its own buffer");
        GPU_CUDA_CHECK(detail::kernels::relu_gradient(kernel_type(pass.type), saved_output_,
                                                      output_gradient.data, relu_gradient_.data(),
                                                      rows_ * out_, ctx.stream().get()));
        pass.dz = relu_gradient_.data();
    }
    with_compute_type(pass.type, [&]<class T>(std::type_identity<T>) {
        backward_as<T>(pass, resolved_, options_.bias_gradient == bias_gradient_method::automatic);
    });
}

} // namespace gpu::nn
