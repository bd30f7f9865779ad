// The cuDNN context: creation with the article's NOT_INITIALIZED diagnosis, stream binding.
#include <gpu/detail/expects.hpp>
#include <gpu/dnn/handle.hpp>

#include <source_location>
#include <stdexcept>

namespace gpu::dnn {

namespace {
void require(const handle& h, const char* operation)
{
    GPU_EXPECTS(h, std::logic_error, "gpu::dnn::handle::", operation,
                ": the handle holds nothing (moved from or released)");
}
} // namespace

handle::handle(stream_ref stream)
{
    cudnnHandle_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreate(&raw));
    handle_.reset(raw);
    GPU_CUDNN_CHECK(cudnnSetStream(raw, stream.get()));
}

void handle::set_stream(stream_ref stream)
{
    require(*this, "set_stream");
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
