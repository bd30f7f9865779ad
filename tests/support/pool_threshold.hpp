// Sets a memory pool's release threshold for one test and restores it after, so that tests of
// the pool's cache say which setting they need instead of relying on one made elsewhere.
// Header-only, test code only.
#pragma once

#include <gpu/memory.hpp>

#include <cstddef>

namespace gpu::test {

/// While it lives, @p pool keeps up to @p bytes of unused memory at synchronisations.
class scoped_release_threshold {
public:
    scoped_release_threshold(gpu::memory_pool pool, std::size_t bytes)
        : pool_(pool), previous_(pool.release_threshold())
    {
        pool_.set_release_threshold(bytes);
    }

    scoped_release_threshold(const scoped_release_threshold&) = delete;
    scoped_release_threshold& operator=(const scoped_release_threshold&) = delete;

    ~scoped_release_threshold()
    {
        try {
            pool_.set_release_threshold(previous_);
        } catch (...) { // NOLINT(bugprone-empty-catch): a destructor must not throw
        }
    }

private:
    gpu::memory_pool pool_;
    std::size_t previous_;
};

} // namespace gpu::test
