// gpu::nn::cross_entropy and gpu::nn::count_correct: argument checks (every size and pointer
// before a launch), the record of bad labels, and the launches (cross_entropy.cu).
#include "memory_tags.hpp"
#include <gpu/detail/expects.hpp>
#include <gpu/device_value.hpp>
#include <gpu/nn/cross_entropy.hpp>
#include <gpu/detail/unique_handle.hpp>

#include "math_kernels.hpp"

#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>

namespace gpu::nn {

namespace {

constexpr std::int64_t int32_max = std::numeric_limits<std::int32_t>::max();
// The record's value when no bad label was met: atomicMin lowers it.
constexpr unsigned long long no_bad_label = std::numeric_limits<unsigned long long>::max();

void check_type(const char* function, element_type type)
{
    GPU_EXPECTS(type == element_type::fp32 || type == element_type::fp16 ||
                    type == element_type::bf16,
                std::invalid_argument, function, ": logits of ", std::string(to_string(type)),
                " (element_type value ", static_cast<int>(type), "); FP32, FP16 or BF16 are taken");
}

// Sizes in [1, INT32_MAX] (labels are int32, rows are indexed in 64 bits), and the logits' bytes
// within the address space.
void check_sizes(const char* function, std::int64_t batch, std::int64_t classes, element_type type)
{
    GPU_EXPECTS(batch >= 1 && batch <= int32_max, std::invalid_argument, function, ": batch ",
                batch, " is not in [1, ", int32_max, "]");
    GPU_EXPECTS(classes >= 1 && classes <= int32_max, std::invalid_argument, function, ": classes ",
                classes, " is not in [1, ", int32_max, "]");
    constexpr auto max_bytes = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
    const auto elements = static_cast<std::uint64_t>(batch) * static_cast<std::uint64_t>(classes);
    GPU_EXPECTS(elements <= max_bytes / element_size(type), std::invalid_argument, function, ": ",
                batch, " x ", classes, " logits of ", std::string(to_string(type)),
                " are more bytes than memory holds");
}

void check_pointers(const char* function, const void* logits, const std::int32_t* labels,
                    const char* out_name, const void* out)
{
    GPU_EXPECTS(logits != nullptr, std::invalid_argument, function, ": null logits");
    GPU_EXPECTS(labels != nullptr, std::invalid_argument, function, ": null labels");
    GPU_EXPECTS(out != nullptr, std::invalid_argument, function, ": null ", out_name);
}

} // namespace

cross_entropy::cross_entropy(std::int64_t classes, element_type logits_type, stream_ref stream)
    : classes_(classes), type_(logits_type)
{
    check_type("gpu::nn::cross_entropy", logits_type);
    GPU_EXPECTS(classes >= 1 && classes <= int32_max, std::invalid_argument,
                "gpu::nn::cross_entropy: classes ", classes, " is not in [1, ", int32_max, "]");
    bad_label_ = device_buffer<unsigned long long>(1, stream, detail::scratch_tag);
    clear_label_error(stream);
}

void cross_entropy::check_call(const char* function, const void* logits, const std::int32_t* labels,
                               std::int64_t batch, const char* out_name, const void* out) const
{
    check_sizes(function, batch, classes_, type_);
    check_pointers(function, logits, labels, out_name, out);
    if (bad_label_.data() == nullptr) {
        gpu::detail::throw_empty_owner(function, "gpu::nn::cross_entropy", "state");
    }
}

void cross_entropy::forward(const void* logits, const std::int32_t* labels, std::int64_t batch,
                            float* loss, stream_ref stream)
{
    check_call("gpu::nn::cross_entropy::forward", logits, labels, batch, "loss", loss);
    GPU_CUDA_CHECK(detail::kernels::cross_entropy_forward(static_cast<int>(type_), logits, labels,
                                                          batch, static_cast<int>(classes_), loss,
                                                          bad_label_.data(), stream.get()));
}

void cross_entropy::backward(const void* logits, const std::int32_t* labels, std::int64_t batch,
                             void* dlogits, const float* scale, stream_ref stream)
{
    check_call("gpu::nn::cross_entropy::backward", logits, labels, batch, "dlogits", dlogits);
    GPU_CUDA_CHECK(detail::kernels::cross_entropy_backward(
        static_cast<int>(type_), logits, labels, batch, static_cast<int>(classes_), dlogits, scale,
        bad_label_.data(), stream.get()));
}

std::optional<bad_label> cross_entropy::first_bad_label(stream_ref stream) const
{
    if (bad_label_.data() == nullptr) {
        gpu::detail::throw_empty_owner("gpu::nn::cross_entropy::first_bad_label",
                                       "gpu::nn::cross_entropy", "state");
    }
    const unsigned long long code = read_device_value(bad_label_.data(), stream);
    if (code == no_bad_label) {
        return std::nullopt;
    }
    return bad_label{
        .row = static_cast<std::int64_t>(code >> 32),
        .label = static_cast<std::int32_t>(static_cast<std::uint32_t>(code & 0xffffffffULL))};
}

void cross_entropy::check_labels(stream_ref stream) const
{
    const std::optional<bad_label> bad = first_bad_label(stream);
    GPU_EXPECTS(!bad, std::invalid_argument, "gpu::nn::cross_entropy: label ", bad->label,
                " in row ", bad->row, " is not a class: labels must be in [0, ", classes_,
                ") (the first bad row; the loss and that row's gradient are NaN)");
}

void cross_entropy::clear_label_error(stream_ref stream)
{
    if (bad_label_.data() == nullptr) {
        gpu::detail::throw_empty_owner("gpu::nn::cross_entropy::clear_label_error",
                                       "gpu::nn::cross_entropy", "state");
    }
    GPU_CUDA_CHECK(
        cudaMemsetAsync(bad_label_.data(), 0xff, sizeof(unsigned long long), stream.get()));
}

void count_correct(const void* logits, element_type logits_type, const std::int32_t* labels,
                   std::int64_t batch, std::int64_t classes, int* correct, stream_ref stream)
{
    constexpr const char* function = "gpu::nn::count_correct";
    check_type(function, logits_type);
    check_sizes(function, batch, classes, logits_type);
    check_pointers(function, logits, labels, "correct", correct);
    GPU_CUDA_CHECK(detail::kernels::count_correct(static_cast<int>(logits_type), logits, labels,
                                                  batch, static_cast<int>(classes), correct,
                                                  stream.get()));
}

} // namespace gpu::nn
