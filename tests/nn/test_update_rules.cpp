// src/nn/update_rules.hpp: the per-element rules that the AdamW and grad-scaler kernels run,
// checked on the host against references written here from PyTorch's documentation (the
// algorithm box of torch.optim.AdamW, and torch.amp.GradScaler's update rule), not from the
// rules' own code: a wrong formula fails here, in CI, without a GPU.
#include "update_rules.hpp"

#include "catch.hpp"

#include "test_support.hpp"
#include <element_cast.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace rules = gpu::nn::detail::rules;

namespace {

// torch.optim.AdamW as documented (amsgrad and maximize off), in double:
//   theta <- theta - lr * lambda * theta
//   m <- beta1 m + (1 - beta1) g;  v <- beta2 v + (1 - beta2) g^2
//   mhat <- m / (1 - beta1^t);  vhat <- v / (1 - beta2^t)
//   theta <- theta - lr * mhat / (sqrt(vhat) + eps)
struct reference_adamw {
    double lr, beta1, beta2, eps, weight_decay;
    std::vector<double> m, v;
    int t = 0;

    void step(std::vector<double>& theta, const std::vector<double>& g)
    {
        ++t;
        for (std::size_t i = 0; i < theta.size(); ++i) {
            theta[i] = theta[i] - lr * weight_decay * theta[i];
            m[i] = beta1 * m[i] + (1 - beta1) * g[i];
            v[i] = beta2 * v[i] + (1 - beta2) * g[i] * g[i];
            const double mhat = m[i] / (1 - std::pow(beta1, t));
            const double vhat = v[i] / (1 - std::pow(beta2, t));
            theta[i] = theta[i] - lr * mhat / (std::sqrt(vhat) + eps);
        }
    }
};

// The rules, driven as the two kernels of adamw.cu drive them: the one-thread start of the step,
// then the element update of every parameter with the step's factors in FP32.
struct rules_adamw {
    double lr, beta1, beta2, eps, weight_decay;
    std::vector<float> m, v;
    std::int64_t step_count = 0;
    double factors[2] = {0.0, 0.0};

    void step(std::vector<float>& params, const std::vector<float>& grads, const float* found_inf,
              float grad_scale = 1.0F)
    {
        if (rules::adamw_begin_step(step_count, found_inf)) {
            const rules::adamw_step_factors f = rules::adamw_factors(lr, beta1, beta2, step_count);
            factors[0] = f.step_size;
            factors[1] = f.bias_correction2_sqrt;
        }
        if (found_inf != nullptr && *found_inf != 0.0F) {
            return;
        }
        const rules::adamw_hyperparameters h =
            rules::adamw_hyper(lr, beta1, beta2, eps, weight_decay);
        for (std::size_t i = 0; i < params.size(); ++i) {
            rules::adamw_element(params[i], grads[i], m[i], v[i], h, static_cast<float>(factors[0]),
                                 static_cast<float>(factors[1]), grad_scale);
        }
    }
};

// Gradients of mixed magnitudes (1e-4 to 1): the bias correction and eps both matter.
std::vector<float> gradients(std::size_t n, std::uint32_t seed)
{
    std::vector<float> g = gpu::test::random_floats(n, seed);
    for (std::size_t i = 0; i < n; ++i) {
        g[i] *= (i % 3 == 0) ? 1e-4F : (i % 3 == 1 ? 1e-2F : 1.0F);
    }
    return g;
}

} // namespace

