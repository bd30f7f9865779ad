/// @file lt.hpp
/// @brief cuBLASLt in the blas wrapper: `gpu::blas::lt_handle` (a cuBLASLt context with its stream,
/// its stream-ordered workspace and its cache of chosen algorithms) and `gpu::blas::lt_matmul`,
/// a GEMM whose epilogue adds a bias, applies a ReLU, or reduces a bias gradient in the same
/// kernel.
///
/// @code
/// gpu::blas::lt_handle lt(stream);                                   // 32 MiB workspace on Hopper
/// // y = x·Wᵀ + b, the forward of a linear layer (x: batch x in, W: out x in, y: batch x out)
/// gpu::blas::lt_matmul_bias(lt, gpu::matrix::row_major(x, batch, in),
///                           gpu::matrix::row_major(w, out, in).transposed(),
///                           gpu::matrix::row_major(y, batch, out), b);
/// // dW += dYᵀ·X, and db = Σ over the batch of dY, in the same call
/// gpu::blas::lt_matmul_bias_gradient(lt, gpu::matrix::row_major(dy, batch, out).transposed(),
///                                    gpu::matrix::row_major(x, batch, in),
///                                    gpu::matrix::row_major(dw, out, in), db, 1.0F);
/// @endcode
///
/// | A and B | C (and D) | compute |
/// |---|---|---|
/// | `float` | `float` | FP32 (`CUBLAS_COMPUTE_32F`), TF32 tensor cores if the handle allows it |
/// | `__half` | `__half` or `float` | FP32 on tensor cores (`CUBLAS_COMPUTE_32F`) |
/// | `__nv_bfloat16` | `__nv_bfloat16` or `float` | FP32 on tensor cores (`CUBLAS_COMPUTE_32F`) |
///
/// An FP32 `c` with FP16/BF16 inputs is how gradients are accumulated in FP32 (beta = 1) while
/// the products run on FP16/BF16 tensor cores.
///
/// **Algorithm choice.** The first call of a problem (shapes, leading dimensions, types,
/// epilogue, TF32, and the alignment of every pointer, which decides which kernels may run)
/// asks `cublasLtMatmulAlgoGetHeuristic` for the best algorithm within the handle's workspace
/// and keeps it, with the problem's descriptors, in the handle; every later call of the same
/// problem makes one `cublasLtMatmul` call and nothing else. The heuristic runs on the host only.
///
/// **CUDA graphs.** `cublasLtMatmul` on the handle's stream with the handle's own workspace is
/// capturable. Run each problem once before capturing (the heuristic query and the descriptors
/// are made then, outside the capture), as PyTorch asks for warm-up iterations before capture.
///
/// **Epilogues and layouts.** Every epilogue other than `none` needs a row-major `c`, the layout
/// of a batch-major layer output: cuBLASLt broadcasts a bias along the columns of its
/// column-major output, which is one value per column of the row-major `c` that cudagap maps onto
/// it (see `plan_gemm`).
#pragma once

#include <gpu/blas/error.hpp>
#include <gpu/matrix/gemm_plan.hpp>
#include <gpu/matrix/matrix.hpp>
#include <gpu/blas/types.hpp>
#include <gpu/detail/unique_handle.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include <cublasLt.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

