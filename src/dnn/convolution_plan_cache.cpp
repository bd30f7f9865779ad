// The process-wide cache of explanations, keyed by problem, options, device and pass, that
// lets a second plan of the same convolution skip the search.
#include "convolution_selection.hpp"

#include <functional>
#include <map>
#include <mutex>
#include <variant>

namespace gpu::dnn {

namespace {

using cached_explanation =
    std::variant<convolution_explanation, backward_data_explanation, backward_filter_explanation>;

struct plan_cache {
    std::mutex mutex;
    std::map<detail::plan_key, cached_explanation> plans;
    std::size_t hits = 0;
    std::size_t misses = 0;
};

plan_cache& cache()
{
    static plan_cache instance;
    return instance;
}

} // namespace

plan_cache_stats plan_cache_statistics() noexcept
{
    plan_cache& c = cache();
    const std::lock_guard lock(c.mutex);
    return {c.plans.size(), c.hits, c.misses};
}

void clear_plan_cache() noexcept
{
    plan_cache& c = cache();
    const std::lock_guard lock(c.mutex);
    c.plans.clear();
    c.hits = 0;
    c.misses = 0;
}

namespace detail {

plan_key make_plan_key(const convolution_problem& problem, const convolution_options& options,
                       int device, convolution_pass pass)
{
    return {device,
            pass,
            problem,
            options.search,
            options.deterministic_only(),
            problem.type == data_type::fp32 && options.allow_tf32,
            options.workspace_budget_bytes};
}

template <class Algorithm>
basic_convolution_explanation<Algorithm>
cached_or_searched(const convolution_problem& problem, const convolution_options& options,
                   int device,
                   const std::function<basic_convolution_explanation<Algorithm>()>& search)
{
    using explanation = basic_convolution_explanation<Algorithm>;
    const plan_key key = make_plan_key(problem, options, device, explanation::pass);
    plan_cache& c = cache();
    {
        const std::lock_guard lock(c.mutex);
        const auto found = c.plans.find(key);
        if (found != c.plans.end()) {
            ++c.hits;
            // The key holds the pass, so the entry holds that pass's explanation.
            explanation cached = std::get<explanation>(found->second);
            cached.from_cache = true;
            return cached;
        }
        ++c.misses;
    }
    explanation searched = search();
    const std::lock_guard lock(c.mutex);
    c.plans.insert_or_assign(key, cached_explanation(searched));
    return searched;
}

template convolution_explanation
cached_or_searched<convolution_algorithm>(const convolution_problem&, const convolution_options&,
                                          int, const std::function<convolution_explanation()>&);
template backward_data_explanation
cached_or_searched<backward_data_algorithm>(const convolution_problem&, const convolution_options&,
                                            int, const std::function<backward_data_explanation()>&);
template backward_filter_explanation
cached_or_searched<backward_filter_algorithm>(const convolution_problem&,
                                              const convolution_options&, int,
                                              const std::function<backward_filter_explanation()>&);

} // namespace detail

} // namespace gpu::dnn