TEST_CASE("the AdamW rule follows PyTorch's documented algorithm over several steps", "[nn][adamw]")
{
    constexpr std::size_t n = 257;
    const double lr = 1e-2;
    const double wd = 0.1; // large enough that coupled (Adam's L2) decay would differ visibly
    std::vector<float> params = gpu::test::random_floats(n, 1);
    std::vector<double> theta = gpu::test::widened(params);
    reference_adamw ref{lr, 0.9, 0.999, 1e-8, wd, std::vector<double>(n), std::vector<double>(n)};
    rules_adamw fast{lr, 0.9, 0.999, 1e-8, wd, std::vector<float>(n), std::vector<float>(n)};
    for (std::uint32_t step = 0; step < 8; ++step) {
        const std::vector<float> g = gradients(n, 100 + step);
        fast.step(params, g, nullptr);
        ref.step(theta, gpu::test::widened(g));
    }
    CHECK(fast.step_count == 8);
    CHECK(gpu::test::relative_error<float>(params, theta) < 1e-5);
    CHECK(gpu::test::relative_error<float>(fast.m, ref.m) < 1e-5);
    CHECK(gpu::test::relative_error<float>(fast.v, ref.v) < 1e-5);
}

TEST_CASE("AdamW's first step is decoupled decay then lr times the gradient's sign", "[nn][adamw]")
{
    // With zero moments, t = 1: mhat = g and vhat = g^2, so the step is lr * g / (|g| + eps).
    const double lr = 0.05;
    const double wd = 0.2;
    rules_adamw fast{lr, 0.9, 0.999, 1e-8, wd, {0.0F, 0.0F}, {0.0F, 0.0F}};
    std::vector<float> params{2.0F, -3.0F};
    fast.step(params, {0.5F, -4.0F}, nullptr);
    CHECK(params[0] == Approx(2.0 * (1 - lr * wd) - lr * 0.5 / (0.5 + 1e-8)).epsilon(1e-6));
    CHECK(params[1] == Approx(-3.0 * (1 - lr * wd) + lr * 4.0 / (4.0 + 1e-8)).epsilon(1e-6));
    CHECK(fast.m[0] == Approx(0.1 * 0.5).epsilon(1e-6));
    CHECK(fast.v[1] == Approx(0.001 * 16.0).epsilon(1e-6));
}

TEST_CASE("without weight decay or with lr 0 the rule is plain Adam or no change", "[nn][adamw]")
{
    constexpr std::size_t n = 64;
    std::vector<float> params = gpu::test::random_floats(n, 7);
    std::vector<double> theta = gpu::test::widened(params);
    reference_adamw ref{1e-3, 0.8, 0.99, 1e-6, 0.0, std::vector<double>(n), std::vector<double>(n)};
    rules_adamw fast{1e-3, 0.8, 0.99, 1e-6, 0.0, std::vector<float>(n), std::vector<float>(n)};
    for (std::uint32_t step = 0; step < 5; ++step) {
        const std::vector<float> g = gradients(n, 300 + step);
        fast.step(params, g, nullptr);
        ref.step(theta, gpu::test::widened(g));
    }
    CHECK(gpu::test::relative_error<float>(params, theta) < 1e-5);

    const std::vector<float> before = params;
    rules_adamw frozen{0.0, 0.9, 0.999, 1e-8, 0.01, std::vector<float>(n), std::vector<float>(n)};
    frozen.step(params, gradients(n, 9), nullptr);
    CHECK(params == before);
    CHECK(frozen.step_count == 1); // the step still counts, as in PyTorch
}

TEST_CASE("a step with found_inf set changes nothing and does not count", "[nn][adamw]")
{
    constexpr std::size_t n = 32;
    std::vector<float> params = gpu::test::random_floats(n, 11);
    rules_adamw fast{1e-2, 0.9, 0.999, 1e-8, 0.01, std::vector<float>(n), std::vector<float>(n)};
    fast.step(params, gradients(n, 12), nullptr);
    const std::vector<float> p1 = params;
    const std::vector<float> m1 = fast.m;
    const std::vector<float> v1 = fast.v;

    const float inf_found = 1.0F;
    std::vector<float> bad = gradients(n, 13);
    bad[5] = std::numeric_limits<float>::infinity();
    fast.step(params, bad, &inf_found);
    CHECK(params == p1);
    CHECK(fast.m == m1);
    CHECK(fast.v == v1);
    CHECK(fast.step_count == 1);

    // The next good step is step 2 (its bias correction), like a reference that never saw the
    // skipped one.
    std::vector<double> theta = gpu::test::widened(gpu::test::random_floats(n, 11));
    reference_adamw ref{
        1e-2, 0.9, 0.999, 1e-8, 0.01, std::vector<double>(n), std::vector<double>(n)};
    ref.step(theta, gpu::test::widened(gradients(n, 12)));
    const float clean = 0.0F;
    fast.step(params, gradients(n, 14), &clean);
    ref.step(theta, gpu::test::widened(gradients(n, 14)));
    CHECK(fast.step_count == 2);
    CHECK(gpu::test::relative_error<float>(params, theta) < 1e-5);
}

