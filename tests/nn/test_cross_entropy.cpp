// gpu/nn/cross_entropy.hpp. On the host: every check of the constructor and of count_correct
// (before any launch). On a GPU: forward and backward against a float64 reference and against
// central finite differences, the loss scale, FP16 and BF16 logits, bad labels (no read out of
// bounds, NaN, the record), in-place backward, determinism, and count_correct (a row of NaN is
// wrong whatever its label; its rule is also checked on the host in test_update_rules.cpp).
#include <gpu/memory.hpp>
#include <gpu/nn/cross_entropy.hpp>
#include <gpu/stream.hpp>

#include "catch.hpp"

#include "test_support.hpp"
#include <element_cast.hpp>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <vector>

using Catch::Matchers::ContainsSubstring;
using gpu::element_type;
using gpu::nn::cross_entropy;

TEST_CASE("cross_entropy refuses bad classes and logits types before allocating",
          "[nn][cross_entropy]")
{
    const gpu::stream_ref none =
        gpu::legacy_default_stream; // nothing reaches it: the checks come first
    CHECK_THROWS_WITH(cross_entropy(0, element_type::fp32, none),
                      ContainsSubstring("classes 0 is not in [1, 2147483647]"));
    CHECK_THROWS_WITH(cross_entropy(-3, element_type::fp16, none), ContainsSubstring("classes -3"));
    CHECK_THROWS_WITH(cross_entropy(std::int64_t{1} << 31, element_type::bf16, none),
                      ContainsSubstring("classes 2147483648"));
    CHECK_THROWS_WITH(cross_entropy(10, element_type::fp64, none),
                      ContainsSubstring("logits of FP64") &&
                          ContainsSubstring("FP32, FP16 or BF16"));
    CHECK_THROWS_AS(cross_entropy(10, static_cast<element_type>(9), none), std::invalid_argument);
}

TEST_CASE("count_correct checks sizes, types and pointers before any launch", "[nn][cross_entropy]")
{
    const gpu::stream_ref none = gpu::legacy_default_stream;
    // Never dereferenced: every call below is refused on the host.
    const auto* logits = reinterpret_cast<const void*>(std::uintptr_t{0x1000});
    const auto* labels = reinterpret_cast<const std::int32_t*>(std::uintptr_t{0x2000});
    auto* correct = reinterpret_cast<int*>(std::uintptr_t{0x3000});
    CHECK_THROWS_WITH(
        gpu::nn::count_correct(logits, element_type::fp32, labels, 0, 10, correct, none),
        ContainsSubstring("batch 0 is not in [1, 2147483647]"));
    CHECK_THROWS_WITH(
        gpu::nn::count_correct(logits, element_type::fp32, labels, 8, 0, correct, none),
        ContainsSubstring("classes 0"));
    CHECK_THROWS_WITH(gpu::nn::count_correct(logits, element_type::fp32, labels,
                                             std::int64_t{1} << 31, 10, correct, none),
                      ContainsSubstring("batch 2147483648"));
    CHECK_THROWS_WITH(gpu::nn::count_correct(logits, element_type::fp32, labels, 2147483647,
                                             2147483647, correct, none),
                      ContainsSubstring("more bytes than memory holds"));
    CHECK_THROWS_WITH(
        gpu::nn::count_correct(logits, element_type::fp64, labels, 8, 10, correct, none),
        ContainsSubstring("logits of FP64"));
    CHECK_THROWS_WITH(
        gpu::nn::count_correct(nullptr, element_type::fp16, labels, 8, 10, correct, none),
        ContainsSubstring("null logits"));
    CHECK_THROWS_WITH(
        gpu::nn::count_correct(logits, element_type::fp16, nullptr, 8, 10, correct, none),
        ContainsSubstring("null labels"));
    CHECK_THROWS_WITH(
        gpu::nn::count_correct(logits, element_type::bf16, labels, 8, 10, nullptr, none),
        ContainsSubstring("null correct"));
}