namespace gpu::blas {

/// @brief An element type cuBLASLt multiplies here: `float`, `__half` or `__nv_bfloat16`.
template <class T>
concept lt_element =
    std::is_same_v<T, float> || std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

/// @brief The types `lt_matmul` takes: A and B of one `lt_element` type (either may be `const`),
/// C of the same type or, for FP16/BF16 inputs, `float`.
template <class TA, class TB, class TC>
concept lt_types = std::is_same_v<std::remove_const_t<TA>, std::remove_const_t<TB>> &&
                   lt_element<std::remove_const_t<TA>> && !std::is_const_v<TC> &&
                   (std::is_same_v<std::remove_const_t<TA>, TC> ||
                    (!std::is_same_v<std::remove_const_t<TA>, float> && std::is_same_v<TC, float>));

/// @brief What cuBLASLt does after the product `alpha·a·b + beta·c`, for a row-major `c`
/// (m x n).
enum class lt_epilogue {
    none,      ///< nothing (`CUBLASLT_EPILOGUE_DEFAULT`)
    bias,      ///< `c[i][j] += bias[j]`, n values of c's type (`CUBLASLT_EPILOGUE_BIAS`)
    relu_bias, ///< `c[i][j] = max(c[i][j] + bias[j], 0)` (`CUBLASLT_EPILOGUE_RELU_BIAS`)
    /// also writes `gradient[i] = Σₚ a[i][p]`, m values of c's type: the bias gradient of a
    /// layer whose output gradient is `aᵀ` (`CUBLASLT_EPILOGUE_BGRADB` of the column-major
    /// problem). The vector is written, not added to; alpha is 1 (cuBLASLt does not document
    /// whether alpha would scale it).
    bias_gradient,
};

/// @brief `none`, `bias`, `relu_bias` or `bias_gradient`; `unknown` outside the enumeration.
[[nodiscard]] std::string_view to_string(lt_epilogue epilogue) noexcept;

/// @brief How a new `lt_handle` is set up.
struct lt_handle_options {
    /// FP32 inputs may be rounded to TF32 on tensor cores (`CUBLAS_COMPUTE_32F_FAST_TF32`),
    /// PyTorch's `allow_tf32`; FP16 and BF16 inputs always use tensor cores.
    bool allow_tf32 = false;
    /// Workspace in bytes; empty means `gpu::blas::recommended_workspace_bytes` (in
    /// `<gpu/blas/handle.hpp>`) of the device (32 MiB on
    /// Hopper, as NVIDIA recommends for cuBLASLt), 0 means none (fewer algorithms qualify).
    std::optional<std::size_t> workspace_bytes{};

    /// @brief The options a profile asks for: its `allow_tf32`; the recommended workspace.
    [[nodiscard]] static lt_handle_options from_profile(const gpu::profile& profile);
};

/// @brief One cuBLASLt matmul problem: what decides the algorithm, and the key of a handle's
/// cache. Plain data; `plan_lt_matmul` makes it from views (host only, no GPU needed).
struct lt_problem {
    matrix::gemm_plan plan{}; ///< the column-major call (operands swapped for a row-major c)
    element_type input = element_type::fp32;  ///< type of A and B
    element_type output = element_type::fp32; ///< type of C, D and the epilogue's vector
    lt_epilogue epilogue = lt_epilogue::none; ///< the epilogue
    bool allow_tf32 = false;                  ///< FP32 inputs may run as TF32
    std::uint32_t alignment_first = 256;      ///< alignment in bytes of cuBLASLt's A (up to 256)
    std::uint32_t alignment_second = 256;     ///< alignment in bytes of cuBLASLt's B (up to 256)
    std::uint32_t alignment_c = 256;          ///< alignment in bytes of C (up to 256)
    std::uint32_t alignment_vector =
        256; ///< alignment of the bias or gradient vector (256 without one)

    /// @brief E.g. `FP16 inputs, FP32 output, epilogue bias_gradient, column-major m=64 n=10
    /// k=32 op NT ld 64/10/64, alignment 256/256/256/256`.
    [[nodiscard]] std::string to_string() const;