TEST_CASE("the start of a step advances the count unless found_inf is set", "[nn][adamw]")
{
    std::int64_t step = 4;
    CHECK(rules::adamw_begin_step(step, nullptr));
    CHECK(step == 5);
    const float zero = 0.0F;
    CHECK(rules::adamw_begin_step(step, &zero));
    CHECK(step == 6);
    const float one = 1.0F;
    CHECK_FALSE(rules::adamw_begin_step(step, &one));
    CHECK(step == 6);
}

TEST_CASE("bias-correction factors are lr / (1 - beta1^t) and sqrt(1 - beta2^t)", "[nn][adamw]")
{
    const rules::adamw_step_factors first = rules::adamw_factors(1e-3, 0.9, 0.999, 1);
    CHECK(first.step_size == Approx(1e-3 / 0.1).epsilon(1e-12));
    CHECK(first.bias_correction2_sqrt == Approx(std::sqrt(0.001)).epsilon(1e-12));
    const rules::adamw_step_factors tenth = rules::adamw_factors(1e-3, 0.9, 0.999, 10);
    CHECK(tenth.step_size == Approx(1e-3 / (1 - std::pow(0.9, 10))).epsilon(1e-12));
    CHECK(tenth.bias_correction2_sqrt == Approx(std::sqrt(1 - std::pow(0.999, 10))).epsilon(1e-12));
}

TEST_CASE("a gradient scale divides the gradient inside the AdamW rule", "[nn][adamw]")
{
    // Scaled by a power of two, then divided by it: exactly the unscaled update.
    constexpr std::size_t n = 48;
    const std::vector<float> start = gpu::test::random_floats(n, 21);
    std::vector<float> plain = start;
    std::vector<float> scaled = start;
    rules_adamw a{1e-2, 0.9, 0.999, 1e-8, 0.01, std::vector<float>(n), std::vector<float>(n)};
    rules_adamw b{1e-2, 0.9, 0.999, 1e-8, 0.01, std::vector<float>(n), std::vector<float>(n)};
    for (std::uint32_t step = 0; step < 3; ++step) {
        const std::vector<float> g = gradients(n, 400 + step);
        std::vector<float> big(g);
        for (float& x : big) {
            x *= 65536.0F;
        }
        a.step(plain, g, nullptr);
        b.step(scaled, big, nullptr, 65536.0F);
    }
    CHECK(plain == scaled);
    CHECK(a.v == b.v);
}

namespace {

// torch.amp.GradScaler.update as documented: "If any gradients were Inf/NaN, the scale is
// multiplied by backoff_factor; if growth_interval unskipped iterations occurred consecutively,
// it is multiplied by growth_factor" (and it never grows to Inf). Written as a step counter.
struct reference_scaler {
    double scale;
    double growth, backoff;
    int interval;
    int good_in_a_row = 0;

    void update(bool found_inf)
    {
        if (found_inf) {
            scale *= backoff;
            good_in_a_row = 0;
            return;
        }
        if (++good_in_a_row < interval) {
            return;
        }
        good_in_a_row = 0;
        if (scale * growth <= std::numeric_limits<float>::max()) {
            scale *= growth;
        }
    }
};

} // namespace