namespace {

// The float64 reference of nn.CrossEntropyLoss() (mean) and its gradient, from the definition.
double reference_loss(const std::vector<double>& x, const std::vector<std::int32_t>& labels,
                      int classes)
{
    const std::size_t batch = labels.size();
    double total = 0.0;
    for (std::size_t r = 0; r < batch; ++r) {
        const double* row = x.data() + r * classes;
        double sum = 0.0;
        for (int j = 0; j < classes; ++j) {
            sum += std::exp(row[j]);
        }
        total += std::log(sum) - row[labels[r]];
    }
    return total / static_cast<double>(batch);
}

std::vector<double> reference_gradient(const std::vector<double>& x,
                                       const std::vector<std::int32_t>& labels, int classes,
                                       double scale)
{
    const std::size_t batch = labels.size();
    std::vector<double> g(x.size());
    for (std::size_t r = 0; r < batch; ++r) {
        const double* row = x.data() + r * classes;
        double sum = 0.0;
        for (int j = 0; j < classes; ++j) {
            sum += std::exp(row[j]);
        }
        for (int j = 0; j < classes; ++j) {
            const double p = std::exp(row[j]) / sum;
            g[r * classes + j] =
                (p - (j == labels[r] ? 1.0 : 0.0)) / static_cast<double>(batch) * scale;
        }
    }
    return g;
}

// Logits spread over [-8, 8): large enough that a naive exp-sum would lose accuracy in FP16.
std::vector<float> logits_for(std::size_t n, std::uint32_t seed)
{
    std::vector<float> x = gpu::test::random_floats(n, seed);
    for (float& v : x) {
        v *= 8.0F;
    }
    return x;
}

std::vector<std::int32_t> labels_for(std::size_t batch, int classes, std::uint32_t seed)
{
    std::vector<std::int32_t> labels(batch);
    for (std::size_t r = 0; r < batch; ++r) {
        labels[r] = static_cast<std::int32_t>((r * 7 + seed) % static_cast<std::size_t>(classes));
    }
    return labels;
}

float read_float(const gpu::device_buffer<float>& value)
{
    return value.to_host().at(0);
}

// Runs forward and backward on FP32 logits; returns the loss and the gradient.
struct pass_result {
    float loss;
    std::vector<float> grad;
};

pass_result run_fp32(const std::vector<float>& x, const std::vector<std::int32_t>& labels,
                     int classes, const float* scale, gpu::stream_ref s)
{
    cross_entropy loss(classes, element_type::fp32, s);
    const auto batch = static_cast<std::int64_t>(labels.size());
    auto logits = gpu::device_buffer<float>::from_host(x, s);
    auto y = gpu::device_buffer<std::int32_t>::from_host(labels, s);
    auto out = gpu::device_buffer<float>::from_host(gpu::test::poisoned(1), s);
    auto grad = gpu::device_buffer<float>::from_host(gpu::test::poisoned(x.size()), s);
    loss.forward(logits.data(), y.data(), batch, out.data(), s);
    loss.backward(logits.data(), y.data(), batch, grad.data(), scale, s);
    loss.check_labels(s);
    return {read_float(out), grad.to_host()};
}

} // namespace

TEST_CASE("FP32 forward and backward match the float64 reference", "[nn][cross_entropy][gpu]")
{
    gpu::stream s;
    // 10 classes (fewer than a warp's lanes) and 1000 (several passes per lane); 37 rows: not a
    // multiple of the rows per block.
    for (const int classes : {10, 1000}) {
        const std::size_t batch = 37;
        const std::vector<float> x = logits_for(batch * classes, 1 + classes);
        const std::vector<std::int32_t> labels = labels_for(batch, classes, 3);
        const pass_result r = run_fp32(x, labels, classes, nullptr, s);
        const std::vector<double> exact = gpu::test::widened(x);
        const double expected = reference_loss(exact, labels, classes);
        CHECK(std::abs(r.loss - expected) / expected < 1e-5);
        CHECK(gpu::test::relative_error<float>(
                  r.grad, reference_gradient(exact, labels, classes, 1.0)) < 1e-5);
    }
}

