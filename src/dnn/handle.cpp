// The cuDNN context: creation that explains CUDNN_STATUS_NOT_INITIALIZED, stream binding.
#include <gpu/detail/expects.hpp>
#include <gpu/dnn/handle.hpp>
#include <gpu/detail/unique_handle.hpp>

#include <optional>
#include <source_location>
#include <stdexcept>

namespace gpu::dnn {

namespace {
void require(const handle& h, const char* operation)
{
    if (!h) {
        gpu::detail::throw_empty_owner(std::string("gpu::dnn::handle::") + operation,
                                       "gpu::dnn::handle", "cuDNN handle");
    }
}
} // namespace

handle::handle(stream_ref stream)
{
    // Made on the stream's device, whatever is current (the guard restores the caller's).
    // cudnnCreate is the first call that can fail: without a driver or GPU it is what fails,
    // with the NOT_INITIALIZED diagnosis.
    device_ = gpu::detail::device_or_unknown(stream);
    const std::optional<scoped_device> on = gpu::detail::scoped_device_or_none(device_);
    cudnnHandle_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreate(&raw));
    reset(raw);
    if (device_ < 0) {
        device_ = gpu::device::current().id();
    }
    GPU_CUDNN_CHECK(cudnnSetStream(raw, stream.get()));
}

gpu::device handle::device() const
{
    require(*this, "device");
    // An adopted handle recorded nothing: cuDNN works on its stream's device.
    return device_ >= 0 ? gpu::detail::device_from_cuda(device_) : stream().device();
}

void handle::set_stream(stream_ref stream)
{
    require(*this, "set_stream");
    if (device_ >= 0) {
        gpu::detail::require_same_device("gpu::dnn::handle::set_stream", "the handle", device_,
                                         "the stream", stream.device().id());
    }
    GPU_CUDNN_CHECK(cudnnSetStream(get(), stream.get()));
}

stream_ref handle::stream() const
{
    require(*this, "stream");
    cudaStream_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnGetStream(get(), &raw));
    return stream_ref(raw);
}

} // namespace gpu::dnn