TEST_CASE("the scaler grows after growth_interval good steps and backs off on Inf/NaN",
          "[nn][grad_scaler]")
{
    float scale = 1024.0F;
    std::int32_t tracker = 0;
    const auto update = [&](bool found) {
        rules::update_scale(scale, tracker, found ? 1.0F : 0.0F, 2.0F, 0.5F, 3);
    };
    update(false);
    update(false);
    CHECK(scale == 1024.0F);
    CHECK(tracker == 2);
    update(false); // the third good step in a row: growth, and the count restarts
    CHECK(scale == 2048.0F);
    CHECK(tracker == 0);
    update(false);
    update(true); // Inf/NaN: backoff, and the count restarts
    CHECK(scale == 1024.0F);
    CHECK(tracker == 0);
    update(false);
    update(false);
    update(false);
    CHECK(scale == 2048.0F);
}

TEST_CASE("the scaler never grows to Inf", "[nn][grad_scaler]")
{
    float scale = std::ldexp(1.0F, 127); // the largest power of two in FP32
    std::int32_t tracker = 0;
    rules::update_scale(scale, tracker, 0.0F, 2.0F, 0.5F, 1);
    CHECK(scale == std::ldexp(1.0F, 127));
    CHECK(tracker == 0);
}

TEST_CASE("the scaler rule matches the documented rule over a random run", "[nn][grad_scaler]")
{
    std::mt19937 engine(5);
    std::bernoulli_distribution inf_now(0.15);
    float scale = 65536.0F;
    std::int32_t tracker = 0;
    reference_scaler ref{65536.0, 2.0, 0.5, 4};
    for (int step = 0; step < 2000; ++step) {
        const bool found = inf_now(engine);
        rules::update_scale(scale, tracker, found ? 1.0F : 0.0F, 2.0F, 0.5F, 4);
        ref.update(found);
        REQUIRE(static_cast<double>(scale) == ref.scale);
        REQUIRE(tracker == ref.good_in_a_row);
    }
}

TEST_CASE("unscaling multiplies by the inverse scale and flags Inf and NaN", "[nn][grad_scaler]")
{
    CHECK(rules::inverse_scale(65536.0F) == 1.0F / 65536.0F);
    CHECK(rules::inverse_scale(3.0F) == static_cast<float>(1.0 / 3.0));

    float g = 3.0F;
    CHECK_FALSE(rules::unscale_element(g, 0.25F));
    CHECK(g == 0.75F);
    float inf = -std::numeric_limits<float>::infinity();
    CHECK(rules::unscale_element(inf, 0.25F));
    float nan = std::numeric_limits<float>::quiet_NaN();
    CHECK(rules::unscale_element(nan, 1.0F));
    float big = std::numeric_limits<float>::max();
    CHECK_FALSE(rules::unscale_element(big, 1.0F)); // finite, left as it is
    CHECK(big == std::numeric_limits<float>::max());

    CHECK(rules::is_finite(0.0F));
    CHECK(rules::is_finite(std::numeric_limits<float>::denorm_min()));
    CHECK_FALSE(rules::is_finite(std::numeric_limits<float>::infinity()));
    CHECK_FALSE(rules::is_finite(std::numeric_limits<float>::signaling_NaN()));
}

