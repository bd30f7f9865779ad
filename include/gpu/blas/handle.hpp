/// @file handle.hpp
/// @brief `gpu::blas::handle`: an owning cuBLAS handle with its stream, math mode, atomics
/// policy, its own stream-ordered workspace, and the checks a `gpu::profile` asks for.
///
/// @code
/// gpu::stream stream(gpu::stream_flags::non_blocking);
/// gpu::blas::handle blas(stream, {.math = gpu::blas::math_mode::tf32});
/// gpu::blas::gemm(blas, a, b, c);                      // runs on `stream`
/// gpu::blas::handle debug(gpu::profile::development(), stream); // synchronous and NaN/Inf checks
/// @endcode
///
/// A cuBLAS handle is not thread-safe: use one handle per host thread (as cuBLAS and PyTorch
/// do). It belongs to the device that was current when it was created.
#pragma once

#include <gpu/blas/error.hpp>
#include <gpu/detail/unique_handle.hpp>
#include <gpu/device.hpp>
#include <gpu/device_buffer.hpp>
#include <gpu/profile.hpp>
#include <gpu/stream.hpp>

#include <cublas_api.h>

#include <cstddef>
#include <optional>
#include <string_view>

namespace gpu::blas {

/// @brief How cuBLAS may compute: the handle's math mode (`cublasSetMathMode`), which also
/// picks the compute type of each `gemm`.
enum class math_mode {
    /// cuBLAS's default (`CUBLAS_DEFAULT_MATH`): FP32 data is computed in FP32 (no TF32), FP16
    /// and BF16 data run on tensor cores with FP32 accumulation. PyTorch with `allow_tf32 = False`.
    default_math,
    /// The prescribed precision in every phase, no shortcuts (`CUBLAS_PEDANTIC_MATH` and the
    /// `_PEDANTIC` compute types): for numerical comparisons against a CPU reference. May be
    /// slower.
    strict_fp32,
    /// FP32 data may be rounded to TF32 (10-bit mantissa) and run on tensor cores
    /// (`CUBLAS_TF32_TENSOR_OP_MATH`, compute type `CUBLAS_COMPUTE_32F_FAST_TF32`): about 8x
    /// FP32's throughput on Ampere and newer, relative error around 1e-3. PyTorch with
    /// `torch.backends.cuda.matmul.allow_tf32 = True`. Before Ampere it runs as FP32.
    tf32,
};

/// @brief `default`, `strict FP32` or `TF32`.
[[nodiscard]] std::string_view to_string(math_mode mode) noexcept;

/// @brief Whether cuBLAS routines may use atomics (`cublasSetAtomicsMode`).
enum class atomics_mode {
    /// No atomics (cuBLAS's default): results are bitwise reproducible from run to run on the
    /// same GPU model, cuBLAS version and workspace size.
    forbidden,
    /// Routines that have a faster implementation with atomics may use it; results may then
    /// differ in the last bits from run to run.
    allowed,
};

/// @brief `forbidden` or `allowed`.
[[nodiscard]] std::string_view to_string(atomics_mode mode) noexcept;

/// @brief The workspace NVIDIA recommends for cuBLAS on a GPU (`cublasSetWorkspace`): 32 MiB on
/// Hopper (9.0) and newer, 4 MiB before.
[[nodiscard]] constexpr std::size_t
recommended_workspace_bytes(compute_capability capability) noexcept
{
    return capability.major >= 9 ? std::size_t{32} << 20 : std::size_t{4} << 20;
}

/// @brief How a new `handle` is set up; every field can be changed later on the handle.
struct handle_options {
    math_mode math = math_mode::default_math;       ///< see `math_mode`
    atomics_mode atomics = atomics_mode::forbidden; ///< see `atomics_mode`
    /// Workspace size in bytes; empty means `recommended_workspace_bytes` for the device, 0
    /// means none. cuBLAS then avoids algorithms that need one, but its documentation warns
    /// that too small a workspace can make some routines fail with `CUBLAS_STATUS_ALLOC_FAILED`
    /// (16 KiB or more prevents that) and can cost speed.
    std::optional<std::size_t> workspace_bytes{};
    /// Synchronise the stream after every cudagap call on this handle and report a failure
    /// there (the `CUDA_LAUNCH_BLOCKING=1` idea). Slow; for debugging.
    bool synchronous_checks = false;
    /// Check every output for NaN and Inf (`gpu::blas::check_finite`) and throw
    /// `gpu::numerics_error` naming the operation and the counts. Slow (synchronises); for
    /// debugging.
    bool check_numerics = false;