    /// @brief Problems compare field by field.
    friend bool operator==(const lt_problem&, const lt_problem&) = default;
};

class lt_handle;

namespace detail {

/// @brief Destroys a cuBLASLt handle; failures are reported, never thrown.
struct lt_handle_deleter {
    void operator()(cublasLtHandle_t handle) const noexcept;
};

/// @brief The cache of a handle's chosen algorithms (defined in lt.cpp).
class lt_plan_cache;

/// @brief The largest power of two up to 256 that divides @p pointer's address (256 for null).
[[nodiscard]] std::uint32_t alignment_of(const void* pointer) noexcept;

/// @brief The checks and the problem of one matmul, past the shape checks of `plan_gemm`.
/// @throws std::invalid_argument for an epilogue outside the enumeration, an epilogue with a
/// column-major c, a missing vector, a vector without an epilogue, or k = 0 (values named)
[[nodiscard]] lt_problem plan_lt(const matrix::gemm_plan& plan, element_type input,
                                 element_type output, matrix::layout c_order, lt_epilogue epilogue,
                                 const void* a, const void* b, const void* c, const void* vector,
                                 bool allow_tf32, std::string_view function);

/// @brief One `cublasLtMatmul` call, without element types in the signature.
struct lt_call {
    lt_problem problem{};         ///< the checked problem
    const void* first = nullptr;  ///< cuBLASLt's A
    const void* second = nullptr; ///< cuBLASLt's B
    void* c = nullptr;            ///< C, also D
    const void* vector = nullptr; ///< the bias (read) or the bias gradient (written), or null
    float alpha = 1;              ///< scales the product
    float beta = 0;               ///< scales the old C
};

/// @brief Runs the call on the handle's stream, choosing (and caching) its algorithm first when
/// the problem is new.
void run_lt(lt_handle& h, const lt_call& call, const char* function);

/// @brief Whether cuBLASLt has an algorithm for the call's problem on this handle (asking the
/// heuristic and caching the answer when it is new); runs nothing.
[[nodiscard]] bool lt_supported(lt_handle& h, const lt_call& call);

/// @brief What cuBLASLt's descriptors hold for a problem, read back from them
/// (`cublasLtMatmulDescGetAttribute`, `cublasLtMatrixLayoutGetAttribute`): the same
/// descriptors a matmul makes, so that the mapping is tested without a GPU.
struct lt_descriptor_values {
    int compute_type = 0;       ///< `cublasComputeType_t`
    int scale_type = 0;         ///< `cudaDataType` of alpha and beta
    int transa = 0;             ///< `cublasOperation_t` of A
    int transb = 0;             ///< `cublasOperation_t` of B
    std::uint32_t epilogue = 0; ///< `cublasLtEpilogue_t`
    int a_type = 0;             ///< `cudaDataType` of A
    std::uint64_t a_rows = 0;   ///< rows of A as stored
    std::uint64_t a_cols = 0;   ///< columns of A as stored
    std::int64_t a_ld = 0;      ///< leading dimension of A
    int b_type = 0;             ///< `cudaDataType` of B
    std::uint64_t b_rows = 0;   ///< rows of B as stored
    std::uint64_t b_cols = 0;   ///< columns of B as stored
    std::int64_t b_ld = 0;      ///< leading dimension of B
    int c_type = 0;             ///< `cudaDataType` of C and D
    std::uint64_t c_rows = 0;   ///< rows of C
    std::uint64_t c_cols = 0;   ///< columns of C
    std::int64_t c_ld = 0;      ///< leading dimension of C
};

/// @brief Makes the descriptors of @p problem as a matmul does and reads them back.
/// @throws gpu::blas::blas_error when cuBLASLt refuses a descriptor
[[nodiscard]] lt_descriptor_values read_back_descriptors(const lt_problem& problem);

} // namespace detail

/// @brief An owning cuBLASLt context (`cublasLtHandle_t`) for the device of the stream it was
/// made with, with its stream, its workspace and its algorithm cache. Move-only; one per host
/// thread.
///
/// cuBLASLt takes the stream and the workspace per call; the handle keeps both so that a call
/// names neither: the workspace is a stream-ordered `device_buffer` on the bound stream, and
/// `set_stream` moves it the way `gpu::blas::handle::set_stream` moves cuBLAS's (the new stream
/// first waits for the work queued on the old one). The handle must be destroyed before its
/// stream, like a `device_buffer`.
class lt_handle {
public:
    /// @brief Creates a cuBLASLt context bound to @p stream, with a workspace on it.
    /// @throws gpu::blas::blas_error from `cublasLtCreate` when no driver or GPU is usable (the
    /// hint says why)
    /// @throws gpu::out_of_memory when the workspace cannot be allocated
    explicit lt_handle(stream_ref stream, const lt_handle_options& options = {});

