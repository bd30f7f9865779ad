// cudagap-demo's matrix sizes: which of them the CPU side times. Header-only, no CUDA call, so
// that tests/examples/test_demo.cpp checks it on any host.
#pragma once

#include <algorithm>
#include <vector>

namespace demo {

/// The naive loop's largest size. It runs at under 1 GFLOP/s (about 0.24 GFLOP/s at n = 4000),
/// so one 4000 x 4000 multiply takes about 9 minutes and the default sizes about 35: bench/gemm
/// times it at n = 500 only, and so does the demo.
inline constexpr int naive_size_cap = 500;

/// One size of the CPU vs GPU multiply.
struct size_plan {
    int n = 0;          ///< the matrices are n x n
    bool cpu = true;    ///< the CPU side is timed at this size
    bool added = false; ///< not asked for: the naive loop's size, added so that it shows
};

/// The sizes the demo multiplies, in the order asked for, and whether the CPU side times each:
/// every size on a CPU BLAS; on the naive loop (@p naive) only the sizes up to `naive_size_cap`,
/// with `naive_size_cap` itself first when no size asked for is that small.
inline std::vector<size_plan> plan_sizes(const std::vector<int>& sizes, bool naive)
{
    std::vector<size_plan> plan;
    const bool none_small =
        std::none_of(sizes.begin(), sizes.end(), [](int n) { return n <= naive_size_cap; });
    if (naive && none_small) {
        plan.push_back({naive_size_cap, true, true});
    }
    for (const int n : sizes) {
        plan.push_back({n, !naive || n <= naive_size_cap, false});
    }
    return plan;
}

} // namespace demo