    /// @brief The options a profile asks for: `allow_tf32` gives `math_mode::tf32` (else
    /// `default_math`); `deterministic` forbids atomics (else allows them); `synchronous_checks`
    /// and `check_numerics` carry over; the workspace is the recommended one.
    [[nodiscard]] static handle_options from_profile(const gpu::profile& profile);
};

class handle;

namespace detail {
/// @brief Destroys a cuBLAS handle; failures are reported, never thrown.
struct cublas_handle_deleter {
    void operator()(cublasHandle_t handle) const noexcept;
};
struct gemm_call;
/// @brief Runs one GEMM on @p h (defined with `gemm`; declared here to read the handle's record
/// of its settings).
void run_gemm(handle& h, const gemm_call& call, const char* function);
} // namespace detail

/// @brief An owning cuBLAS handle for the device of the stream it was made with.
/// Move-only; one per host thread.
///
/// The handle owns its workspace (a stream-ordered `gpu::device_buffer`), so that memory is
/// counted, comes from the pool, and is freed in stream order. The workspace is shared by every
/// stream the handle runs on: when the handle moves to another stream, that stream first waits
/// for the work queued on the previous one, so the workspace is never used by two streams at
/// once (for GEMMs that overlap on several streams, use one handle per stream). The handle must
/// be destroyed before the stream it is bound to (or be bound to another one first), like a
/// `device_buffer`.
///
/// The handle records cuBLAS's math mode and pointer mode itself, so that a GEMM makes no cuBLAS
/// call but the GEMM: the record is set at construction, by `set_math`, and read from cuBLAS
/// when a raw handle is adopted (`from_native_handle`) or when `refresh_settings` is called.
/// Changing either mode through `get()` (`cublasSetMathMode`, `cublasSetPointerMode`) is
/// therefore not seen by later calls until `refresh_settings()`: call it after such a change.
class handle {
public:
    /// @brief Creates a cuBLAS handle bound to @p stream, set up as @p options say. The stream
    /// is required: the handle's GEMMs and its workspace are stream-ordered work there.
    /// @throws gpu::blas::blas_error from `cublasCreate` when no driver or GPU is usable (the hint
    /// says why) or the device is out of memory (with free and total memory)
    /// @throws gpu::out_of_memory when the workspace cannot be allocated
    explicit handle(stream_ref stream, const handle_options& options = {});

    /// @brief Creates a handle bound to @p stream, set up as @p profile asks
    /// (`handle_options::from_profile`).
    /// @throws gpu::blas::blas_error as the other constructor
    explicit handle(const gpu::profile& profile, stream_ref stream);

    /// @brief Adopts a cuBLAS handle created elsewhere and binds it to @p stream; it will be
    /// destroyed with this object. Its settings are left as they are (its math and pointer modes
    /// are read once, as by `refresh_settings`) and cuBLAS keeps managing its workspace (until
    /// `set_workspace_size` gives it one of ours).
    /// @throws gpu::blas::blas_error when the modes cannot be read
    [[nodiscard]] static handle from_native_handle(cublasHandle_t raw, stream_ref stream);

    /// @brief The raw handle, still owned (null after a move), for calling cuBLAS directly.
    /// After changing its math mode or pointer mode through it, call `refresh_settings()`.
    [[nodiscard]] cublasHandle_t get() const noexcept { return handle_.get(); }

    /// @brief Reads the math mode and the pointer mode back from cuBLAS into the handle's record
    /// (`cublasGetMathMode`, `cublasGetPointerMode`), after they were changed through `get()`.
    /// Later calls use what it read; a GEMM in device pointer mode is then refused.
    /// @throws std::logic_error on a moved-from handle
    /// @throws gpu::blas_error when cuBLAS cannot answer
    void refresh_settings();

    /// @brief Gives up ownership. cuBLAS's own workspace is restored first (ours is freed with
    /// this object), so the raw handle stays usable.
    /// @post this object is in the moved-from state.
    [[nodiscard]] cublasHandle_t release() noexcept;