TEST_CASE("the backward pass agrees with central finite differences of the loss",
          "[nn][cross_entropy][gpu]")
{
    gpu::stream s;
    const int classes = 5;
    const std::size_t batch = 4;
    const std::vector<float> x = logits_for(batch * classes, 17);
    const std::vector<std::int32_t> labels = labels_for(batch, classes, 1);
    const pass_result r = run_fp32(x, labels, classes, nullptr, s);

    // Of the float64 loss, tightly; of the kernel's own FP32 forward, as closely as FP32 allows.
    std::vector<double> fd64(x.size());
    std::vector<double> fd32(x.size());
    for (std::size_t i = 0; i < x.size(); ++i) {
        std::vector<double> up = gpu::test::widened(x);
        std::vector<double> down = gpu::test::widened(x);
        const double h64 = 1e-5;
        up[i] += h64;
        down[i] -= h64;
        fd64[i] = (reference_loss(up, labels, classes) - reference_loss(down, labels, classes)) /
                  (2 * h64);

        const float h32 = 1e-2F;
        std::vector<float> up32 = x;
        std::vector<float> down32 = x;
        up32[i] += h32;
        down32[i] -= h32;
        const double plus = run_fp32(up32, labels, classes, nullptr, s).loss;
        const double minus = run_fp32(down32, labels, classes, nullptr, s).loss;
        fd32[i] = (plus - minus) / (static_cast<double>(up32[i]) - static_cast<double>(down32[i]));
    }
    CHECK(gpu::test::relative_error<float>(r.grad, fd64) < 1e-5);
    CHECK(gpu::test::relative_error<float>(r.grad, fd32) < 1e-2);
}

TEST_CASE("the loss scale multiplies the gradient, not the loss", "[nn][cross_entropy][gpu]")
{
    gpu::stream s;
    const int classes = 10;
    const std::vector<float> x = logits_for(64 * classes, 5);
    const std::vector<std::int32_t> labels = labels_for(64, classes, 2);
    auto scale = gpu::device_buffer<float>::from_host(std::vector<float>{65536.0F}, s);
    const pass_result plain = run_fp32(x, labels, classes, nullptr, s);
    const pass_result scaled = run_fp32(x, labels, classes, scale.data(), s);
    CHECK(scaled.loss == plain.loss);
    bool exact = true; // a power of two: exactly 65536 times
    for (std::size_t i = 0; i < x.size(); ++i) {
        exact = exact && scaled.grad[i] == plain.grad[i] * 65536.0F;
    }
    CHECK(exact);
}

namespace {

template <class Half>
void check_half_precision(element_type type)
{
    gpu::stream s;
    const int classes = 10;
    const std::size_t batch = 128;
    const std::vector<Half> x = gpu::test::narrowed<Half>(logits_for(batch * classes, 23));
    const std::vector<std::int32_t> labels = labels_for(batch, classes, 4);
    cross_entropy loss(classes, type, s);
    auto logits = gpu::device_buffer<Half>::from_host(x, s);
    auto y = gpu::device_buffer<std::int32_t>::from_host(labels, s);
    auto out = gpu::device_buffer<float>::from_host(gpu::test::poisoned(1), s);
    gpu::device_buffer<Half> grad(x.size(), s);
    auto scale = gpu::device_buffer<float>::from_host(std::vector<float>{1024.0F}, s);
    loss.forward(logits.data(), y.data(), static_cast<std::int64_t>(batch), out.data(), s);
    loss.backward(logits.data(), y.data(), static_cast<std::int64_t>(batch), grad.data(),
                  scale.data(), s);

    // Against the reference of the logits as they are in memory (computed in FP32 on the device).
    const std::vector<double> exact = gpu::test::widened(x);
    const double expected = reference_loss(exact, labels, classes);
    CHECK(std::abs(read_float(out) - expected) / expected < 1e-5);
    CHECK(gpu::test::relative_error<double>(gpu::test::widened(grad.to_host()),
                                            reference_gradient(exact, labels, classes, 1024.0)) <
          1e-2);
}

} // namespace

TEST_CASE("FP16 and BF16 logits are read and written in their format, computed in FP32",
          "[nn][cross_entropy][gpu]")
{
    check_half_precision<__half>(element_type::fp16);
    check_half_precision<__nv_bfloat16>(element_type::bf16);
}

