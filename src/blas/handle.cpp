// The cuBLAS handle: creation with actionable errors, stream binding that keeps the shared
// workspace safe, the record of the math and pointer modes that GEMMs read instead of cuBLAS,
// atomics read back from cuBLAS, and profiles.
#include "memory_tags.hpp"

#include <gpu/blas/handle.hpp>
#include <gpu/capture.hpp>
#include <gpu/detail/enum_names.hpp>
#include <gpu/detail/expects.hpp>
#include <gpu/event.hpp>
#include <gpu/detail/unique_handle.hpp>

#include <cublas_v2.h>

#include <optional>

#include <stdexcept>
#include <string>

namespace gpu::blas {

namespace {

cublasMath_t to_cublas(math_mode mode) noexcept
{
    switch (mode) {
    case math_mode::strict_fp32: return CUBLAS_PEDANTIC_MATH;
    case math_mode::tf32: return CUBLAS_TF32_TENSOR_OP_MATH;
    case math_mode::default_math: break;
    }
    return CUBLAS_DEFAULT_MATH;
}

} // namespace

constexpr gpu::detail::enum_name<math_mode> math_mode_names[] = {
    {math_mode::default_math, "default"},
    {math_mode::strict_fp32, "strict FP32"},
    {math_mode::tf32, "TF32"}};
std::string_view to_string(math_mode mode) noexcept
{
    return gpu::detail::name_of(math_mode_names, mode);
}

std::string_view to_string(atomics_mode mode) noexcept
{
    return mode == atomics_mode::forbidden ? "forbidden" : "allowed";
}

handle_options handle_options::from_profile(const gpu::profile& profile)
{
    handle_options options;
    options.math = profile.allow_tf32 ? math_mode::tf32 : math_mode::default_math;
    options.atomics = profile.deterministic ? atomics_mode::forbidden : atomics_mode::allowed;
    options.synchronous_checks = profile.synchronous_checks;
    options.check_numerics = profile.check_numerics;
    return options;
}

namespace detail {
void cublas_handle_deleter::operator()(cublasHandle_t handle) const noexcept
{
    gpu::detail::report_destroy_failure("cublasDestroy", cublasDestroy(handle));
}
} // namespace detail

handle::handle(stream_ref stream, const handle_options& options)
{
    // The handle belongs to its stream's device: made there, whatever is current (the caller's
    // device comes back with the guard). cublasCreate is the first call that can fail: without a
    // driver or GPU it is what fails, with the hint.
    device_ = gpu::detail::device_or_unknown(stream);
    const std::optional<scoped_device> on = gpu::detail::scoped_device_or_none(device_);
    cublasHandle_t raw = nullptr;
    GPU_CUBLAS_CHECK(cublasCreate(&raw));
    handle_.reset(raw);
    if (device_ < 0) {
        device_ = gpu::device::current().id();
    }
    GPU_CUBLAS_CHECK(cublasSetStream(raw, stream.get()));
    stream_ = stream;
    set_math(options.math);
    set_atomics(options.atomics);
    synchronous_checks_ = options.synchronous_checks;
    check_numerics_ = options.check_numerics;
    set_workspace_size(options.workspace_bytes.value_or(
        recommended_workspace_bytes(gpu::device(device_).capability())));
}

handle::handle(const gpu::profile& profile, stream_ref stream)
    : handle(stream, handle_options::from_profile(profile))
{}

handle::handle(adopt_tag, cublasHandle_t raw, stream_ref stream) : handle_(raw), stream_(stream)
{
    if (raw != nullptr) {
        // cuBLAS cannot say a handle's device: it is taken to be the stream's.
        device_ = stream.device().id();
        GPU_CUBLAS_CHECK(cublasSetStream(raw, stream.get()));
        refresh_settings();
    }
}

void handle::refresh_settings()
{
    require_handle("gpu::blas::handle::refresh_settings");
    cublasMath_t math = CUBLAS_DEFAULT_MATH;
    cublasPointerMode_t pointers = CUBLAS_POINTER_MODE_HOST;
    GPU_CUBLAS_CHECK(cublasGetMathMode(handle_.get(), &math));
    GPU_CUBLAS_CHECK(cublasGetPointerMode(handle_.get(), &pointers));
    math_ = math;
    device_pointer_mode_ = pointers != CUBLAS_POINTER_MODE_HOST;
}

handle handle::from_native_handle(cublasHandle_t raw, stream_ref stream)
{
    return handle(adopt_tag{}, raw, stream);
}

cublasHandle_t handle::release() noexcept
{
    if (handle_ && workspace_bytes_) {
        // cublasSetStream puts cuBLAS back on its own workspace pool, so the raw handle does
        // not keep pointing at ours, which is freed with this object.
        static_cast<void>(cublasSetStream(handle_.get(), stream_.get()));
    }
    workspace_bytes_.reset();
    return handle_.release();
}

gpu::device handle::device() const
{
    require_handle("gpu::blas::handle::device");
    return gpu::detail::device_from_cuda(device_);
}

void handle::require_handle(const char* function) const
{
    if (!handle_) {
        gpu::detail::throw_empty_owner(function, "gpu::blas::handle", "cuBLAS handle");
    }
}

void handle::rebind(stream_ref stream)
{
    require_handle("gpu::blas::handle::set_stream");
    gpu::detail::require_same_device("gpu::blas::handle::set_stream", "the handle", device_,
                                     "the stream", stream.device().id());
    if (!workspace_.empty() && stream != stream_) {
        gpu::detail::refuse_joining_a_capture(stream_, stream, "gpu::blas::handle::set_stream");
        // One workspace serves every stream: the new stream waits for what the old one has
        // queued, so cuBLAS never uses the workspace from two streams at once, and the buffer's
        // free moves to the new stream.
        const event done(device(), event_flags::disable_timing);
        done.record(stream_);
        stream.wait(done);
        workspace_.set_stream(stream);
    }
    GPU_CUBLAS_CHECK(cublasSetStream(handle_.get(), stream.get()));
    stream_ = stream;
    // cublasSetStream resets cuBLAS to its default workspace pool: give it ours again.
    attach_workspace();
}

void handle::attach_workspace()
{
    if (workspace_bytes_) {
        GPU_CUBLAS_CHECK(
            cublasSetWorkspace(handle_.get(), workspace_.data(), workspace_.size_bytes()));
    }
}

void handle::set_workspace_size(std::size_t bytes)
{
    require_handle("gpu::blas::handle::set_workspace_size");
    // The old workspace is freed on the bound stream, after the work that may still use it.
    workspace_ = device_buffer<std::byte>(bytes, stream_, detail::cublas_workspace_tag());
    workspace_bytes_ = bytes;
    attach_workspace();
}

void handle::set_math(math_mode mode)
{
    require_handle("gpu::blas::handle::set_math");
    GPU_CUBLAS_CHECK(cublasSetMathMode(handle_.get(), to_cublas(mode)));
    math_ = to_cublas(mode);
}

math_mode handle::math() const
{
    require_handle("gpu::blas::handle::math");
    const cublasMath_t raw = math_;
    const int mode =
        static_cast<int>(raw) & ~static_cast<int>(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION);
    switch (mode) {
    case CUBLAS_DEFAULT_MATH: return math_mode::default_math;
    case CUBLAS_PEDANTIC_MATH: return math_mode::strict_fp32;
    case CUBLAS_TF32_TENSOR_OP_MATH: return math_mode::tf32;
    default:
        throw std::logic_error("gpu::blas::handle::math: cuBLAS's math mode is " +
                               std::to_string(static_cast<int>(raw)) +
                               ", which was set through the raw handle and is none of "
                               "gpu::blas::math_mode (set it with set_math)");
    }
}

void handle::set_atomics(atomics_mode mode)
{
    require_handle("gpu::blas::handle::set_atomics");
    GPU_CUBLAS_CHECK(cublasSetAtomicsMode(handle_.get(), mode == atomics_mode::allowed
                                                             ? CUBLAS_ATOMICS_ALLOWED
                                                             : CUBLAS_ATOMICS_NOT_ALLOWED));
}

atomics_mode handle::atomics() const
{
    require_handle("gpu::blas::handle::atomics");
    cublasAtomicsMode_t raw = CUBLAS_ATOMICS_NOT_ALLOWED;
    GPU_CUBLAS_CHECK(cublasGetAtomicsMode(handle_.get(), &raw));
    return raw == CUBLAS_ATOMICS_ALLOWED ? atomics_mode::allowed : atomics_mode::forbidden;
}

void handle::configure(const gpu::profile& profile)
{
    const handle_options options = handle_options::from_profile(profile);
    set_math(options.math);
    set_atomics(options.atomics);
    synchronous_checks_ = options.synchronous_checks;
    check_numerics_ = options.check_numerics;
}

} // namespace gpu::blas
