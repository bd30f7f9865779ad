// Pooling geometry checks, output shapes, and the pooling descriptor: set through cuDNN after
// cudagap's own checks, and read back from cuDNN.
#include "translate.hpp"

#include <gpu/detail/expects.hpp>
#include <gpu/dnn/pooling_descriptor.hpp>

#include <array>
#include <climits>
#include <stdexcept>
#include <string>

namespace gpu::dnn {

std::string_view to_string(pooling_mode mode) noexcept
{
    return gpu::detail::name_of(detail::names<pooling_mode>, mode);
}

namespace {

cudnnPoolingMode_t to_cudnn(pooling_mode mode) noexcept
{
    switch (mode) {
    case pooling_mode::max_deterministic: return CUDNN_POOLING_MAX_DETERMINISTIC;
    case pooling_mode::average_include_padding: return CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    case pooling_mode::average_exclude_padding: return CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
    case pooling_mode::max: break;
    }
    return CUDNN_POOLING_MAX;
}

pooling_mode from_cudnn(cudnnPoolingMode_t mode)
{
    switch (mode) {
    case CUDNN_POOLING_MAX: return pooling_mode::max;
    case CUDNN_POOLING_MAX_DETERMINISTIC: return pooling_mode::max_deterministic;
    case CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING: return pooling_mode::average_include_padding;
    case CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING: return pooling_mode::average_exclude_padding;
    }
    throw std::domain_error("gpu::dnn: the descriptor holds cudnnPoolingMode_t " +
                            std::to_string(static_cast<int>(mode)) +
                            ", which cudagap has no name for");
}

constexpr const char* geometry_context = "gpu::dnn::pooling_geometry";

} // namespace

std::string pooling_geometry::to_string() const
{
    std::string text = std::string(dnn::to_string(mode)) + ", window " + dnn::to_string(window) +
                       ", padding " + dnn::to_string(padding) + ", stride " +
                       dnn::to_string(stride);
    if (!propagate_nan) {
        text += ", NaN not propagated";
    }
    return text;
}

void validate(const pooling_geometry& geometry)
{
    const std::size_t rank = geometry.window.size();
    GPU_EXPECTS(geometry.padding.size() == rank && geometry.stride.size() == rank,
                std::invalid_argument, geometry_context, ": window ", to_string(geometry.window),
                ", padding ", to_string(geometry.padding), " and stride ",
                to_string(geometry.stride), " must have one entry per spatial dimension each");
    GPU_EXPECTS(rank == 2 || rank == 3, std::invalid_argument, geometry_context, ": window ",
                to_string(geometry.window), " has ", rank,
                " spatial dimensions; cuDNN pools 2 (images) or 3 (volumes)");
    detail::require_named(geometry_context, "pooling_mode", geometry.mode);
    for (std::size_t i = 0; i < rank; ++i) {
        const int window = geometry.window[i];
        const int padding = geometry.padding[i];
        GPU_EXPECTS(window > 0, std::invalid_argument, geometry_context, ": window ",
                    to_string(geometry.window), " has ", window, " in dimension ", i,
                    "; every extent must be positive");
        GPU_EXPECTS(geometry.stride[i] > 0, std::invalid_argument, geometry_context, ": stride ",
                    to_string(geometry.stride), " has ", geometry.stride[i], " in dimension ", i,
                    "; every stride must be positive");
        GPU_EXPECTS(padding >= 0, std::invalid_argument, geometry_context, ": padding ",
                    to_string(geometry.padding), " has ", padding, " in dimension ", i,
                    "; padding cannot be negative");
        GPU_EXPECTS(padding <= window / 2, std::invalid_argument, geometry_context, ": padding ",
                    padding, " in dimension ", i, " is more than half the window ", window,
                    " (PyTorch's rule: a window of padding alone has no maximum and no mean)");
    }
}

std::vector<int> pooling_output_dims(const std::vector<int>& input,
                                     const pooling_geometry& geometry)
{
    validate(geometry);
    const std::size_t spatial = geometry.window.size();
    GPU_EXPECTS(input.size() == spatial + 2, std::invalid_argument, "gpu::dnn::pooling: the input ",
                to_string(input), " has ", input.size(), " dimensions but the window ",
                to_string(geometry.window), " needs ", spatial + 2,
                " (N, C and one per spatial dimension)");
    detail::validate_dims("gpu::dnn::pooling input", input, 4, 5);
    std::vector<int> output{input[0], input[1]};
    for (std::size_t i = 0; i < spatial; ++i) {
        const long long padded = static_cast<long long>(input[i + 2]) + 2LL * geometry.padding[i];
        GPU_EXPECTS(padded <= INT_MAX, std::invalid_argument, "gpu::dnn::pooling: input ",
                    to_string(input), " padded by ", to_string(geometry.padding),
                    " exceeds INT_MAX in dimension ", i + 2, ", which cuDNN cannot index");
        GPU_EXPECTS(padded >= geometry.window[i], std::invalid_argument,
                    "gpu::dnn::pooling: the window ", geometry.window[i],
                    " is larger than the "
                    "padded input ",
                    padded, " (", input[i + 2], " + 2 * ", geometry.padding[i], ") in dimension ",
                    i + 2, " of ", to_string(input));
        output.push_back(static_cast<int>((padded - geometry.window[i]) / geometry.stride[i] + 1));
    }
    return output;
}

// ---- pooling_descriptor ---------------------------------------------------------------------

pooling_descriptor::pooling_descriptor(const pooling_geometry& geometry)
{
    validate(geometry);
    cudnnPoolingDescriptor_t raw = nullptr;
    GPU_CUDNN_CHECK(cudnnCreatePoolingDescriptor(&raw));
    reset(raw);
    detail::check_set(cudnnSetPoolingNdDescriptor(raw, to_cudnn(geometry.mode),
                                                  geometry.propagate_nan ? CUDNN_PROPAGATE_NAN
                                                                         : CUDNN_NOT_PROPAGATE_NAN,
                                                  geometry.spatial_rank(), geometry.window.data(),
                                                  geometry.padding.data(), geometry.stride.data()),
                      "cudnnSetPoolingNdDescriptor", "pooling " + geometry.to_string());
}

pooling_geometry pooling_descriptor::geometry() const
{
    if (get() == nullptr) {
        detail::throw_empty("gpu::dnn::pooling_descriptor");
    }
    // cuDNN pools at most 3 spatial dimensions; ask for the most it could hold.
    constexpr int most = CUDNN_DIM_MAX - 2;
    cudnnPoolingMode_t mode{};
    cudnnNanPropagation_t nan{};
    int rank = 0;
    std::array<int, most> window{};
    std::array<int, most> padding{};
    std::array<int, most> stride{};
    GPU_CUDNN_CHECK(cudnnGetPoolingNdDescriptor(get(), most, &mode, &nan, &rank, window.data(),
                                                padding.data(), stride.data()));
    const auto first = [rank](const std::array<int, most>& values) {
        return std::vector<int>(values.begin(), values.begin() + rank);
    };
    return {first(window), first(padding), first(stride), from_cudnn(mode),
            nan == CUDNN_PROPAGATE_NAN};
}

std::vector<int> pooling_descriptor::output_dims(const tensor_descriptor& input) const
{
    const std::vector<int> dims = input.dims(); // throws logic_error for an empty descriptor
    // The host's checks first: cuDNN answers a bad shape with BAD_PARAM and no values.
    (void)pooling_output_dims(dims, geometry());
    std::vector<int> output(dims.size());
    detail::check_set(cudnnGetPoolingNdForwardOutputDim(
                          get(), input.get(), static_cast<int>(dims.size()), output.data()),
                      "cudnnGetPoolingNdForwardOutputDim",
                      "pooling " + to_string() + " of the input " + input.to_string());
    return output;
}

std::string pooling_descriptor::to_string() const
{
    return geometry().to_string();
}

} // namespace gpu::dnn