    /// @brief The device the handle belongs to: its stream's when it was made (or adopted),
    /// recorded. The handle was created with that device current, and `set_stream` refuses a
    /// stream of another device.
    /// @throws std::logic_error on a moved-from handle
    [[nodiscard]] gpu::device device() const;

    /// @brief Binds @p stream: later calls run on it. Cheap when it is already bound.
    /// @throws std::logic_error on a moved-from handle
    void set_stream(stream_ref stream)
    {
        if (stream != stream_ || !handle_) {
            rebind(stream);
        }
    }

    /// @brief The stream calls run on.
    [[nodiscard]] stream_ref stream() const noexcept { return stream_; }

    /// @brief Sets the math mode (see `math_mode`) in cuBLAS and in the handle's record.
    void set_math(math_mode mode);

    /// @brief The math mode of the handle's record (what `gemm` computes with); no cuBLAS call.
    /// @throws std::logic_error on a moved-from handle, or when the mode read from cuBLAS (by
    /// `from_native_handle` or `refresh_settings`) is none of `math_mode`
    [[nodiscard]] math_mode math() const;

    /// @brief Sets the atomics policy (see `atomics_mode`).
    void set_atomics(atomics_mode mode);

    /// @brief The atomics policy, read back from cuBLAS (`cublasGetAtomicsMode`).
    [[nodiscard]] atomics_mode atomics() const;

    /// @brief Replaces the workspace by one of @p bytes (0: none), allocated on the bound stream.
    /// @throws gpu::out_of_memory when it cannot be allocated
    void set_workspace_size(std::size_t bytes);

    /// @brief The size of the workspace this handle gave cuBLAS, in bytes; empty when cuBLAS
    /// manages its own (an adopted handle).
    [[nodiscard]] std::optional<std::size_t> workspace_size() const noexcept
    {
        return workspace_bytes_;
    }

    /// @brief Turns synchronisation and error checks after every call on or off.
    void set_synchronous_checks(bool on) noexcept { synchronous_checks_ = on; }
    /// @brief Whether every call synchronises and checks (see `handle_options`).
    [[nodiscard]] bool synchronous_checks() const noexcept { return synchronous_checks_; }

    /// @brief Turns NaN/Inf checks of every output on or off.
    void set_check_numerics(bool on) noexcept { check_numerics_ = on; }
    /// @brief Whether every output is checked for NaN and Inf (see `handle_options`).
    [[nodiscard]] bool check_numerics() const noexcept { return check_numerics_; }

    /// @brief Applies what @p profile asks for (math mode, atomics, checks; see
    /// `handle_options::from_profile`), keeping the stream and the workspace.
    void configure(const gpu::profile& profile);

    /// @brief Moving leaves the source without a handle.
    /// @post `other.get() == nullptr`
    handle(handle&& other) noexcept = default;
    /// @brief Destroys the owned handle and takes @p other's.
    /// @post `other.get() == nullptr`
    handle& operator=(handle&& other) noexcept = default;
    handle(const handle&) = delete;
    handle& operator=(const handle&) = delete;
    /// @brief Destroys the handle (`cublasDestroy`) and frees the workspace on its stream.
    ~handle() = default;

private:
    friend void detail::run_gemm(handle& h, const detail::gemm_call& call, const char* function);

    struct adopt_tag {};
    handle(adopt_tag, cublasHandle_t raw, stream_ref stream);

    void rebind(stream_ref stream);
    void attach_workspace();
    void require_handle(const char* function) const;

    // The workspace is declared first so that it is destroyed after the cuBLAS handle.
    device_buffer<std::byte> workspace_;
    gpu::detail::unique_handle<cublasHandle_t, detail::cublas_handle_deleter> handle_;
    stream_ref stream_ = legacy_default_stream; // every constructor binds the caller's stream
    std::optional<std::size_t> workspace_bytes_;
    int device_ = -1;
    bool synchronous_checks_ = false;
    bool check_numerics_ = false;
    // The record of cuBLAS's modes (see the class comment). A new cuBLAS handle starts in
    // CUBLAS_DEFAULT_MATH and host pointer mode.
    cublasMath_t math_ = CUBLAS_DEFAULT_MATH;
    bool device_pointer_mode_ = false;
};

} // namespace gpu::blas