TEST_CASE("a label out of range is never an index: NaN, the record, and the check",
          "[nn][cross_entropy][gpu]")
{
    gpu::stream s;
    const int classes = 10;
    const std::size_t batch = 9;
    const std::vector<float> x = logits_for(batch * classes, 31);
    std::vector<std::int32_t> labels = labels_for(batch, classes, 5);
    labels[7] = -1;
    labels[3] = 10; // the first bad row
    cross_entropy loss(classes, element_type::fp32, s);
    CHECK_FALSE(loss.first_bad_label(s).has_value());
    auto logits = gpu::device_buffer<float>::from_host(x, s);
    auto y = gpu::device_buffer<std::int32_t>::from_host(labels, s);
    auto out = gpu::device_buffer<float>(1, s);
    auto grad = gpu::device_buffer<float>::from_host(gpu::test::poisoned(x.size()), s);
    loss.forward(logits.data(), y.data(), static_cast<std::int64_t>(batch), out.data(), s);
    CHECK(std::isnan(read_float(out)));
    loss.backward(logits.data(), y.data(), static_cast<std::int64_t>(batch), grad.data(), nullptr,
                  s);
    const std::vector<float> g = grad.to_host();
    for (std::size_t r = 0; r < batch; ++r) {
        const bool bad_row = r == 3 || r == 7;
        for (int j = 0; j < classes; ++j) {
            CHECK(std::isnan(g[r * classes + j]) == bad_row);
        }
    }
    const std::optional<gpu::nn::bad_label> bad = loss.first_bad_label(s);
    REQUIRE(bad.has_value());
    CHECK(bad->row == 3);
    CHECK(bad->label == 10);
    CHECK_THROWS_AS(loss.check_labels(s), std::invalid_argument);
    CHECK_THROWS_WITH(loss.check_labels(s),
                      ContainsSubstring("label 10 in row 3") && ContainsSubstring("[0, 10)"));
    loss.clear_label_error(s);
    CHECK_FALSE(loss.first_bad_label(s).has_value());

    // Only the negative one left: recorded with its sign.
    labels[3] = 2;
    y.copy_from_host(labels);
    loss.forward(logits.data(), y.data(), static_cast<std::int64_t>(batch), out.data(), s);
    CHECK(loss.first_bad_label(s)->label == -1);
    CHECK(loss.first_bad_label(s)->row == 7);
}

TEST_CASE("backward may overwrite the logits, and the forward is deterministic",
          "[nn][cross_entropy][gpu]")
{
    gpu::stream s;
    const int classes = 100;
    const std::size_t batch = 333;
    const std::vector<float> x = logits_for(batch * classes, 41);
    const std::vector<std::int32_t> labels = labels_for(batch, classes, 6);
    const pass_result separate = run_fp32(x, labels, classes, nullptr, s);

    cross_entropy loss(classes, element_type::fp32, s);
    auto logits = gpu::device_buffer<float>::from_host(x, s);
    auto y = gpu::device_buffer<std::int32_t>::from_host(labels, s);
    auto out = gpu::device_buffer<float>(1, s);
    std::vector<float> losses;
    for (int run = 0; run < 5; ++run) {
        loss.forward(logits.data(), y.data(), static_cast<std::int64_t>(batch), out.data(), s);
        losses.push_back(read_float(out));
    }
    CHECK(std::all_of(losses.begin(), losses.end(), [&](float v) { return v == losses.front(); }));
    CHECK(losses.front() == separate.loss);
    loss.backward(logits.data(), y.data(), static_cast<std::int64_t>(batch), logits.data(), nullptr,
                  s);
    CHECK(logits.to_host() == separate.grad);
}

TEST_CASE("a live loss checks its passes' arguments", "[nn][cross_entropy][gpu]")
{
    gpu::stream s;
    cross_entropy loss(10, element_type::fp16, s);
    CHECK(loss.classes() == 10);
    CHECK(loss.logits_type() == element_type::fp16);
    gpu::device_buffer<float> buffer(100, s);
    gpu::device_buffer<std::int32_t> labels(10, s);
    CHECK_THROWS_WITH(loss.forward(buffer.data(), labels.data(), 0, buffer.data(), s),
                      ContainsSubstring("batch 0"));
    CHECK_THROWS_WITH(loss.forward(nullptr, labels.data(), 10, buffer.data(), s),
                      ContainsSubstring("null logits"));
    CHECK_THROWS_WITH(loss.forward(buffer.data(), nullptr, 10, buffer.data(), s),
                      ContainsSubstring("null labels"));
    CHECK_THROWS_WITH(loss.forward(buffer.data(), labels.data(), 10, nullptr, s),
                      ContainsSubstring("null loss"));
    CHECK_THROWS_WITH(loss.backward(buffer.data(), labels.data(), 10, nullptr, nullptr, s),
                      ContainsSubstring("null dlogits"));
    cross_entropy taken = std::move(loss);
    // NOLINTNEXTLINE(bugprone-use-after-move): the moved-from state is what is tested
    CHECK_THROWS_WITH(loss.forward(buffer.data(), labels.data(), 10, buffer.data(), s),
                      ContainsSubstring("moved from"));
    CHECK_THROWS_AS(loss.first_bad_label(s), std::logic_error);
}