    /// @brief Adopts a cuBLASLt handle created elsewhere and binds it to @p stream; it will be
    /// destroyed with this object. A null @p raw gives an empty handle (every matmul then throws
    /// `std::logic_error`). A non-null one gets a workspace as @p options say.
    /// @throws gpu::out_of_memory when the workspace cannot be allocated
    [[nodiscard]] static lt_handle from_native_handle(cublasLtHandle_t raw, stream_ref stream,
                                                      const lt_handle_options& options = {});

    /// @brief The raw handle, still owned (null after a move).
    [[nodiscard]] cublasLtHandle_t get() const noexcept { return handle_.get(); }

    /// @brief Whether a handle is held (false after a move or `release`).
    [[nodiscard]] explicit operator bool() const noexcept { return static_cast<bool>(handle_); }

    /// @brief Gives up ownership of the cuBLASLt handle (cuBLASLt keeps no pointer to the
    /// workspace, which is freed with this object); the caller must `cublasLtDestroy` it.
    /// @post this object is empty; its cache is cleared.
    [[nodiscard]] cublasLtHandle_t release() noexcept;

    /// @brief The device the handle belongs to: its stream's when it was made (or adopted),
    /// recorded. It was created with that device current, matmuls run with it current, and
    /// `set_stream` refuses a stream of another device.
    /// @throws std::logic_error on an empty handle (adopted from null, moved from or released)
    [[nodiscard]] gpu::device device() const;

    /// @brief Binds @p stream: later matmuls run on it, and the workspace moves to it after the
    /// work queued on the previous stream (an event, no host synchronisation). Cheap when
    /// already bound.
    /// @throws std::logic_error on an empty handle
    void set_stream(stream_ref stream);

    /// @brief The stream matmuls run on.
    [[nodiscard]] stream_ref stream() const noexcept { return stream_; }

    /// @brief Whether FP32 inputs may run as TF32.
    [[nodiscard]] bool allow_tf32() const noexcept { return allow_tf32_; }

    /// @brief Allows or forbids TF32 for FP32 inputs from the next call on (a different problem
    /// for the cache: both choices may stay cached).
    void set_allow_tf32(bool allow) noexcept { allow_tf32_ = allow; }

    /// @brief The workspace size in bytes.
    [[nodiscard]] std::size_t workspace_size() const noexcept { return workspace_.size(); }

    /// @brief Replaces the workspace by one of @p bytes on the bound stream, and clears the
    /// cache (the algorithms were chosen for the old size).
    /// @throws std::logic_error on an empty handle
    /// @throws gpu::out_of_memory when it cannot be allocated
    void set_workspace_size(std::size_t bytes);

    /// @brief How many problems have a chosen algorithm (or a known refusal) in the cache.
    [[nodiscard]] std::size_t cached_problems() const noexcept;

    /// @brief Forgets every chosen algorithm; the next call of each problem asks again.
    void clear_cache() noexcept;

    /// @brief Moving leaves the source empty.
    /// @post `!other`, `other.get() == nullptr`, and its cache is empty
    lt_handle(lt_handle&& other) noexcept;
    /// @brief Destroys the owned handle and takes @p other's.
    /// @post as after the move constructor
    lt_handle& operator=(lt_handle&& other) noexcept;
    lt_handle(const lt_handle&) = delete;
    lt_handle& operator=(const lt_handle&) = delete;
    /// @brief Destroys the cached descriptors, the handle (`cublasLtDestroy`), and frees the
    /// workspace on its stream.
    ~lt_handle();

private:
    friend void detail::run_lt(lt_handle& h, const detail::lt_call& call, const char* function);
    friend bool detail::lt_supported(lt_handle& h, const detail::lt_call& call);

    struct adopt_tag {};
    lt_handle(adopt_tag, cublasLtHandle_t raw, stream_ref stream, const lt_handle_options& options);

    void require_handle(const char* function) const;

