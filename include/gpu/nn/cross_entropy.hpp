/// @file cross_entropy.hpp
/// @brief `gpu::nn::cross_entropy`: the classification loss of `torch.nn.CrossEntropyLoss()`
/// (mean over the batch, from logits, class-index targets) with its gradient, and
/// `gpu::nn::count_correct` for the accuracy. Logits in FP32, FP16 or BF16, arithmetic in FP32.
///
/// @code
/// gpu::nn::cross_entropy loss(10, gpu::element_type::fp16, s);    // nn.CrossEntropyLoss()
/// loss.forward(logits, labels, batch, loss_value.data(), s);      // loss = criterion(out, y)
/// // scaler.scale(loss).backward():
/// loss.backward(logits, labels, batch, dlogits, scaler.scale(), s);
/// gpu::nn::count_correct(logits, gpu::element_type::fp16, labels, batch, 10, correct.data(), s);
/// loss.check_labels(s); // once in a while: throws on a label outside [0, 10)
/// @endcode
#pragma once

#include <gpu/device_buffer.hpp>
#include <gpu/element_type.hpp>
#include <gpu/stream.hpp>

#include <cstdint>
#include <optional>

namespace gpu::nn {

/// @brief A label outside [0, classes) that a `cross_entropy` pass met: the first such row.
struct bad_label {
    std::int64_t row = 0;   ///< the row of the batch (the lowest, when several were bad)
    std::int32_t label = 0; ///< its label
};

/// @brief Cross-entropy loss over logits [batch, classes] (row-major, contiguous) and int32
/// class labels, reduced by the mean over the batch: `torch.nn.CrossEntropyLoss()` with its
/// defaults, less `ignore_index` (every label must be a class), class weights and label
/// smoothing. Move-only.
///
/// For each row, loss = logsumexp(x) - x[label], computed stably (the row's maximum is
/// subtracted before `exp`) in FP32 whatever the logits' format; the forward writes the mean. The
/// backward writes dlogits = (softmax(x) - onehot(label)) / batch * scale, in the logits' format,
/// where scale is the grad scaler's device value (`grad_scaler::scale()`) or 1.
///
/// **Labels out of range.** A label is compared with [0, classes) before it is used, so no pass
/// reads outside the logits. Such a row makes the loss NaN (forward) and its gradient row NaN
/// (backward), so that a grad scaler skips the step, and the first such row and its label are
/// recorded on the device. PyTorch raises a device-side assert there, which kills the CUDA
/// context; here `check_labels` (or `first_bad_label`) reads the record when you ask, which
/// synchronises, so a training loop calls it every so often rather than at every step.
///
/// Every pass launches on the stream it is given and never synchronises the host: capturable
/// in a CUDA graph. The forward runs in one thread block, summing the rows in a fixed order
/// (deterministic, no scratch memory): meant for classification heads (up to some thousands of
/// classes and rows), not for vocabulary-sized language-model losses.
class cross_entropy {
public:
    /// @brief A loss over @p classes classes whose logits are of @p logits_type; the record of
    /// bad labels is allocated and cleared on @p stream.
    /// @throws std::invalid_argument when @p classes is not in [1, INT32_MAX] or @p logits_type is
    /// not FP32, FP16 or BF16 (the value is named), before anything is allocated
    /// @throws gpu::cuda_error when CUDA is unavailable
    cross_entropy(std::int64_t classes, element_type logits_type, stream_ref stream);

    /// @brief The number of classes (columns of the logits).
    [[nodiscard]] std::int64_t classes() const noexcept { return classes_; }
    /// @brief The format of the logits and of dlogits.
    [[nodiscard]] element_type logits_type() const noexcept { return type_; }