TEST_CASE("count_correct counts argmax hits, first maximum on ties, NaN never winning",
          "[nn][cross_entropy][gpu]")
{
    gpu::stream s;
    const int classes = 4;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> x{
        0.1F,  0.9F,  0.3F,  0.2F,  // argmax 1
        0.5F,  0.5F,  0.1F,  0.0F,  // tie: 0
        nan,   0.2F,  0.7F,  0.1F,  // NaN skipped: 2
        nan,   nan,   nan,   nan,   // no winner
        -1.0F, -2.0F, -0.5F, -3.0F, // argmax 2
        1.0F,  0.0F,  0.0F,  0.0F,  // argmax 0, label out of range
    };
    const std::vector<std::int32_t> labels{1, 1, 2, 0, 2, 9};
    auto logits = gpu::device_buffer<float>::from_host(x, s);
    auto y = gpu::device_buffer<std::int32_t>::from_host(labels, s);
    auto correct = gpu::device_buffer<int>::from_host(std::vector<int>{0}, s);
    gpu::nn::count_correct(logits.data(), element_type::fp32, y.data(), 6, classes, correct.data(),
                           s);
    CHECK(correct.to_host()[0] == 3); // rows 0, 2 and 4
    gpu::nn::count_correct(logits.data(), element_type::fp32, y.data(), 6, classes, correct.data(),
                           s);
    CHECK(correct.to_host()[0] == 6); // accumulated

    // Many rows and FP16: against a host argmax.
    const std::size_t batch = 5000;
    const int wide = 37;
    const std::vector<float> big = logits_for(batch * wide, 51);
    const std::vector<std::int32_t> big_labels = labels_for(batch, wide, 7);
    const std::vector<__half> half = gpu::test::narrowed<__half>(big);
    const std::vector<double> exact = gpu::test::widened(half);
    int expected = 0;
    for (std::size_t r = 0; r < batch; ++r) {
        const auto first = exact.begin() + static_cast<std::ptrdiff_t>(r * wide);
        expected += (std::max_element(first, first + wide) - first) == big_labels[r] ? 1 : 0;
    }
    REQUIRE(expected > 0);
    auto half_logits = gpu::device_buffer<__half>::from_host(half, s);
    auto half_labels = gpu::device_buffer<std::int32_t>::from_host(big_labels, s);
    correct.fill_zero();
    gpu::nn::count_correct(half_logits.data(), element_type::fp16, half_labels.data(), batch, wide,
                           correct.data(), s);
    CHECK(correct.to_host()[0] == expected);
}

TEST_CASE("count_correct counts a row of NaN as wrong, even with the label INT32_MAX",
          "[nn][cross_entropy][gpu]")
{
    // The kernel's argmax starts at INT32_MAX and NaN never replaces it: without the label's
    // range check, that row matched its label.
    gpu::stream s;
    const int classes = 5;
    const float nan = std::numeric_limits<float>::quiet_NaN();
    std::vector<float> x(3 * classes, nan);
    x[2 * classes + 3] = 1.0F; // row 2: argmax 3, a hit
    const std::vector<std::int32_t> labels{std::numeric_limits<std::int32_t>::max(),
                                           std::numeric_limits<std::int32_t>::min(), 3};
    auto y = gpu::device_buffer<std::int32_t>::from_host(labels, s);
    auto correct = gpu::device_buffer<int>::from_host(std::vector<int>{0}, s);
    auto fp32 = gpu::device_buffer<float>::from_host(x, s);
    gpu::nn::count_correct(fp32.data(), element_type::fp32, y.data(), 3, classes, correct.data(),
                           s);
    CHECK(correct.to_host()[0] == 1);
    auto bf16 =
        gpu::device_buffer<__nv_bfloat16>::from_host(gpu::test::narrowed<__nv_bfloat16>(x), s);
    correct.fill_zero();
    gpu::nn::count_correct(bf16.data(), element_type::bf16, y.data(), 3, classes, correct.data(),
                           s);
    CHECK(correct.to_host()[0] == 1);
}