    // The workspace is declared first so that it is freed after the handle that used it.
    device_buffer<std::byte> workspace_;
    gpu::detail::unique_handle<cublasLtHandle_t, detail::lt_handle_deleter> handle_;
    std::unique_ptr<detail::lt_plan_cache> cache_;
    stream_ref stream_ = legacy_default_stream; // every constructor binds the caller's stream
    int device_ = -1;
    bool allow_tf32_ = false;
};

/// @brief Checks a matmul and returns its problem, as `lt_matmul` would run it on a handle with
/// @p allow_tf32; no GPU and no cuBLASLt call. For inspection and tests.
/// @param a the left operand (m x k)
/// @param b the right operand (k x n)
/// @param c the result (m x n)
/// @param epilogue what follows the product
/// @param vector the bias or gradient vector (null for `lt_epilogue::none`)
/// @param allow_tf32 whether the handle would allow TF32
/// @throws std::invalid_argument for bad shapes (see `plan_gemm`) or a bad epilogue (see
/// `lt_matmul_bias`, `lt_matmul_bias_gradient`)
template <class TA, class TB, class TC>
requires lt_types<TA, TB, TC>
[[nodiscard]] lt_problem plan_lt_matmul(matrix::matrix_view<TA> a, matrix::matrix_view<TB> b,
                                        matrix::matrix_view<TC> c,
                                        lt_epilogue epilogue = lt_epilogue::none,
                                        std::type_identity_t<const TC*> vector = nullptr,
                                        bool allow_tf32 = false)
{
    constexpr std::string_view function = "gpu::blas::plan_lt_matmul";
    const matrix::gemm_plan plan = matrix::plan_gemm(a, b, c, function);
    return detail::plan_lt(plan, detail::element_type_of<std::remove_const_t<TA>>,
                           detail::element_type_of<TC>, c.order(), epilogue, a.data(), b.data(),
                           c.data(), vector, allow_tf32, function);
}

namespace detail {

/// @brief The checked call of a matmul on @p h (shared by the public functions).
template <class TA, class TB, class TC>
[[nodiscard]] lt_call make_lt_call(const lt_handle& h, matrix::matrix_view<TA> a,
                                   matrix::matrix_view<TB> b, matrix::matrix_view<TC> c,
                                   lt_epilogue epilogue, const void* vector, float alpha,
                                   float beta, std::string_view function)
{
    const matrix::gemm_plan plan = matrix::plan_gemm(a, b, c, function);
    const lt_problem problem =
        plan_lt(plan, element_type_of<std::remove_const_t<TA>>, element_type_of<TC>, c.order(),
                epilogue, a.data(), b.data(), c.data(), vector, h.allow_tf32(), function);
    const void* pa = a.data();
    const void* pb = b.data();
    return lt_call{problem, plan.first(pa, pb), plan.second(pa, pb), c.data(), vector, alpha, beta};
}

} // namespace detail

/// @brief `c = alpha·a·b + beta·c` on the handle's stream through cuBLASLt.
///
/// The views say the layouts, as for `gemm`. When @p beta is 0, `c` is not read.
/// @throws std::invalid_argument for bad shapes (named, see `plan_gemm`) or k = 0, before any
/// cuBLASLt call
/// @throws std::logic_error on an empty handle
/// @throws gpu::blas::blas_error when cuBLASLt has no algorithm for the problem (the
/// heuristic's `CUBLAS_STATUS_NOT_SUPPORTED` or `CUBLAS_STATUS_INVALID_VALUE`, the problem in the
/// hint) or the matmul fails
template <class TA, class TB, class TC>
requires lt_types<TA, TB, TC>
void lt_matmul(lt_handle& h, matrix::matrix_view<TA> a, matrix::matrix_view<TB> b,
               matrix::matrix_view<TC> c, float alpha = 1, float beta = 0)
{
    constexpr const char* function = "gpu::blas::lt_matmul";
    detail::run_lt(
        h, detail::make_lt_call(h, a, b, c, lt_epilogue::none, nullptr, alpha, beta, function),
        function);
}

/// @brief `c = alpha·a·b + beta·c + bias` broadcast over the rows of the row-major `c`
/// (`c[i][j] += bias[j]`), then `max(·, 0)` when @p relu: the forward of a linear layer
/// (`torch.addmm`, and `relu(addmm)` fused) in one kernel.
/// @param h the handle: its stream, workspace and TF32 switch apply
/// @param a the left operand (m x k) in device memory
/// @param b the right operand (k x n) in device memory
/// @param c the result (m x n, row-major) in device memory; must not overlap `a` or `b`
/// @param bias `c.cols()` values of c's type in device memory
/// @param relu apply `max(·, 0)` after the bias
/// @param alpha scales the product
/// @param beta scales the old `c` (0: `c` is not read)
/// @throws std::invalid_argument for bad shapes, k = 0, a column-major `c`, or a null @p bias
/// with a non-empty `c` (values named), before any cuBLASLt call
/// @throws std::logic_error on an empty handle
/// @throws gpu::blas::blas_error when cuBLASLt has no algorithm or the matmul fails
template <class TA, class TB, class TC>
requires lt_types<TA, TB, TC>
void lt_matmul_bias(lt_handle& h, matrix::matrix_view<TA> a, matrix::matrix_view<TB> b,
                    matrix::matrix_view<TC> c, const TC* bias, bool relu = false, float alpha = 1,
                    float beta = 0)
{
    constexpr const char* function = "gpu::blas::lt_matmul_bias";
    const lt_epilogue epilogue = relu ? lt_epilogue::relu_bias : lt_epilogue::bias;
    detail::run_lt(h, detail::make_lt_call(h, a, b, c, epilogue, bias, alpha, beta, function),
                   function);
}

/// @brief `c = alpha·a·b + beta·c`, and `gradient[i] = Σₚ a[i][p]` in the same kernel: with
/// `a = dYᵀ` and `b = X` this is a linear layer's weight gradient `dW (+)= dYᵀ·X` and its bias
/// gradient `Σ_batch dY`.
///
/// The gradient is written (not added to), and the product is not scaled (alpha is 1:
/// cuBLASLt does not document whether alpha would scale the gradient too). Whether cuBLASLt
/// has such a kernel depends on the types and the device: `lt_supports_bias_gradient` asks.
/// @param h the handle: its stream, workspace and TF32 switch apply
/// @param a the left operand (m x k) in device memory, e.g. `dY` (batch x out) transposed
/// @param b the right operand (k x n) in device memory, e.g. `X` (batch x in)
/// @param c the result (m x n, row-major) in device memory, e.g. `dW` (out x in)
/// @param gradient `a.rows()` values of c's type in device memory
/// @param beta scales the old `c` (1 accumulates gradients)
/// @throws std::invalid_argument for bad shapes, k = 0, a column-major `c`, or a null
/// @p gradient with a non-empty `c`, before any cuBLASLt call
/// @throws std::logic_error on an empty handle
/// @throws gpu::blas::blas_error when cuBLASLt has no algorithm for this epilogue and these
/// types (`CUBLAS_STATUS_NOT_SUPPORTED`, or `CUBLAS_STATUS_INVALID_VALUE`), or the matmul fails
template <class TA, class TB, class TC>
requires lt_types<TA, TB, TC>
void lt_matmul_bias_gradient(lt_handle& h, matrix::matrix_view<TA> a, matrix::matrix_view<TB> b,
                             matrix::matrix_view<TC> c, TC* gradient, float beta = 0)
{
    constexpr const char* function = "gpu::blas::lt_matmul_bias_gradient";
    detail::run_lt(h,
                   detail::make_lt_call(h, a, b, c, lt_epilogue::bias_gradient, gradient, 1.0F,
                                        beta, function),
                   function);
}

/// @brief Whether `lt_matmul_bias_gradient` with these operands has a cuBLASLt algorithm on
/// @p h (the answer is cached like an algorithm); runs nothing on the device.
/// @throws std::invalid_argument as `lt_matmul_bias_gradient`
/// @throws std::logic_error on an empty handle
template <class TA, class TB, class TC>
requires lt_types<TA, TB, TC>
[[nodiscard]] bool lt_supports_bias_gradient(lt_handle& h, matrix::matrix_view<TA> a,
                                             matrix::matrix_view<TB> b, matrix::matrix_view<TC> c,
                                             TC* gradient)
{
    return detail::lt_supported(h, detail::make_lt_call(h, a, b, c, lt_epilogue::bias_gradient,
                                                        gradient, 1.0F, 1.0F,
                                                        "gpu::blas::lt_supports_bias_gradient"));
}

} // namespace gpu::blas
