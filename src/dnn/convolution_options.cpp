// convolution_options::from_profile: how a profile's switches become a convolution plan's
// options.
#include <gpu/dnn/convolution_planning.hpp>
#include <gpu/profile.hpp>

namespace gpu::dnn {

convolution_options convolution_options::from_profile(const profile& settings)
{
    convolution_options options;
    // As PyTorch: benchmark times the candidates, deterministic restricts them (both: the
    // deterministic ones are timed), and deterministic alone takes cuDNN's ranking of those.
    options.search = settings.benchmark       ? algorithm_search::exhaustive
                     : settings.deterministic ? algorithm_search::deterministic
                                              : algorithm_search::heuristic;
    options.allow_tf32 = settings.allow_tf32;
    options.deterministic = settings.deterministic;
    options.synchronous_checks = settings.synchronous_checks;
    options.check_numerics = settings.check_numerics;
    return options;
}

} // namespace gpu::dnn