    /// @brief Writes the mean loss over @p batch rows to the device float @p loss.
    /// @param logits device memory, `batch * classes()` elements of `logits_type()`, row-major
    /// @param labels device memory, @p batch int32 values, each in [0, classes())
    /// @param batch rows, in [1, INT32_MAX]
    /// @param loss device memory, one float (overwritten)
    /// @param stream where the kernel runs
    /// @throws std::invalid_argument for a @p batch out of range, `batch * classes()` beyond what
    /// memory can hold, or a null pointer (each named)
    /// @throws std::logic_error on a moved-from object
    void forward(const void* logits, const std::int32_t* labels, std::int64_t batch, float* loss,
                 stream_ref stream);

    /// @brief Writes the gradient of the mean loss with respect to the logits, times `*scale`.
    /// @param logits as for `forward`
    /// @param labels as for `forward`
    /// @param batch as for `forward`
    /// @param dlogits device memory, `batch * classes()` elements of `logits_type()`; may be
    /// @p logits itself (each row is read before it is overwritten)
    /// @param scale a device float to multiply the gradient by (the loss scale), or null for 1
    /// @param stream where the kernel runs
    /// @throws std::invalid_argument as for `forward`
    /// @throws std::logic_error on a moved-from object
    void backward(const void* logits, const std::int32_t* labels, std::int64_t batch, void* dlogits,
                  const float* scale, stream_ref stream);

    /// @brief The first bad label recorded since construction or `clear_label_error`, read from
    /// the device after the work queued on @p stream (synchronises it).
    /// @throws std::logic_error on a moved-from object
    [[nodiscard]] std::optional<bad_label> first_bad_label(stream_ref stream) const;

    /// @brief Throws when a bad label was recorded (see `first_bad_label`; synchronises).
    /// @throws std::invalid_argument naming the row, the label and the class count
    /// @throws std::logic_error on a moved-from object
    void check_labels(stream_ref stream) const;

    /// @brief Forgets the recorded bad label, on @p stream. Capturable.
    /// @throws std::logic_error on a moved-from object
    void clear_label_error(stream_ref stream);

    /// @brief Moving leaves the source empty: its passes then throw std::logic_error.
    cross_entropy(cross_entropy&& other) noexcept = default;
    /// @brief Frees this object's record and takes @p other's.
    cross_entropy& operator=(cross_entropy&& other) noexcept = default;
    cross_entropy(const cross_entropy&) = delete;
    cross_entropy& operator=(const cross_entropy&) = delete;
    /// @brief Frees the record on its stream.
    ~cross_entropy() = default;

private:
    void check_call(const char* function, const void* logits, const std::int32_t* labels,
                    std::int64_t batch, const char* out_name, const void* out) const;

    std::int64_t classes_;
    element_type type_;
    device_buffer<unsigned long long> bad_label_; // (row << 32 | label) of the first bad row
};

/// @brief Adds to the device int @p correct the number of rows of @p logits whose largest
/// logit is at the row's label (`(logits.argmax(1) == labels).sum()`), for the accuracy.
///
/// Ties go to the lowest index, as `torch.argmax`; a NaN logit never wins (torch.argmax would
/// pick it), so a row of NaN counts as wrong, as does a label outside [0, classes) (never read
/// as an index). Integer atomics: the count is exact and deterministic. Capturable.
/// @param logits device memory, `batch * classes` elements of @p logits_type, row-major
/// @param logits_type FP32, FP16 or BF16
/// @param labels device memory, @p batch int32 values
/// @param batch rows, in [1, INT32_MAX]
/// @param classes columns, in [1, INT32_MAX]
/// @param correct a device int, accumulated (zero it to start a count)
/// @param stream where the kernel runs
/// @throws std::invalid_argument for a size out of range, a type other than FP32, FP16 and BF16,
/// or a null pointer (each named)
/// @throws gpu::cuda_error when the kernel cannot be launched
void count_correct(const void* logits, element_type logits_type, const std::int32_t* labels,
                   std::int64_t batch, std::int64_t classes, int* correct, stream_ref stream);

} // namespace gpu::nn