namespace {

// One row of count_correct's kernel, driven as cross_entropy.cu drives the rules: 32 lanes take
// the columns j = lane, lane + 32, ..., then a butterfly of shuffles (each lane combines with
// lane ^ offset, offsets 16 to 1) leaves every lane with the row's argmax; lane 0 decides.
bool kernel_counts(const std::vector<float>& row, std::int32_t label)
{
    constexpr int lanes = 32;
    std::vector<float> best(lanes, -std::numeric_limits<float>::infinity());
    std::vector<std::int32_t> index(lanes, rules::argmax_none);
    const auto classes = static_cast<std::int32_t>(row.size());
    for (int lane = 0; lane < lanes; ++lane) {
        for (std::int32_t j = lane; j < classes; j += lanes) {
            rules::argmax_keep_best(best[lane], index[lane], row[j], j);
        }
    }
    for (int offset = 16; offset > 0; offset >>= 1) {
        const std::vector<float> other_best = best;
        const std::vector<std::int32_t> other_index = index;
        for (int lane = 0; lane < lanes; ++lane) {
            rules::argmax_keep_best(best[lane], index[lane], other_best[lane ^ offset],
                                    other_index[lane ^ offset]);
        }
    }
    return rules::argmax_hits_label(index[0], label, classes);
}

// The reference, in double: the first index of the largest value that is not NaN (no index
// when every value is NaN), and a hit only for a label in [0, classes) that is that index.
bool reference_counts(const std::vector<float>& row, std::int64_t label)
{
    std::int64_t argmax = -1;
    double best = 0.0;
    for (std::size_t j = 0; j < row.size(); ++j) {
        const double value = row[j];
        if (!std::isnan(value) && (argmax < 0 || value > best)) {
            argmax = static_cast<std::int64_t>(j);
            best = value;
        }
    }
    return label >= 0 && label < static_cast<std::int64_t>(row.size()) && argmax == label;
}

} // namespace

TEST_CASE("count_correct's rule: a row of NaN is wrong whatever its label, INT32_MAX included",
          "[nn][cross_entropy]")
{
    const float nan = std::numeric_limits<float>::quiet_NaN();
    constexpr std::int32_t int32_max = std::numeric_limits<std::int32_t>::max();
    for (const std::size_t classes : {1U, 10U, 33U}) {
        INFO("classes " << classes);
        const std::vector<float> all_nan(classes, nan);
        for (const std::int32_t label : {0, static_cast<std::int32_t>(classes) - 1, -1, int32_max,
                                         std::numeric_limits<std::int32_t>::min()}) {
            INFO("label " << label);
            CHECK_FALSE(kernel_counts(all_nan, label));
            CHECK_FALSE(reference_counts(all_nan, label));
        }
    }
    // The sentinel itself is no index: no row, however its argmax falls, hits INT32_MAX.
    CHECK_FALSE(rules::argmax_hits_label(rules::argmax_none, int32_max, int32_max));
    CHECK(rules::argmax_hits_label(5, 5, 6));
    CHECK_FALSE(rules::argmax_hits_label(6, 6, 6));
    CHECK_FALSE(rules::label_in_range(-1, 6));
    CHECK(rules::label_in_range(0, 1));
}

TEST_CASE("count_correct's rule agrees with a float64 argmax on random rows with NaN and ties",
          "[nn][cross_entropy]")
{
    std::mt19937 engine(2024);
    std::uniform_int_distribution<int> level(-3, 3); // few distinct values: many ties
    std::uniform_int_distribution<int> percent(0, 99);
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const float inf = std::numeric_limits<float>::infinity();
    int hits = 0;
    for (const std::size_t classes : {1U, 2U, 31U, 32U, 33U, 70U}) {
        for (int trial = 0; trial < 300; ++trial) {
            std::vector<float> row(classes);
            const int nan_share = trial % 4 == 3 ? 100 : 20 * (trial % 4); // 0, 20, 40, 100 %
            for (float& value : row) {
                const int p = percent(engine);
                value = p < nan_share ? nan : p == 99 ? -inf : static_cast<float>(level(engine));
            }
            const auto c = static_cast<std::int32_t>(classes);
            const std::int32_t candidates[] = {static_cast<std::int32_t>(trial % classes), -1, c,
                                               std::numeric_limits<std::int32_t>::max()};
            for (const std::int32_t label : candidates) {
                INFO("classes " << classes << ", trial " << trial << ", label " << label);
                const bool expected = reference_counts(row, label);
                REQUIRE(kernel_counts(row, label) == expected);
                hits += expected ? 1 : 0;
            }
        }
    }
    CHECK(hits > 100); // the comparison saw hits as well as misses
}
